// The SDK as a third party gets it: install this build to a prefix, build examples/c-plugin
// against it with find_package(OpenExpertiseSDK), and run its experience with the installed oe.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/install.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

namespace fs = std::filesystem;

TEST(OutOfTree, CPluginBuildsAgainstInstalledSdk) {
  TempDir tmp;
  const fs::path prefix = tmp.path() / "prefix";
  const fs::path build = tmp.path() / "build";
  const ProcessOptions options = isolatedOptions(tmp.path());
  ASSERT_NO_FATAL_FAILURE(installThisBuild(prefix, options));
  const fs::path package = prefix / OE_INSTALL_LIBDIR / "cmake" / "OpenExpertiseSDK";
  ASSERT_TRUE(fs::exists(package / "OpenExpertiseSDKConfig.cmake")) << package;
  ASSERT_TRUE(fs::exists(package / "OpenExpertiseSDKConfigVersion.cmake")) << package;
  ASSERT_TRUE(fs::exists(package / "OeAddPlugin.cmake")) << package;
  ASSERT_TRUE(fs::exists(prefix / "include" / "oe" / "oe.h"));
  ASSERT_TRUE(fs::exists(prefix / "include" / "oe" / "cpp" / "plugin.hpp"));
  ASSERT_TRUE(fs::exists(prefix / "bin" / "oe"));
  ASSERT_TRUE(fs::exists(prefix / "bin" / "oe-plugin-manifest"));

  const fs::path source = fs::path(OE_SOURCE_DIR) / "examples" / "c-plugin";
  const ProcessResult configure = runProcess(
      {OE_CMAKE_COMMAND, "-S", source.string(), "-B", build.string(), "-G", OE_CMAKE_GENERATOR,
       "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_COMPILER=" OE_C_COMPILER,
       "-DCMAKE_PREFIX_PATH=" + prefix.string(), "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF",
       "-DCMAKE_COMPILE_WARNING_AS_ERROR=ON"},
      options);
  ASSERT_EQ(configure.exit_code, 0) << configure.describe();
  // It must have found the package we just installed, not some other copy.
  EXPECT_NE(runProcess({OE_CMAKE_COMMAND, "-N", "-LA", build.string()}, options)
                .out.find("OpenExpertiseSDK_DIR:PATH=" + package.string()),
            std::string::npos);

  const ProcessResult compile =
      runProcess({OE_CMAKE_COMMAND, "--build", build.string()}, options);
  ASSERT_EQ(compile.exit_code, 0) << compile.describe();
  const fs::path library = build / "c_upper.so";
  ASSERT_TRUE(fs::exists(library)) << compile.describe();
  EXPECT_EQ(exportedSymbols(library), std::vector<std::string>{"oe_plugin_entry_v1"});
  // The installed package's oe_add_plugin ran the installed manifest tool after the build.
  EXPECT_TRUE(fs::exists(build / "c_upper.so.oe-manifest.json")) << compile.describe();

  // Run the example's experience from a copy, so no .openexpertise/ lands in the source tree.
  const fs::path experience = tmp.path() / "experience";
  fs::copy(source / "experience", experience, fs::copy_options::recursive);
  ProcessOptions run_options = options;
  run_options.env["OE_PLUGIN_PATH"] = build.string();
  const fs::path oe = prefix / "bin" / "oe";

  const ProcessResult plugins = runProcess({oe.string(), "plugins"}, run_options);
  EXPECT_NE(plugins.out.find("dev.oe.example.c-upper  0.1.0  abi "), std::string::npos)
      << plugins.describe();
  EXPECT_NE(plugins.out.find("kinds: text-upper"), std::string::npos) << plugins.describe();

  // Listed from its manifest; run once trusted, as the plugin of a third party.
  const ProcessResult untrusted =
      runProcess({oe.string(), "run", experience.string()}, run_options);
  EXPECT_EQ(untrusted.exit_code, 1) << untrusted.describe();
  EXPECT_NE(untrusted.err.find("review it, then run: oe trust " +
                               fs::canonical(library).string()),
            std::string::npos)
      << untrusted.describe();
  const ProcessResult trusted = runProcess({oe.string(), "trust", build.string()}, run_options);
  ASSERT_EQ(trusted.exit_code, 0) << trusted.describe();
  const ProcessResult run = runProcess({oe.string(), "run", experience.string()}, run_options);
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE((run.out + run.err).find("HELLO FROM A PLUGIN WRITTEN IN C!"), std::string::npos)
      << run.describe();
  EXPECT_TRUE(fs::exists(experience / ".openexpertise"));
  EXPECT_FALSE(fs::exists(source / "experience" / ".openexpertise"));

  // The same in a helper process (docs/trust.md, "Process isolation"): the installed oe is the
  // helper's program, so an install needs nothing more.
  const fs::path isolated = tmp.path() / "isolated";
  fs::copy(source / "experience", isolated, fs::copy_options::recursive);
  ProcessOptions isolated_options = run_options;
  isolated_options.env["OE_PLUGIN_ISOLATION"] = "process";
  const ProcessResult in_helper =
      runProcess({oe.string(), "run", isolated.string()}, isolated_options);
  ASSERT_TRUE(in_helper.exited) << in_helper.describe();
  EXPECT_EQ(in_helper.exit_code, 0) << in_helper.describe();
  EXPECT_NE((in_helper.out + in_helper.err).find("HELLO FROM A PLUGIN WRITTEN IN C!"),
            std::string::npos)
      << in_helper.describe();
}

}  // namespace
}  // namespace oe::abi_test
