// examples/rust-plugin as a Rust author builds it: install this build to a prefix, generate the
// bindings with the bindgen CLI over the installed headers, build the crate with cargo (offline,
// no user configuration), and run its experience with the installed oe.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "abi/install.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

namespace fs = std::filesystem;

// Found on PATH when oe was configured (tests/abi/CMakeLists.txt); empty when absent.
struct Tool {
  std::string_view name;
  std::string_view path;
};
constexpr Tool kTools[] = {
    {"cargo", OE_CARGO_PROGRAM}, {"rustc", OE_RUSTC_PROGRAM}, {"bindgen", OE_BINDGEN_PROGRAM}};

// The names of the tools this test cannot run without, or an empty string.
std::string missingTools() {
  std::string missing;
  for (const Tool& tool : kTools) {
    if (tool.path.empty() || !fs::exists(tool.path)) {
      missing += (missing.empty() ? "" : ", ") + std::string(tool.name);
    }
  }
  return missing;
}

// cargo with nothing of the user's: HOME and CARGO_HOME are in the temp dir (no config.toml, no
// registry), and variables that would redirect or wrap the compiler are removed. A rustup
// toolchain on PATH still needs its toolchains, under the real HOME unless RUSTUP_HOME says.
ProcessOptions cargoOptions(const fs::path& tmp, const fs::path& bindings) {
  ProcessOptions options;
  const fs::path home = tmp / "home";
  fs::create_directories(home);
  if (std::getenv("RUSTUP_HOME") == nullptr && std::getenv("HOME") != nullptr) {
    const fs::path rustup = fs::path(std::getenv("HOME")) / ".rustup";
    if (fs::exists(rustup)) {
      options.env["RUSTUP_HOME"] = rustup.string();
    }
  }
  options.env["HOME"] = home.string();
  options.env["CARGO_HOME"] = (home / ".cargo").string();
  options.env["CARGO_TARGET_DIR"] = (tmp / "target").string();
  options.env["CARGO_NET_OFFLINE"] = "true";
  options.env["RUSTC"] = OE_RUSTC_PROGRAM;   // the rustc found with cargo, not another one
  options.env["RUSTFLAGS"] = "-D warnings";  // like the C and C++ code
  options.env["OE_BINDINGS"] = bindings.string();
  for (const char* name : {"CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "CARGO_BUILD_RUSTFLAGS",
                           "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "OE_PLUGIN_PATH"}) {
    options.env[name] = std::nullopt;
  }
  options.cwd = tmp / "crate";
  // A cold build compiles only this crate (no dependencies): 1.5 s on 2 idle cores, 7 s with
  // other builds running. Room for a far slower machine; ctest stops the test at 300 s anyway.
  options.timeout = std::chrono::seconds(120);
  return options;
}

TEST(RustPlugin, BuildsWithBindgenAndCargoAgainstInstalledSdk) {
  if (const std::string missing = missingTools(); !missing.empty()) {
    GTEST_SKIP() << missing << " not found (looked up on PATH when oe was configured): the Rust "
                 << "plugin example needs Debian's cargo, rustc and bindgen, which `.ci/deps` "
                 << "installs (then re-run cmake)";
  }
  TempDir tmp;
  const fs::path prefix = tmp.path() / "prefix";
  ProcessOptions options = isolatedOptions(tmp.path());
  ASSERT_NO_FATAL_FAILURE(installThisBuild(prefix, options));
  const fs::path include = prefix / "include";
  ASSERT_TRUE(fs::exists(include / "oe" / "oe.h"));

  // The command in examples/rust-plugin/README.md. OE_BINDGEN selects typed constants for the
  // status codes, which bindgen 0.60 (Debian 12) cannot evaluate in their cast spelling.
  const fs::path bindings = tmp.path() / "oe_sys.rs";
  const ProcessResult bindgen =
      runProcess({OE_BINDGEN_PROGRAM, (include / "oe" / "oe.h").string(), "--allowlist-type",
                  "oe_.*", "--allowlist-var", "OE_.*", "-o", bindings.string(), "--",
                  "-I" + include.string(), "-DOE_BINDGEN"},
                 options);
  ASSERT_EQ(bindgen.exit_code, 0)
      << "bindgen failed; it loads libclang at run time (.ci/deps installs libclang1-14 and, for "
         "<stddef.h> and <stdbool.h>, libclang-common-14-dev)\n"
      << bindgen.describe();

  // Build from a copy, so nothing (Cargo.lock, target/) is written to the source tree, and a
  // target/ left there by hand is not copied.
  const fs::path source = fs::path(OE_SOURCE_DIR) / "examples" / "rust-plugin";
  const fs::path crate = tmp.path() / "crate";
  fs::create_directories(crate);
  for (const char* entry : {"Cargo.toml", "Cargo.lock", "src"}) {
    fs::copy(source / entry, crate / entry, fs::copy_options::recursive);
  }
  const ProcessOptions cargo = cargoOptions(tmp.path(), bindings);

  const ProcessResult build =
      runProcess({OE_CARGO_PROGRAM, "build", "--release", "--offline"}, cargo);
  ASSERT_EQ(build.exit_code, 0) << build.describe();
  // The crate's own tests: its JSON reader, the plugin driven through its C tables with a Rust
  // host (panics included), and bindgen's layout checks of the generated structs.
  const ProcessResult unit =
      runProcess({OE_CARGO_PROGRAM, "test", "--release", "--offline"}, cargo);
  EXPECT_EQ(unit.exit_code, 0) << unit.describe();

  const fs::path built = tmp.path() / "target" / "release" / "liboe_rust_text.so";
  ASSERT_TRUE(fs::exists(built)) << build.describe();
  EXPECT_EQ(exportedSymbols(built), std::vector<std::string>{"oe_plugin_entry_v1"});
  const fs::path plugins = tmp.path() / "plugins";
  fs::create_directories(plugins);
  fs::copy_file(built, plugins / built.filename());
  // Built without CMake, so its manifest is written by hand (examples/rust-plugin/README.md):
  // the installed oe-plugin-manifest, on the library where oe will find it.
  const fs::path library = plugins / built.filename();
  const ProcessResult manifest =
      runProcess({(prefix / "bin" / "oe-plugin-manifest").string(), library.string()}, options);
  ASSERT_EQ(manifest.exit_code, 0) << manifest.describe();
  EXPECT_TRUE(fs::exists(library.string() + ".oe-manifest.json")) << manifest.describe();

  // Run the example's experience from a copy, so no .openexpertise/ lands in the source tree.
  const fs::path experience = tmp.path() / "experience";
  fs::copy(source / "experience", experience, fs::copy_options::recursive);
  ProcessOptions run_options = options;
  run_options.env["OE_PLUGIN_PATH"] = plugins.string();
  const fs::path oe = prefix / "bin" / "oe";

  const ProcessResult listed = runProcess({oe.string(), "plugins"}, run_options);
  EXPECT_EQ(listed.exit_code, 0) << listed.describe();
  EXPECT_NE(listed.out.find("dev.oe.example.rust-text  0.1.0  abi "), std::string::npos)
      << listed.describe();
  EXPECT_NE(listed.out.find("kinds: text-reverse,word-count"), std::string::npos)
      << listed.describe();

  const ProcessResult trusted = runProcess({oe.string(), "trust", plugins.string()}, run_options);
  ASSERT_EQ(trusted.exit_code, 0) << trusted.describe();
  // In-process, then in a helper process (docs/trust.md, "Process isolation"): the same answers
  // and the same log line from create, which crosses the socket there.
  for (const char* mode : {"in-process", "process"}) {
    SCOPED_TRACE(mode);
    const fs::path copy = tmp.path() / (std::string("experience-") + mode);
    fs::copy(experience, copy, fs::copy_options::recursive);
    ProcessOptions mode_options = run_options;
    mode_options.env["OE_PLUGIN_ISOLATION"] = mode;
    const ProcessResult run = runProcess({oe.string(), "run", copy.string()}, mode_options);
    ASSERT_TRUE(run.exited) << run.describe();
    EXPECT_EQ(run.exit_code, 0) << run.describe();
    const std::string output = run.out + run.err;
    EXPECT_NE(output.find("!tsuR ni nettirw nigulp a morf olleH"), std::string::npos)
        << run.describe();
    EXPECT_NE(output.find("words: 7"), std::string::npos) << run.describe();
    // create logged through the node context it was given, so the host names the node.
    EXPECT_NE(run.err.find("reverse: text-reverse writes `reversed`"), std::string::npos)
        << run.describe();
  }
  EXPECT_FALSE(fs::exists(source / "experience" / ".openexpertise"));

  // Failures come back as a status and a message naming the node, through the host's writers.
  const fs::path bad = tmp.path() / "bad";
  writeFile(bad / "experience.yaml", R"(name: bad
version: 0.1.0
state:
  schema:
    a: { type: string }
    b: { type: string }
    n: { type: number }
graph:
  nodes:
    - { id: two, kind: text-reverse, args: { text: x }, writes: [a, b] }
    - { id: unset, kind: word-count, args: { text: $.a }, writes: [n] }
  edges: []
)");
  // A Rust panic that nothing catches (tests/abi/fixtures/rust_panic) aborts the process that
  // runs it: under isolation: process, that is the plugin's helper alone. The node fails with the
  // signal, and the example's node beside it runs.
  const fs::path panic_crate = tmp.path() / "panic-crate";
  fs::create_directories(panic_crate);
  for (const char* entry : {"Cargo.toml", "src"}) {
    fs::copy(fs::path(OE_SOURCE_DIR) / "tests" / "abi" / "fixtures" / "rust_panic" / entry,
             panic_crate / entry, fs::copy_options::recursive);
  }
  ProcessOptions panic_cargo = cargo;
  panic_cargo.cwd = panic_crate;
  const ProcessResult panic_build =
      runProcess({OE_CARGO_PROGRAM, "build", "--release", "--offline"}, panic_cargo);
  ASSERT_EQ(panic_build.exit_code, 0) << panic_build.describe();
  const fs::path panic_library = plugins / "liboe_rust_panic.so";
  fs::copy_file(tmp.path() / "target" / "release" / "liboe_rust_panic.so", panic_library);
  ASSERT_EQ(runProcess({(prefix / "bin" / "oe-plugin-manifest").string(), panic_library.string()},
                       options)
                .exit_code,
            0);
  ASSERT_EQ(runProcess({oe.string(), "trust", panic_library.string()}, run_options).exit_code, 0);
  const fs::path panics = tmp.path() / "panics";
  writeFile(panics / "experience.yaml", R"(name: panics
version: 0.1.0
state:
  schema:
    reversed: { type: string }
    never: { type: string }
graph:
  nodes:
    - { id: reverse, kind: text-reverse, args: { text: "ok" }, writes: [reversed] }
    - { id: boom, kind: rust-panics, writes: [never] }
  edges: []
)");
  ProcessOptions isolated_options = run_options;
  isolated_options.env["OE_PLUGIN_ISOLATION"] = "process";
  const ProcessResult panicked =
      runProcess({oe.string(), "run", panics.string()}, isolated_options);
  ASSERT_TRUE(panicked.exited) << panicked.describe();
  EXPECT_EQ(panicked.exit_code, 1) << panicked.describe();
  EXPECT_NE(panicked.err.find("plugin `dev.oe.fixture.rust-panic` crashed in invoke (SIGABRT)"),
            std::string::npos)
      << panicked.describe();
  EXPECT_NE((panicked.out + panicked.err).find("reversed: \"ko\""), std::string::npos)
      << panicked.describe();

  for (const char* mode : {"in-process", "process"}) {
    SCOPED_TRACE(mode);
    ProcessOptions mode_options = run_options;
    mode_options.env["OE_PLUGIN_ISOLATION"] = mode;
    const ProcessResult failed = runProcess({oe.string(), "run", bad.string()}, mode_options);
    EXPECT_EQ(failed.exit_code, 1) << failed.describe();
    EXPECT_NE(
        failed.out.find("text-reverse node \"two\": list exactly one state field in `writes`"),
        std::string::npos)
        << failed.describe();
    EXPECT_NE(failed.out.find("word-count node \"unset\": args.text must be a string"),
              std::string::npos)
        << failed.describe();
  }
}

}  // namespace
}  // namespace oe::abi_test
