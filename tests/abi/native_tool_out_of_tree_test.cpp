// A native tool as a third party builds it: install this build to a prefix, build
// examples/native-tool against it with find_package(OpenExpertiseSDK) + oe_add_native_tool, and
// run it with the installed oe, whose host gives the tool its call context (log, is_cancelled).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "abi/install.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

namespace fs = std::filesystem;

// Every event of every run log under <experience>/.openexpertise/runs/.
std::vector<nlohmann::json> runEvents(const fs::path& experience) {
  std::vector<nlohmann::json> events;
  const fs::path runs = experience / ".openexpertise" / "runs";
  if (!fs::is_directory(runs)) {
    return events;
  }
  for (const auto& entry : fs::directory_iterator(runs)) {
    if (entry.path().extension() != ".jsonl") {
      continue;
    }
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      auto event = nlohmann::json::parse(line, nullptr, false);
      if (!event.is_discarded()) {
        events.push_back(std::move(event));
      }
    }
  }
  return events;
}

bool hasEvent(const std::vector<nlohmann::json>& events, const nlohmann::json& subset) {
  for (const auto& event : events) {
    bool matches = true;
    for (const auto& [key, value] : subset.items()) {
      matches = matches && event.contains(key) && event[key] == value;
    }
    if (matches) {
      return true;
    }
  }
  return false;
}

std::string describe(const std::vector<nlohmann::json>& events) {
  std::ostringstream out;
  for (const auto& event : events) {
    out << event.dump() << '\n';
  }
  return out.str();
}

TEST(NativeToolOutOfTree, BuildsAgainstInstalledSdkAndUsesItsCallContext) {
  TempDir tmp;
  const fs::path prefix = tmp.path() / "prefix";
  const fs::path build = tmp.path() / "build";
  const ProcessOptions options = isolatedOptions(tmp.path());
  ASSERT_NO_FATAL_FAILURE(installThisBuild(prefix, options));
  const fs::path package = prefix / OE_INSTALL_LIBDIR / "cmake" / "OpenExpertiseSDK";
  ASSERT_TRUE(fs::exists(package / "oe_native_tool.version")) << package;

  const fs::path source = fs::path(OE_SOURCE_DIR) / "examples" / "native-tool";
  const ProcessResult configure =
      runProcess({OE_CMAKE_COMMAND, "-S", source.string(), "-B", build.string(), "-G",
                  OE_CMAKE_GENERATOR, "-DCMAKE_BUILD_TYPE=Release",
                  "-DCMAKE_C_COMPILER=" OE_C_COMPILER, "-DCMAKE_PREFIX_PATH=" + prefix.string(),
                  "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF", "-DCMAKE_COMPILE_WARNING_AS_ERROR=ON"},
                 options);
  ASSERT_EQ(configure.exit_code, 0) << configure.describe();
  EXPECT_NE(runProcess({OE_CMAKE_COMMAND, "-N", "-LA", build.string()}, options)
                .out.find("OpenExpertiseSDK_DIR:PATH=" + package.string()),
            std::string::npos);
  const ProcessResult compile = runProcess({OE_CMAKE_COMMAND, "--build", build.string()}, options);
  ASSERT_EQ(compile.exit_code, 0) << compile.describe();

  // The build stages a runnable copy of the example, the tool built into it.
  const fs::path staged = build / "examples" / "native-tool";
  const fs::path library = staged / "tools" / "checksum.so";
  ASSERT_TRUE(fs::exists(library)) << compile.describe();
  ASSERT_TRUE(fs::exists(staged / "experience.yaml"));
  EXPECT_EQ(exportedSymbols(library), std::vector<std::string>{"oe_tool_invoke_v2"});

  const fs::path oe = prefix / "bin" / "oe";
  const fs::path experience = tmp.path() / "checksum";
  fs::copy(staged, experience, fs::copy_options::recursive);
  const ProcessResult run = runProcess({oe.string(), "run", experience.string()}, options);
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  // The tool's host->log(call, ...) line, shown by oe run's progress under its node (node.log
  // events are live only: the run's event log does not keep them).
  EXPECT_NE(run.err.find("  log     checksum: crc32 96c05ec1 of 19 bytes\n"), std::string::npos)
      << run.describe();

  // A checksum of 10^15 bytes, far longer than any test, under timeout_ms: 300. It ends only
  // because the tool polls is_cancelled on its call context.
  const fs::path endless = tmp.path() / "endless";
  fs::create_directories(endless / "tools");
  fs::copy_file(library, endless / "tools" / "checksum.so");
  writeFile(endless / "experience.yaml",
            "name: endless-checksum\n"
            "description: A native tool stopped by its node's timeout.\n"
            "version: 0.1.0\n"
            "state:\n"
            "  schema:\n"
            "    length: { type: number, description: bytes checksummed }\n"
            "    crc32: { type: string, description: CRC-32, 8 hex digits }\n"
            "graph:\n"
            "  nodes:\n"
            "    - id: endless\n"
            "      kind: tool\n"
            "      impl: ./tools/checksum.so\n"
            "      timeout_ms: 300\n"
            "      args: { text: \"x\", repeat: 1000000000000000 }\n"
            "      writes: [length, crc32]\n"
            "  edges: []\n");
  const ProcessResult stopped = runProcess({oe.string(), "run", endless.string()}, options);
  // If is_cancelled never turned true for the tool, oe would wait for it until runProcess kills
  // it after options.timeout.
  ASSERT_TRUE(stopped.exited) << "the tool was not stopped by its timeout\n" << stopped.describe();
  EXPECT_NE(stopped.exit_code, 0) << stopped.describe();
  EXPECT_NE(
      (stopped.out + stopped.err).find("Node \"endless\" timed out after 300 ms (timeout_ms)"),
      std::string::npos)
      << stopped.describe();
  // Its host->emit_event(call, "node.activity", ...) is kept in the run's event log.
  const auto stopped_events = runEvents(endless);
  EXPECT_TRUE(hasEvent(stopped_events, {{"type", "node.activity"},
                                        {"node_id", "endless"},
                                        {"activity", "checksumming 1000000000000000 bytes"}}))
      << describe(stopped_events);
}

}  // namespace
}  // namespace oe::abi_test
