// The Debian packages a user installs (docs/packaging.md): CPack makes oe and oe-dev from this
// build, dpkg installs both into a fresh root, and there the installed oe prints its version,
// runs `oe doctor` and the hello-tool example copied from /usr/share/oe/examples, and the C plugin
// example builds against the installed oe-dev (CMake and pkg-config) and loads. lintian finds no
// error. Also the man page and bash completion against the oe that ships them, and the commit
// `oe --version` prints.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "abi/process.hpp"

namespace oe::packaging_test {
namespace {

namespace fs = std::filesystem;
using abi_test::ProcessOptions;
using abi_test::ProcessResult;
using abi_test::runProcess;
using abi_test::TempDir;
using nlohmann::json;

// What the built-in plugins are, by file: each must be in the oe package.
const std::vector<std::string> kBuiltInPlugins = {
    "agent.so",      "approval.so",   "cli_agent.so", "dataset.so", "evolution.so",
    "experience.so", "openai_llm.so", "skill.so",     "tool.so"};

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<fs::path> findOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
  std::istringstream dirs(path == nullptr ? "" : path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

// The tool a package test needs that this machine lacks, said with the Debian package that has
// it; nullopt when all are there. The only reason these tests skip (.ci/deps installs them).
std::optional<std::string> missingPackagingTool() {
  if (std::string(OE_CPACK_COMMAND).empty() || !fs::exists(OE_CPACK_COMMAND)) {
    return "cpack (Debian package cmake) was not found next to cmake";
  }
  const std::vector<std::pair<std::string, std::string>> tools = {
      {"dpkg-deb", "dpkg"}, {"dpkg", "dpkg"}, {"dpkg-shlibdeps", "dpkg-dev"}};
  for (const auto& [tool, package] : tools) {
    if (!findOnPath(tool)) {
      return tool + " is not on PATH: install the Debian package " + package;
    }
  }
  return std::nullopt;
}

#define OE_SKIP_WITHOUT_PACKAGING_TOOLS()              \
  do {                                                 \
    if (const auto missing = missingPackagingTool()) { \
      GTEST_SKIP() << *missing;                        \
    }                                                  \
  } while (false)

std::string debianArch() {
  const ProcessResult arch = runProcess({"dpkg", "--print-architecture"});
  std::string text = arch.out;
  text.erase(text.find_last_not_of(" \n") + 1);
  return text;
}

// `dpkg-deb --field <deb> <field>`, without the trailing newline.
std::string debField(const fs::path& deb, const std::string& field) {
  std::string text = runProcess({"dpkg-deb", "--field", deb.string(), field}).out;
  text.erase(text.find_last_not_of(" \n") + 1);
  return text;
}

// The package names in a Depends-style field ("a (>= 1), b | c" -> a, b, c).
std::set<std::string> packageNames(const std::string& field) {
  std::set<std::string> names;
  static const std::regex kName(R"((^|[,|]\s*)([a-z0-9][a-z0-9+.-]*))");
  for (auto it = std::sregex_iterator(field.begin(), field.end(), kName);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[2].str());
  }
  return names;
}

class Packaging : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.env["HOME"] = (tmp_.path() / "home").string();
    fs::create_directories(tmp_.path() / "home");
    for (const char* name :
         {"LD_LIBRARY_PATH", "OE_PLUGIN_PATH", "OE_REGISTRY", "OE_STORE", "OE_ULTRA_PROMPTS",
          "CMAKE_PREFIX_PATH", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "ANTHROPIC_API_KEY",
          "OPENAI_API_KEY", "OPENAI_BASE_URL"}) {
      options_.env[name] = std::nullopt;
    }
    // The user's trust store (docs/trust.md) is this test's: a plugin built here runs once
    // `oe trust` says so.
    options_.env["XDG_CONFIG_HOME"] = std::nullopt;
    options_.env["OE_TRUST_FILE"] = (tmp_.path() / "home" / "trust.json").string();
    options_.timeout = std::chrono::seconds(600);
  }

