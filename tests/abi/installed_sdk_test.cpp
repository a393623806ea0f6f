// The installed SDK package, as a third party gets it from `cmake --install`: it holds the
// pkg-config file and the ABI docs; a C plugin compiles clean under strict warnings with
// find_package and with pkg-config; a C++ plugin gets C++20 from the SDK's target, and a C++17
// build of the glue stops at one message; and a copy of the build tree installs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kCxx20Message =
    "oe/cpp/*.hpp needs C++20; set CMAKE_CXX_STANDARD 20 (or link OpenExpertise::sdk_cpp) or "
    "pass -std=c++20";

// The strict set a careful C author builds with; the installed headers must pass it.
const std::vector<std::string> kStrictCFlags = {
    "-std=c11",  "-Wall",  "-Wextra", "-Wmissing-prototypes", "-Wstrict-prototypes",
    "-pedantic", "-Werror"};

fs::path fixtureSource(std::string_view name) {
  return fs::path(OE_SOURCE_DIR) / "tests" / "abi" / "fixtures" / name;
}

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> linesWith(const std::string& text, std::string_view needle) {
  std::vector<std::string> out;
  for (std::string& line : lines(text)) {
    if (line.find(needle) != std::string::npos) {
      out.push_back(std::move(line));
    }
  }
  return out;
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    out.push_back(word);
  }
  return out;
}

// A copy of a build tree. Tests running meanwhile may add or remove files in it (run logs), so
// an entry that vanishes during the copy is skipped rather than failing the copy.
void copyTree(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  std::error_code walk;
  for (fs::recursive_directory_iterator it(from, walk), end; !walk && it != end;
       it.increment(walk)) {
    const fs::path target = to / it->path().lexically_relative(from);
    std::error_code ec;
    if (it->is_symlink(ec)) {
      fs::copy_symlink(it->path(), target, ec);
    } else if (it->is_directory(ec)) {
      fs::create_directories(target, ec);
    } else if (it->is_regular_file(ec)) {
      fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
      ASSERT_TRUE(!ec || ec == std::errc::no_such_file_or_directory)
          << it->path() << ": " << ec.message();
    }
  }
  ASSERT_FALSE(walk) << from << ": " << walk.message();
}

class InstalledSdk : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.env["HOME"] = tmp_.path().string();  // no user package registry, no user plugins
    options_.env["CMAKE_PREFIX_PATH"] = std::nullopt;
    options_.env["OE_PLUGIN_PATH"] = std::nullopt;
    options_.env["XDG_CONFIG_HOME"] = std::nullopt;
    options_.env["OE_TRUST_FILE"] = (tmp_.path() / "trust.json").string();
    options_.env["PKG_CONFIG_PATH"] = std::nullopt;
    options_.env["PKG_CONFIG_LIBDIR"] = std::nullopt;
    options_.timeout = std::chrono::seconds(120);
  }

  // `cmake --install <tree> --prefix <prefix>`; wrap in ASSERT_NO_FATAL_FAILURE.
  void install(const fs::path& tree, const fs::path& prefix) {
    const ProcessResult result = runProcess(
        {OE_CMAKE_COMMAND, "--install", tree.string(), "--prefix", prefix.string()}, options_);
    ASSERT_EQ(result.exit_code, 0) << "cmake --install of " << tree << " failed\n"
                                   << result.describe();
  }

  // Configures (with the C compiler, and the C++ one when `cxx`) and builds the CMake project in
  // `source` against `prefix`, verbosely so the compile lines can be checked.
  ProcessResult buildProject(const fs::path& source, const fs::path& build, const fs::path& prefix,
                             bool cxx) {
    std::vector<std::string> args = {OE_CMAKE_COMMAND,
                                     "-S",
                                     source.string(),
                                     "-B",
                                     build.string(),
                                     "-G",
                                     OE_CMAKE_GENERATOR,
                                     "-DCMAKE_BUILD_TYPE=Release",
                                     "-DCMAKE_C_COMPILER=" OE_C_COMPILER,
                                     "-DCMAKE_PREFIX_PATH=" + prefix.string(),
                                     "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"};
    if (cxx) {
      args.emplace_back("-DCMAKE_CXX_COMPILER=" OE_CXX_COMPILER);
    }
    const ProcessResult configure = runProcess(args, options_);
    if (configure.exit_code != 0) {
      return configure;
    }
    return runProcess({OE_CMAKE_COMMAND, "--build", build.string(), "--verbose"}, options_);
  }

  // The compiler's diagnostics for a C++17 build of `source` against the installed headers.
  ProcessResult compileAsCxx17(const fs::path& source, const fs::path& prefix) {
    return runProcess({OE_CXX_COMPILER, "-std=c++17", "-fsyntax-only", "-I",
                       (prefix / "include").string(), source.string()},
                      options_);
  }

  // The C++17 build stops at the SDK's one message: no follow-up errors from the glue or from
  // the plugin's own code, only the line that says compilation stopped there.
  static void expectOneCxx20Error(const ProcessResult& compile) {
    EXPECT_NE(compile.exit_code, 0) << compile.describe();
    const std::string& err = compile.err;
    EXPECT_EQ(linesWith(err, kCxx20Message).size(), 1u) << err;
    const std::vector<std::string> errors = linesWith(err, "error:");
    ASSERT_EQ(errors.size(), 2u) << err;
    EXPECT_NE(errors[0].find(kCxx20Message), std::string::npos) << err;
    EXPECT_NE(errors[1].find("compilation stopped here: C++20 is required"), std::string::npos)
        << err;
    EXPECT_LE(lines(err).size(), 12u) << err;
  }

  TempDir tmp_;
  ProcessOptions options_;
};