  // cpack -G DEB over this build into <tmp>/debs: the two packages, by the names Debian tools
  // expect; wrap in ASSERT_NO_FATAL_FAILURE.
  void makePackages() {
    const fs::path out = tmp_.path() / "debs";
    const ProcessResult cpack =
        runProcess({OE_CPACK_COMMAND, "--config", std::string(OE_BINARY_DIR) + "/CPackConfig.cmake",
                    "-G", "DEB", "-B", out.string()},
                   options_);
    ASSERT_EQ(cpack.exit_code, 0) << "cpack failed (is the whole build built?)\n"
                                  << cpack.describe();
    const std::string suffix = "_" + std::string(OE_PROJECT_VERSION) + "_" + debianArch() + ".deb";
    oe_deb_ = out / ("oe" + suffix);
    dev_deb_ = out / ("oe-dev" + suffix);
    ASSERT_TRUE(fs::exists(oe_deb_)) << oe_deb_ << "\n" << cpack.describe();
    ASSERT_TRUE(fs::exists(dev_deb_)) << dev_deb_ << "\n" << cpack.describe();
  }

  // Both packages installed by dpkg into a root of their own, with an empty package database:
  // --force-depends because that root has none of the libraries' packages (the binaries run
  // with this machine's). Nothing is written outside the root (its own log).
  void installPackages() {
    root_ = tmp_.path() / "root";
    const fs::path admin = root_ / "var" / "lib" / "dpkg";
    for (const char* dir : {"info", "updates", "triggers"}) {
      fs::create_directories(admin / dir);
    }
    std::ofstream(admin / "status").flush();
    std::vector<std::string> args = {"dpkg",
                                     "--root=" + root_.string(),
                                     "--log=" + (tmp_.path() / "dpkg.log").string(),
                                     "--force-depends",
                                     "--install",
                                     oe_deb_.string(),
                                     dev_deb_.string()};
    if (::geteuid() != 0) {
      args.insert(args.begin() + 1, "--force-not-root");
    }
    ProcessOptions dpkg_options = options_;
    // dpkg looks for ldconfig and start-stop-daemon on PATH before it does anything.
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
    dpkg_options.env["PATH"] = std::string(path == nullptr ? "" : path) + ":/usr/sbin:/sbin";
    const ProcessResult dpkg = runProcess(args, dpkg_options);
    ASSERT_EQ(dpkg.exit_code, 0) << dpkg.describe();
    const ProcessResult status =
        runProcess({"dpkg-query", "--root=" + root_.string(), "--show",
                    "--showformat=${Package} ${Status}\\n", "oe", "oe-dev"},
                   options_);
    EXPECT_EQ(status.out, "oe install ok installed\noe-dev install ok installed\n")
        << status.describe();
  }

  ProcessResult oe(const std::vector<std::string>& args, ProcessOptions options) {
    std::vector<std::string> argv = {(root_ / "usr" / "bin" / "oe").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv, options);
  }
  ProcessResult oe(const std::vector<std::string>& args) { return oe(args, options_); }

  // The installed /usr/share/oe/examples/<name>, copied where a run may write.
  fs::path copyInstalledExample(const std::string& name) {
    const fs::path to = tmp_.path() / "work" / name;
    fs::create_directories(to.parent_path());
    fs::copy(root_ / "usr" / "share" / "oe" / "examples" / name, to,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    return to;
  }

  // cmake/OeBuildCommit.cmake run as the build runs it, writing into this test's folder; the
  // commit the header it writes holds.
  std::string generateBuildCommit(const fs::path& source) {
    const ProcessResult result = runProcess(
        {OE_CMAKE_COMMAND, "-DOE_SOURCE_DIR=" + source.string(), "-DOE_OUTPUT=" + header_.string(),
         "-DOE_GIT=" OE_GIT_EXECUTABLE, "-P", OE_SOURCE_DIR "/cmake/OeBuildCommit.cmake"});
    EXPECT_EQ(result.exit_code, 0) << result.describe();
    static const std::regex kCommit(R"re(kBuildCommit = "([^"]*)")re");
    std::smatch match;
    const std::string text = readText(header_);
    return std::regex_search(text, match, kCommit) ? match[1].str() : "<no kBuildCommit>";
  }
  static ProcessResult git(const fs::path& dir, std::vector<std::string> args) {
    args.insert(args.begin(), {OE_GIT_EXECUTABLE, "-C", dir.string(), "-c", "user.name=t", "-c",
                               "user.email=t@example.invalid"});
    return runProcess(args);
  }

  TempDir tmp_;
  ProcessOptions options_;
  fs::path oe_deb_;
  fs::path dev_deb_;
  fs::path root_;
  fs::path header_ = tmp_.path() / "out" / "oe" / "build_commit.hpp";
};

TEST_F(Packaging, ControlFieldsNameTheLibrariesAndTheRuntimeTheToolsNeed) {
  OE_SKIP_WITHOUT_PACKAGING_TOOLS();
  ASSERT_NO_FATAL_FAILURE(makePackages());
  EXPECT_EQ(debField(oe_deb_, "Package"), "oe");
  EXPECT_EQ(debField(oe_deb_, "Version"), OE_PROJECT_VERSION);
  EXPECT_EQ(debField(oe_deb_, "Section"), "utils");
  EXPECT_FALSE(debField(oe_deb_, "Maintainer").empty());
  EXPECT_EQ(debField(dev_deb_, "Package"), "oe-dev");
  // oe-dev: the same oe, and the libraries of oe-plugin-manifest (dpkg-shlibdeps), which are
  // among oe's own.
  const std::string dev_depends = debField(dev_deb_, "Depends");
  EXPECT_TRUE(dev_depends.starts_with("oe (= " OE_PROJECT_VERSION ")")) << dev_depends;

  // dpkg-shlibdeps's Depends: the package of every library oe links directly (its NEEDED
  // entries, found where this machine's loader finds them), libc6 and libstdc++6 among them.
  const std::string depends = debField(oe_deb_, "Depends");
  const std::set<std::string> depended = packageNames(depends);
  EXPECT_TRUE(depended.count("libc6") && depended.count("libstdc++6")) << depends;
  for (const std::string& package : packageNames(dev_depends)) {
    EXPECT_TRUE(package == "oe" || depended.count(package))
        << "oe-dev depends on " << package << ", which oe does not: " << dev_depends;
  }
  const std::string oe_binary = std::string(OE_BINARY_DIR) + "/bin/oe";
  const ProcessResult dynamic = runProcess({OE_READELF, "--dynamic", oe_binary});
  ASSERT_EQ(dynamic.exit_code, 0) << dynamic.describe();
  std::set<std::string> needed;
  static const std::regex kNeeded(R"re(\(NEEDED\)\s+Shared library: \[([^\]]+)\])re");
  for (auto it = std::sregex_iterator(dynamic.out.begin(), dynamic.out.end(), kNeeded);
       it != std::sregex_iterator(); ++it) {
    needed.insert((*it)[1].str());
  }
  const ProcessResult ldd = runProcess({"ldd", oe_binary});
  ASSERT_EQ(ldd.exit_code, 0) << ldd.describe();
  static const std::regex kResolved(R"(\s(\S+) => (/\S+))");
  int checked = 0;
  for (auto it = std::sregex_iterator(ldd.out.begin(), ldd.out.end(), kResolved);
       it != std::sregex_iterator(); ++it) {
    if (!needed.count((*it)[1].str())) {
      continue;  // a library of a library: its own package depends on it
    }
    const std::string library = (*it)[2].str();
    ProcessResult owner = runProcess({"dpkg", "--search", library});
    if (owner.exit_code != 0) {
      owner = runProcess({"dpkg", "--search", fs::canonical(library).string()});
    }
    if (owner.exit_code != 0) {
      continue;  // a library no package installed (built by hand): nothing to depend on
    }
    const std::string package = owner.out.substr(0, owner.out.find_first_of(":,"));
    EXPECT_TRUE(depended.count(package))
        << library << " comes from " << package << ", which Depends lacks: " << depends;
    ++checked;
  }
  EXPECT_GE(checked, 5) << dynamic.out << ldd.out;
  // Not a shared library, so no dpkg-shlibdeps: Node.js runs the .mjs tools (Recommends).
  EXPECT_TRUE(packageNames(debField(oe_deb_, "Recommends")).count("nodejs"));
  EXPECT_FALSE(depended.count("nodejs")) << depends;
}

TEST_F(Packaging, BothInstallIntoACleanRootWhereOeRunsTheShippedExample) {
  OE_SKIP_WITHOUT_PACKAGING_TOOLS();
  ASSERT_NO_FATAL_FAILURE(makePackages());
  ASSERT_NO_FATAL_FAILURE(installPackages());
  const fs::path usr = root_ / "usr";

  // Where the host looks: <exe>/../lib/oe/plugins and <exe>/../share/oe.
  for (const std::string& plugin : kBuiltInPlugins) {
    EXPECT_TRUE(fs::is_regular_file(usr / "lib" / "oe" / "plugins" / plugin)) << plugin;
    // Its manifest describes the installed (stripped) file, so a copy of it vendored into an
    // experience is described without loading it.
    const ProcessResult current = runProcess(
        {(usr / "bin" / "oe-plugin-manifest").string(), "--check",
         (usr / "lib" / "oe" / "plugins" / plugin).string()},
        options_);
    EXPECT_EQ(current.exit_code, 0) << plugin << ": " << current.describe();
  }
  for (const char* file :
       {"share/oe/registry.json", "share/oe/evolution/proposal.md", "share/man/man1/oe.1.gz",
        "share/bash-completion/completions/oe", "share/doc/oe/copyright",
        "share/doc/oe/changelog.gz", "share/oe/examples/scripted_cli.py"}) {
    EXPECT_TRUE(fs::is_regular_file(usr / file)) << file;
  }
  EXPECT_FALSE(fs::is_empty(usr / "share" / "oe" / "templates"));
  EXPECT_FALSE(fs::is_empty(usr / "share" / "oe" / "prompts" / "ultra"));
  EXPECT_EQ(fs::read_symlink(usr / "share" / "doc" / "oe-dev"), "oe");

  // Every example folder of the source tree, and in them nothing a run or a build left.
  const fs::path examples = usr / "share" / "oe" / "examples";
  for (const auto& entry : fs::directory_iterator(fs::path(OE_SOURCE_DIR) / "examples")) {
    if (entry.is_directory() && !entry.path().filename().string().starts_with(".")) {
      EXPECT_TRUE(fs::is_directory(examples / entry.path().filename())) << entry.path();
    }
  }
  for (const auto& entry : fs::recursive_directory_iterator(examples)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name != ".openexpertise" && name != "build" && name != "target" &&
                name != ".gitignore")
        << entry.path();
    if (entry.is_regular_file() && !entry.is_symlink()) {
      EXPECT_NE(readText(entry.path()).substr(0, 4), "\177ELF") << entry.path();
    }
  }
  EXPECT_TRUE(fs::is_symlink(examples / "brainstorming" / "fake-cli" / "claude"));
  EXPECT_TRUE(fs::exists(examples / "brainstorming" / "fake-cli" / "claude"));  // resolves

  const ProcessResult version = oe({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.describe();
  EXPECT_TRUE(version.out.starts_with("oe " OE_PROJECT_VERSION " (commit ")) << version.out;

  // doctor names the installed plugin folder last in its search order, with every plugin.
  const fs::path hello = copyInstalledExample("hello-tool");
  const ProcessResult doctor = oe({"doctor", "--json", "--experience", hello.string()});
  ASSERT_TRUE(doctor.exit_code == 0 || doctor.exit_code == 1) << doctor.describe();
  const json report = json::parse(doctor.out);
  for (const json& check : report["checks"]) {
    if (check["name"].get<std::string>().starts_with("plugin")) {
      EXPECT_EQ(check["status"], "pass") << check.dump();
    }
  }
  const json& dirs = report["plugin_dirs"];
  ASSERT_EQ(dirs.size(), 2u) << dirs.dump(2);
  EXPECT_EQ(dirs[0]["path"], (hello / "plugins").string());
  EXPECT_EQ(dirs[0]["state"], "missing");
  EXPECT_EQ(fs::canonical(dirs[1]["path"].get<std::string>()),
            fs::canonical(usr / "lib" / "oe" / "plugins"));
  EXPECT_EQ(dirs[1]["state"], "searched");
  std::set<std::string> files;
  for (const json& plugin : dirs[1]["plugins"]) {
    files.insert(plugin["file"].get<std::string>());
    EXPECT_EQ(plugin["version"], OE_PROJECT_VERSION) << plugin.dump();
    EXPECT_FALSE(plugin["kinds"].empty() && plugin["id"] != "dev.oe.openai-llm") << plugin.dump();
  }
  EXPECT_EQ(files, std::set<std::string>(kBuiltInPlugins.begin(), kBuiltInPlugins.end()));

  const ProcessResult run = oe({"run", hello.string(), "--no-tui"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.out.find("hello, World"), std::string::npos) << run.describe();
  EXPECT_TRUE(fs::is_directory(hello / ".openexpertise"));
  EXPECT_FALSE(fs::exists(examples / "hello-tool" / ".openexpertise"));

  // The installed examples hold more than the demos; `oe demo` offers the demos only.
  const ProcessResult demos = oe({"demo", "--json"});
  ASSERT_EQ(demos.exit_code, 0) << demos.describe();
  std::set<std::string> demo_names;
  for (const json& demo : json::parse(demos.out)) {
    demo_names.insert(demo["name"].get<std::string>());
  }
  EXPECT_EQ(demo_names, (std::set<std::string>{"brainstorming", "deep-research", "review-branch",
                                               "systematic-debugging", "tri-cli-orchestration"}));
  const ProcessResult templates = oe({"init", "--list-templates"});
  EXPECT_EQ(templates.exit_code, 0) << templates.describe();
  EXPECT_NE(templates.out.find("tool-only"), std::string::npos) << templates.describe();
}

TEST_F(Packaging, TheCPluginExampleBuildsAgainstTheInstalledSdk) {
  OE_SKIP_WITHOUT_PACKAGING_TOOLS();
  ASSERT_NO_FATAL_FAILURE(makePackages());
  ASSERT_NO_FATAL_FAILURE(installPackages());
  const fs::path usr = root_ / "usr";
  const fs::path source = copyInstalledExample("c-plugin");
  const fs::path package = usr / "lib" / "cmake" / "OpenExpertiseSDK";

  // CMake: find_package(OpenExpertiseSDK) with the root's /usr as the prefix.
  const fs::path build = tmp_.path() / "build-cmake";
  const ProcessResult configure =
      runProcess({OE_CMAKE_COMMAND, "-S", source.string(), "-B", build.string(), "-G",
                  OE_CMAKE_GENERATOR, "-DCMAKE_BUILD_TYPE=Release",
                  "-DCMAKE_C_COMPILER=" OE_C_COMPILER, "-DCMAKE_PREFIX_PATH=" + usr.string(),
                  "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF", "-DCMAKE_COMPILE_WARNING_AS_ERROR=ON"},
                 options_);
  ASSERT_EQ(configure.exit_code, 0) << configure.describe();
  EXPECT_NE(
      readText(build / "CMakeCache.txt").find("OpenExpertiseSDK_DIR:PATH=" + package.string()),
      std::string::npos)
      << "found another copy of the SDK than the installed one";
  const ProcessResult compile = runProcess({OE_CMAKE_COMMAND, "--build", build.string()}, options_);
  ASSERT_EQ(compile.exit_code, 0) << compile.describe();
  ASSERT_TRUE(fs::exists(build / "c_upper.so"));

  // pkg-config: the flags and the version script from openexpertise-sdk.pc alone.
  ProcessOptions pc_options = options_;
  pc_options.env["PKG_CONFIG_LIBDIR"] = (usr / "lib" / "pkgconfig").string();
  const ProcessResult cflags =
      runProcess({"pkg-config", "--cflags", "openexpertise-sdk"}, pc_options);
  ASSERT_EQ(cflags.exit_code, 0) << cflags.describe();
  const ProcessResult script =
      runProcess({"pkg-config", "--variable=version_script", "openexpertise-sdk"}, pc_options);
  ASSERT_EQ(script.exit_code, 0) << script.describe();
  std::string version_script = script.out;
  version_script.erase(version_script.find_last_not_of(" \n") + 1);
  ASSERT_TRUE(fs::exists(version_script)) << version_script;
  EXPECT_EQ(fs::canonical(version_script), fs::canonical(package / "oe_plugin.version"));
  std::vector<std::string> cc = {OE_C_COMPILER, "-std=c11", "-Wall",   "-Wextra",
                                 "-Werror",     "-fPIC",    "-shared", "-fvisibility=hidden"};
  std::istringstream flags(cflags.out);
  for (std::string flag; flags >> flag;) {
    cc.push_back(flag);
  }
  const fs::path pc_build = tmp_.path() / "build-pkg-config";
  fs::create_directories(pc_build);
  cc.insert(cc.end(), {"-Wl,--version-script=" + version_script, "-Wl,-z,defs", "-o",
                       (pc_build / "c_upper.so").string(), (source / "upper.c").string()});
  const ProcessResult pc_compile = runProcess(cc, options_);
  ASSERT_EQ(pc_compile.exit_code, 0) << pc_compile.describe();
  EXPECT_EQ(abi_test::exportedSymbols(pc_build / "c_upper.so"),
            std::vector<std::string>{"oe_plugin_entry_v1"});

  // Built without CMake, it gets its manifest from the tool pkg-config names (docs/trust.md).
  const ProcessResult tool =
      runProcess({"pkg-config", "--variable=manifest_tool", "openexpertise-sdk"}, pc_options);
  ASSERT_EQ(tool.exit_code, 0) << tool.describe();
  std::string manifest_tool = tool.out;
  manifest_tool.erase(manifest_tool.find_last_not_of(" \n") + 1);
  const ProcessResult manifest =
      runProcess({manifest_tool, (pc_build / "c_upper.so").string()}, options_);
  ASSERT_EQ(manifest.exit_code, 0) << manifest.describe();
  EXPECT_TRUE(fs::exists(build / "c_upper.so.oe-manifest.json")) << "oe_add_plugin writes one";

  // Each build of the plugin is listed from its manifest and runs under the installed oe once
  // trusted.
  for (const fs::path& plugins : {build, pc_build}) {
    const fs::path experience = tmp_.path() / ("run-" + plugins.filename().string());
    fs::copy(source / "experience", experience, fs::copy_options::recursive);
    ProcessOptions run_options = options_;
    run_options.env["OE_PLUGIN_PATH"] = plugins.string();
    const ProcessResult listed = oe({"plugins"}, run_options);
    EXPECT_NE(listed.out.find("kinds: text-upper  [not trusted]"), std::string::npos)
        << plugins << "\n"
        << listed.describe();
    ASSERT_EQ(oe({"trust", plugins.string()}, run_options).exit_code, 0);
    const ProcessResult run = oe({"run", experience.string(), "--no-tui"}, run_options);
    EXPECT_EQ(run.exit_code, 0) << plugins << "\n" << run.describe();
    EXPECT_NE(run.out.find("HELLO FROM A PLUGIN WRITTEN IN C!"), std::string::npos)
        << plugins << "\n"
        << run.describe();
  }
}

TEST_F(Packaging, LintianFindsNoErrorAndOnlyTheWarningsTheDocsExplain) {
  OE_SKIP_WITHOUT_PACKAGING_TOOLS();
  const auto lintian = findOnPath("lintian");
  if (!lintian) {
    GTEST_SKIP() << "lintian is not on PATH: install the Debian package lintian";
  }
  ASSERT_NO_FATAL_FAILURE(makePackages());
  const ProcessResult result =
      runProcess({lintian->string(), "--fail-on", "error", "--no-tag-display-limit",
                  oe_deb_.string(), dev_deb_.string()},
                 options_);
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  // "W: oe: <tag> [<detail>]" per finding: no error, and each warning's tag in the docs' list.
  const std::string docs = readText(fs::path(OE_SOURCE_DIR) / "docs" / "packaging.md");
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    static const std::regex kFinding(R"(^([EW]): (\S+): (\S+))");
    std::smatch match;
    if (!std::regex_search(line, match, kFinding)) {
      continue;
    }
    EXPECT_NE(match[1], "E") << line;
    EXPECT_NE(docs.find("`" + match[3].str() + "`"), std::string::npos)
        << "docs/packaging.md does not explain lintian's " << line;
  }
}

// The man page and the completion, against the oe in this build (the one packaged).
TEST_F(Packaging, TheManPageHasAnEntryForEveryCommand) {
  const std::string page = readText(fs::path(OE_BINARY_DIR) / "host" / "man" / "oe.1");
  ASSERT_FALSE(page.empty());
  EXPECT_NE(page.find(".TH OE 1 \"\" \"oe " OE_PROJECT_VERSION "\""), std::string::npos);
  const ProcessResult help = runProcess({std::string(OE_BINARY_DIR) + "/bin/oe", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.describe();
  const std::string commands = help.out.substr(help.out.find("Subcommands:"));
  static const std::regex kCommand(R"(\n  ([a-z][a-z-]*) )");
  int count = 0;
  for (auto it = std::sregex_iterator(commands.begin(), commands.end(), kCommand);
       it != std::sregex_iterator(); ++it, ++count) {
    std::string roff = (*it)[1].str();
    roff = std::regex_replace(roff, std::regex("-"), "\\-");
    EXPECT_TRUE(page.find(".B " + roff + "\n") != std::string::npos ||
                page.find(".B " + roff + " ") != std::string::npos)
        << "oe.1 has no entry for `oe " << (*it)[1] << "`";
  }
  EXPECT_GE(count, 20) << help.out;
}

// What the completion offers for the words typed so far (the last one being completed) after
// `oe`, the binary whose help it reads.
std::vector<std::string> complete(const std::string& oe, const std::vector<std::string>& words) {
  std::string script =
      "source '" OE_SOURCE_DIR "/host/share/bash-completion/oe'\nCOMP_WORDS=('" + oe + "'";
  for (const std::string& word : words) {
    script += " '" + word + "'";
  }
  script += ")\nCOMP_CWORD=" + std::to_string(words.size()) +
            "\n_oe\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
  const ProcessResult result = runProcess({"bash", "--norc", "-c", script});
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  std::vector<std::string> out;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      out.push_back(line);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(Packaging, BashCompletionOffersCommandsSubcommandsAndOptions) {
  using V = std::vector<std::string>;
  const std::string oe = std::string(OE_BINARY_DIR) + "/bin/oe";
  EXPECT_EQ(complete(oe, {"re"}), (V{"registry", "reject", "reset-state", "resume"}));
  EXPECT_EQ(complete(oe, {"run", "--fre"}), (V{"--fresh"}));
  EXPECT_EQ(complete(oe, {"cache", ""}), (V{"clear", "ls"}));
  EXPECT_EQ(complete(oe, {"store", "m"}), (V{"migrate"}));
  // An option's value is the shell's to complete (files), even when it starts with a dash.
  EXPECT_EQ(complete(oe, {"run", "--store", "--"}), V{});
  EXPECT_EQ(complete(oe, {"doctor", "--experience", "exp", "--js"}), (V{"--json"}));
  const V top = complete(oe, {""});
  EXPECT_GE(top.size(), 20u);
  EXPECT_TRUE(std::find(top.begin(), top.end(), "doctor") != top.end());

  // A value that names a subcommand is still a value: oe has no command with both value
  // options and subcommands yet, so a stand-in's help has one.
  const fs::path fake = tmp_.path() / "fake-oe";
  std::ofstream(fake) << R"(#!/bin/sh
case "$*" in
  --help) printf 'Usage: fake [OPTIONS] SUBCOMMAND\n\nOptions:\n  -h,--help  Print\n'
          printf '  --store TEXT  A value\n  --top  A flag\n\nSubcommands:\n  ls  List\n' ;;
  "ls --help") printf 'Usage: fake ls [OPTIONS]\n\nOptions:\n'
               printf '  -h,--help  Print\n  --long  A flag\n' ;;
esac
)";
  fs::permissions(fake, fs::perms::owner_all);
  EXPECT_EQ(complete(fake.string(), {"--store", "ls", "--"}), (V{"--help", "--store", "--top"}));
  EXPECT_EQ(complete(fake.string(), {"ls", "--"}), (V{"--help", "--long"}));
  EXPECT_EQ(complete(fake.string(), {"--top", ""}), V{"ls"});
}

TEST_F(Packaging, BuildCommitIsTheCheckoutsAndRewritesTheHeaderOnlyWhenItChanges) {
  if (std::string(OE_GIT_EXECUTABLE).empty()) {  // a build without git says so
    EXPECT_EQ(generateBuildCommit(OE_SOURCE_DIR), "unknown");
    return;
  }
  const fs::path repo = tmp_.path() / "repo";
  fs::create_directories(repo);
  std::ofstream(repo / "file.txt") << "one\n";
  ASSERT_EQ(git(repo, {"init", "-q"}).exit_code, 0);
  ASSERT_EQ(git(repo, {"add", "file.txt"}).exit_code, 0);
  ASSERT_EQ(git(repo, {"commit", "-q", "-m", "one"}).exit_code, 0);
  std::string head = git(repo, {"rev-parse", "--short", "HEAD"}).out;
  head.erase(head.find_last_not_of('\n') + 1);

  EXPECT_EQ(generateBuildCommit(repo), head);
  // Same commit again: the file keeps its time, so nothing that includes it is rebuilt.
  const auto written = fs::last_write_time(header_);
  fs::last_write_time(header_, written - std::chrono::hours(1));
  const auto backdated = fs::last_write_time(header_);
  EXPECT_EQ(generateBuildCommit(repo), head);
  EXPECT_EQ(fs::last_write_time(header_), backdated);

  std::ofstream(repo / "file.txt") << "two\n";
  EXPECT_EQ(generateBuildCommit(repo), head + "-dirty");
  EXPECT_NE(fs::last_write_time(header_), backdated);

  // A folder inside that checkout, as a source tarball unpacked there would be: not its commit.
  fs::create_directories(repo / "unpacked");
  EXPECT_EQ(generateBuildCommit(repo / "unpacked"), "unknown");
  EXPECT_EQ(generateBuildCommit(tmp_.path() / "out"), "unknown");  // no checkout at all
}

TEST_F(Packaging, VersionPrintsTheVersionAndTheCommitOfThisBuild) {
  const ProcessResult version = runProcess({std::string(OE_BINARY_DIR) + "/bin/oe", "--version"});
  ASSERT_EQ(version.exit_code, 0) << version.describe();
  static const std::regex kLine(R"(^oe ([0-9.]+) \(commit ([A-Za-z0-9._+-]+)\)\n$)");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(version.out, match, kLine)) << version.out;
  EXPECT_EQ(match[1], OE_PROJECT_VERSION);
  const ProcessResult described =
      runProcess({OE_GIT_EXECUTABLE, "-C", OE_SOURCE_DIR, "describe", "--always"});
  if (std::string(OE_GIT_EXECUTABLE).empty() || described.exit_code != 0) {
    EXPECT_EQ(match[2], "unknown");
    return;
  }
  // The tree may have changed since the build (the -dirty mark); the commit may not have.
  std::string commit = match[2].str();
  if (commit.ends_with("-dirty")) {
    commit.resize(commit.size() - std::string_view("-dirty").size());
  }
  EXPECT_EQ(commit + "\n", described.out);
}

}  // namespace
}  // namespace oe::packaging_test