TEST_F(InstalledSdk, HoldsThePkgConfigFileTheDocsAndBothCMakeTargets) {
  const fs::path prefix = tmp_.path() / "prefix";
  ASSERT_NO_FATAL_FAILURE(install(OE_BINARY_DIR, prefix));
  const fs::path pc = prefix / OE_INSTALL_LIBDIR / "pkgconfig" / "openexpertise-sdk.pc";
  ASSERT_TRUE(fs::exists(pc)) << pc;
  const std::string version = "Version: " + std::to_string(OE_ABI_VERSION_MAJOR) + "." +
                              std::to_string(OE_ABI_VERSION_MINOR) + "\n";
  EXPECT_NE(readText(pc).find(version), std::string::npos) << readText(pc);

  for (const char* doc : {"abi.md", "writing-a-plugin.md"}) {
    const fs::path installed = prefix / OE_INSTALL_DOCDIR / doc;
    ASSERT_TRUE(fs::exists(installed)) << installed;
    EXPECT_EQ(readText(installed), readText(fs::path(OE_SOURCE_DIR) / "docs" / doc)) << doc;
  }
  // The payload schemas, next to the headers, and where the .pc file says they are.
  EXPECT_NE(readText(pc).find("schemadir=${prefix}/" OE_INSTALL_DATADIR "/oe/schema\n"),
            std::string::npos)
      << readText(pc);
  size_t schemas = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(OE_SOURCE_DIR) / "sdk" / "schema")) {
    const fs::path installed =
        prefix / OE_INSTALL_DATADIR / "oe" / "schema" / entry.path().filename();
    ASSERT_TRUE(fs::exists(installed)) << installed;
    EXPECT_EQ(readText(installed), readText(entry.path())) << entry.path();
    ++schemas;
  }
  EXPECT_GE(schemas, 10u);
  EXPECT_NE(readText(prefix / OE_INSTALL_LIBDIR / "cmake" / "OpenExpertiseSDK" /
                     "OpenExpertiseSDKConfig.cmake")
                .find("OE_SDK_SCHEMA_DIR"),
            std::string::npos);

  const std::string targets = readText(prefix / OE_INSTALL_LIBDIR / "cmake" / "OpenExpertiseSDK" /
                                       "OpenExpertiseSDKTargets.cmake");
  EXPECT_NE(targets.find("add_library(OpenExpertise::sdk INTERFACE IMPORTED)"), std::string::npos);
  EXPECT_NE(targets.find("add_library(OpenExpertise::sdk_cpp INTERFACE IMPORTED)"),
            std::string::npos);
  EXPECT_NE(targets.find("INTERFACE_COMPILE_FEATURES \"cxx_std_20\""), std::string::npos);
  for (const char* header : {"oe.h", "cpp/plugin.hpp", "cpp/host_buffer.hpp", "cpp/llm.hpp",
                             "cpp/prompt.hpp", "cpp/http.hpp", "cpp/requires_cxx20.hpp"}) {
    EXPECT_TRUE(fs::exists(prefix / "include" / "oe" / header)) << header;
  }
}

TEST_F(InstalledSdk, StrictCPluginBuildsInACOnlyProjectWithFindPackage) {
  const fs::path prefix = tmp_.path() / "prefix";
  ASSERT_NO_FATAL_FAILURE(install(OE_BINARY_DIR, prefix));
  const fs::path build = tmp_.path() / "build";
  const ProcessResult built = buildProject(fixtureSource("strict_c"), build, prefix, false);
  ASSERT_EQ(built.exit_code, 0) << built.describe();
  // The project enables C only: importing the package (sdk_cpp included) must not need C++.
  const std::string cache = readText(build / "CMakeCache.txt");
  EXPECT_EQ(cache.find("CMAKE_CXX_COMPILER:"), std::string::npos) << "C++ was enabled";
  EXPECT_NE(built.out.find("-Wmissing-prototypes"), std::string::npos) << built.describe();
  EXPECT_NE(built.out.find("-std=c11"), std::string::npos) << built.describe();
  EXPECT_EQ(exportedSymbols(build / "strict_c.so"), std::vector<std::string>{"oe_plugin_entry_v1"});
}

TEST_F(InstalledSdk, StrictCPluginBuildsWithPkgConfigAndRuns) {
#ifndef OE_PKG_CONFIG
  GTEST_SKIP() << "pkg-config was not found when oe was configured (.ci/deps installs it)";
#else
  const fs::path prefix = tmp_.path() / "prefix";
  ASSERT_NO_FATAL_FAILURE(install(OE_BINARY_DIR, prefix));
  ProcessOptions pc_options = options_;
  pc_options.env["PKG_CONFIG_PATH"] = (prefix / OE_INSTALL_LIBDIR / "pkgconfig").string();
  auto pkgConfig = [&](const std::string& query) {
    const ProcessResult result =
        runProcess({OE_PKG_CONFIG, query, "openexpertise-sdk"}, pc_options);
    EXPECT_EQ(result.exit_code, 0) << result.describe();
    return result.out;
  };
  EXPECT_EQ(pkgConfig("--modversion"), std::to_string(OE_ABI_VERSION_MAJOR) + "." +
                                           std::to_string(OE_ABI_VERSION_MINOR) + "\n");
  const std::vector<std::string> cflags = words(pkgConfig("--cflags"));
  ASSERT_EQ(cflags.size(), 1u);
  ASSERT_EQ(cflags[0].rfind("-I", 0), 0u) << cflags[0];
  EXPECT_TRUE(fs::equivalent(cflags[0].substr(2), prefix / "include")) << cflags[0];
  const std::vector<std::string> version_script = words(pkgConfig("--variable=version_script"));
  ASSERT_EQ(version_script.size(), 1u);
  ASSERT_TRUE(fs::exists(version_script[0])) << version_script[0];
  const std::vector<std::string> plugindir = words(pkgConfig("--variable=plugindir"));
  ASSERT_EQ(plugindir.size(), 1u);
  EXPECT_TRUE(fs::equivalent(plugindir[0], prefix / OE_INSTALL_LIBDIR / "oe" / "plugins"));
  // What writes a manifest for a plugin built without CMake (docs/trust.md).
  const std::vector<std::string> manifest_tool = words(pkgConfig("--variable=manifest_tool"));
  ASSERT_EQ(manifest_tool.size(), 1u);
  EXPECT_TRUE(fs::equivalent(manifest_tool[0], prefix / "bin" / "oe-plugin-manifest"));

  const fs::path library = tmp_.path() / "strict_c.so";
  std::vector<std::string> compile = {OE_C_COMPILER};
  compile.insert(compile.end(), kStrictCFlags.begin(), kStrictCFlags.end());
  compile.insert(compile.end(), cflags.begin(), cflags.end());
  compile.insert(compile.end(),
                 {"-fPIC", "-shared", "-fvisibility=hidden",
                  (fixtureSource("strict_c") / "strict_c.c").string(), "-o", library.string(),
                  "-Wl,--version-script=" + version_script[0], "-Wl,-z,defs"});
  const ProcessResult built = runProcess(compile, options_);
  ASSERT_EQ(built.exit_code, 0) << built.describe();
  EXPECT_EQ(built.err, "") << "a warning under the strict flags";
  EXPECT_EQ(exportedSymbols(library), std::vector<std::string>{"oe_plugin_entry_v1"});

  DirectPlugin plugin(library);
  ASSERT_TRUE(plugin.loaded()) << plugin.error();
  ASSERT_NE(plugin.entry(), nullptr);
  oe_writer err;
  ASSERT_EQ(plugin.init(err), OE_OK) << err.data;
  const oe_node_kind* kind = plugin.kind(0);
  ASSERT_NE(kind, nullptr);
  EXPECT_STREQ(kind->kind, "strict-c");
  const CallResult call = runNode(plugin, *kind, "{}", "{}");
  EXPECT_EQ(call.status, OE_OK) << call.error;
  EXPECT_EQ(call.response, R"({"state_delta":{}})");
#endif
}

TEST_F(InstalledSdk, CppPluginAskingForCxx17GetsCxx20FromTheSdkTargetAndRuns) {
  const fs::path prefix = tmp_.path() / "prefix";
  ASSERT_NO_FATAL_FAILURE(install(OE_BINARY_DIR, prefix));
  const fs::path build = tmp_.path() / "build";
  const fs::path source = fixtureSource("cpp_plugin");
  const ProcessResult built = buildProject(source, build, prefix, true);
  ASSERT_EQ(built.exit_code, 0) << built.describe();
  EXPECT_NE(built.out.find("-std=c++20"), std::string::npos) << built.describe();
  const fs::path library = build / "cpp_greet.so";
  EXPECT_EQ(exportedSymbols(library), std::vector<std::string>{"oe_plugin_entry_v1"});

  // Run with the installed oe, from a copy so no .openexpertise/ lands in the source tree.
  const fs::path experience = tmp_.path() / "experience";
  fs::copy(source / "experience", experience, fs::copy_options::recursive);
  ProcessOptions run_options = options_;
  run_options.env["OE_PLUGIN_PATH"] = build.string();
  const fs::path oe = prefix / "bin" / "oe";
  const ProcessResult plugins = runProcess({oe.string(), "plugins"}, run_options);
  EXPECT_EQ(plugins.exit_code, 0) << plugins.describe();
  EXPECT_NE(plugins.out.find("dev.oe.fixture.cpp-greet  0.0.1  abi "), std::string::npos)
      << plugins.describe();
  ASSERT_EQ(runProcess({oe.string(), "trust", library.string()}, run_options).exit_code, 0);
  const ProcessResult run = runProcess({oe.string(), "run", experience.string()}, run_options);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE((run.out + run.err).find("Hello, installed SDK!"), std::string::npos) << run.describe();

  // The same in a helper process (docs/trust.md, "Process isolation").
  const fs::path isolated = tmp_.path() / "isolated";
  fs::copy(source / "experience", isolated, fs::copy_options::recursive);
  ProcessOptions isolated_options = run_options;
  isolated_options.env["OE_PLUGIN_ISOLATION"] = "process";
  const ProcessResult in_helper =
      runProcess({oe.string(), "run", isolated.string()}, isolated_options);
  EXPECT_EQ(in_helper.exit_code, 0) << in_helper.describe();
  EXPECT_NE((in_helper.out + in_helper.err).find("Hello, installed SDK!"), std::string::npos)
      << in_helper.describe();
}

TEST_F(InstalledSdk, Cxx17BuildOfTheGlueStopsAtOneMessage) {
  const fs::path prefix = tmp_.path() / "prefix";
  ASSERT_NO_FATAL_FAILURE(install(OE_BINARY_DIR, prefix));
  // Every C++ header of the package, as a consumer that includes them all.
  std::string consumer = "// a C++17 consumer of the SDK's C++ glue\n";
  for (const auto& entry : fs::directory_iterator(prefix / "include" / "oe" / "cpp")) {
    consumer += "#include <oe/cpp/" + entry.path().filename().string() + ">\n";
  }
  const fs::path headers_only = tmp_.path() / "consumer.cpp";
  writeFile(headers_only, consumer);
  expectOneCxx20Error(compileAsCxx17(headers_only, prefix));

  // A whole plugin: its own code after the #include adds no errors either.
  expectOneCxx20Error(compileAsCxx17(fixtureSource("cpp_plugin") / "greet.cpp", prefix));

  // The same plugin as C++20 compiles, so the failure above is the standard and nothing else.
  const ProcessResult as_cxx20 = runProcess(
      {OE_CXX_COMPILER, "-std=c++20", "-fsyntax-only", "-I", (prefix / "include").string(),
       (fixtureSource("cpp_plugin") / "greet.cpp").string()},
      options_);
  EXPECT_EQ(as_cxx20.exit_code, 0) << as_cxx20.describe();
}

TEST_F(InstalledSdk, ACopiedBuildTreeInstallsFromItselfEvenWithTheOriginalGone) {
  // Two generations: a copy of the build tree, then a copy of that copy with the first removed,
  // so the tree its install scripts were last pointed at no longer exists.
  const fs::path first = tmp_.path() / "first";
  const fs::path second = tmp_.path() / "second";
  ASSERT_NO_FATAL_FAILURE(copyTree(OE_BINARY_DIR, first));
  // A marker in the copy's staged doc proves the install reads the copy, not the original.
  const fs::path staged_doc = fs::path("sdk") / "stage" / "doc" / "abi.md";
  ASSERT_TRUE(fs::exists(first / staged_doc));
  {
    std::ofstream out(first / staged_doc, std::ios::app);
    out << "\n<!-- installed from the copy -->\n";
  }
  const fs::path from_first = tmp_.path() / "prefix-first";
  ASSERT_NO_FATAL_FAILURE(install(first, from_first));
  EXPECT_NE(readText(from_first / OE_INSTALL_DOCDIR / "abi.md").find("installed from the copy"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(from_first / "bin" / "oe"));

  ASSERT_NO_FATAL_FAILURE(copyTree(first, second));
  fs::remove_all(first);
  const fs::path from_second = tmp_.path() / "prefix-second";
  ASSERT_NO_FATAL_FAILURE(install(second, from_second));
  EXPECT_NE(readText(from_second / OE_INSTALL_DOCDIR / "abi.md").find("installed from the copy"),
            std::string::npos);
  const ProcessResult plugins =
      runProcess({(from_second / "bin" / "oe").string(), "plugins"}, options_);
  EXPECT_EQ(plugins.exit_code, 0) << plugins.describe();
  EXPECT_NE(plugins.out.find("kinds: agent"), std::string::npos) << plugins.describe();

  // The original tree is left as it was: its install scripts still point at itself.
  EXPECT_NE(readText(fs::path(OE_BINARY_DIR) / "sdk" / "cmake_install.cmake")
                .find(std::string(OE_BINARY_DIR) + "/sdk/"),
            std::string::npos);
}

}  // namespace
}  // namespace oe::abi_test
