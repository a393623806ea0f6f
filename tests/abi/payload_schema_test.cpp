// The JSON payloads of real runs, held to the SDK's schemas (sdk/schema/*.json) where they cross
// the boundary: the `oe` binary runs first-party plugins (tool, agent, openai-llm) each behind
// the tap fixture (fixtures/tap_plugin.cpp), which logs every payload it forwards, so what is
// checked is the host's own requests and configs and the plugins' own answers, byte for byte.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/process.hpp"
#include "payload_schema.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::abi_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using sdk_test::PayloadSchema;

struct Logged {
  std::string what;
  std::string kind;
  std::string text;
};

class PayloadSchemas : public ::testing::Test {
 protected:
  // A folder for the plugin path holding a copy of the tap, set to wrap a copy of the built
  // plugin `stem` (kept off the plugin path, so the host loads it only through the tap).
  fs::path tapFor(const std::string& stem) {
    const fs::path inner = tmp_.path() / "inner" / (stem + ".so");
    fs::create_directories(inner.parent_path());
    fs::copy_file(fs::path(OE_TEST_PLUGIN_DIR) / (stem + ".so"), inner,
                  fs::copy_options::overwrite_existing);
    const fs::path dir = tmp_.path() / ("tap_" + stem);
    fs::create_directories(dir);
    fs::copy_file(fixtureFile("tap", "tap.so"), dir / "tap.so");
    logs_.push_back(tmp_.path() / ("tap_" + stem + ".jsonl"));
    writeFile(dir / "tap.conf", inner.string() + "\n" + logs_.back().string() + "\n");
    return dir;
  }

  ProcessResult oe(const std::vector<std::string>& args, const std::vector<fs::path>& plugin_dirs,
                   const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv{OE_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOptions options;
    for (const auto& [name, value] : env) {
      options.env[name] = value;
    }
    std::string path;
    for (const fs::path& dir : plugin_dirs) {
      path += (path.empty() ? "" : ":") + dir.string();
    }
    options.env["OE_PLUGIN_PATH"] = path;
    options.env["HOME"] = tmp_.path().string();
    options.env["OE_TRUST_FILE"] = (tmp_.path() / "trust.json").string();
    options.cwd = tmp_.path();
    return runProcess(argv, options);
  }

  // The taps are not built in: a run loads them once trusted (`oe trust`, into this test's
  // store), and takes the built-in names they wrap only where the experience overrides them.
  void trust(const std::vector<fs::path>& plugin_dirs) {
    std::vector<std::string> args{"trust"};
    for (const fs::path& dir : plugin_dirs) {
      args.push_back(dir.string());
    }
    const ProcessResult r = oe(args, {});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }

  // Every payload the taps logged, in order.
  std::vector<Logged> logged() const {
    std::vector<Logged> out;
    for (const fs::path& log : logs_) {
      std::ifstream in(log);
      for (std::string line; std::getline(in, line);) {
        const json entry = json::parse(line);
        out.push_back(Logged{entry["what"], entry["kind"], entry["text"]});
      }
    }
    return out;
  }

  // Holds each logged payload whose `what` the map names to that schema, and says which of
  // them never crossed (a test that checked nothing would pass).
  static void expectFit(const std::vector<Logged>& payloads,
                        const std::map<std::string, std::string>& schema_of) {
    std::set<std::string> seen;
    for (const Logged& payload : payloads) {
      auto it = schema_of.find(payload.what);
      if (it == schema_of.end()) {
        continue;
      }
      seen.insert(payload.what);
      const PayloadSchema schema(kSchemaDir, it->second);
      ASSERT_EQ(schema.error(), "");
      const json value = json::parse(payload.text, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << payload.what << " is not JSON: " << payload.text;
      EXPECT_EQ(schema.check(value), "")
          << payload.what << " (" << payload.kind << ") does not fit " << it->second << ":\n"
          << value.dump(2);
    }
    for (const auto& [what, schema] : schema_of) {
      EXPECT_TRUE(seen.contains(what)) << "no " << what << " crossed the boundary";
    }
  }

  inline static const fs::path kSchemaDir = fs::path(OE_SOURCE_DIR) / "sdk" / "schema";
  TempDir tmp_;
  std::vector<fs::path> logs_;
};

TEST_F(PayloadSchemas, TheToolKindAndItsNativeToolExchangeWhatTheSchemasSay) {
  const fs::path experience = tmp_.path() / "exp";
  writeFile(experience / "experience.yaml", R"(name: payloads
version: 0.1.0
plugins: { override: [tool] }
state:
  schema:
    input: { type: object }
    prev: { type: object }
graph:
  nodes:
    - id: first
      kind: tool
      impl: )" + fixtureFile("echo_tool", "echo_tool.so").string() + R"(
      args: { text: "hello" }
      writes: [prev]
    - id: second
      kind: tool
      impl: )" + fixtureFile("echo_tool", "echo_tool.so").string() + R"(
      args: { text: "again", n: 2 }
      reads: [prev]
      writes: [input]
  edges:
    - { from: first, to: second }
)");
  const fs::path tap = tapFor("tool");
  trust({tap});
  const ProcessResult r = oe({"run", experience.string(), "--json"}, {tap});
  ASSERT_TRUE(r.exited) << r.describe();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  expectFit(logged(), {{"create.config", "create-config.schema.json"},
                       {"invoke.request", "invoke-request.schema.json"},
                       {"invoke.response", "invoke-response.schema.json"}});
  // What the tool plugin handed its native tool, echoed into the state.
  const json out = json::parse(r.out);
  const PayloadSchema tool_input(kSchemaDir, "tool-input.schema.json");
  EXPECT_EQ(tool_input.check(out["final_state"]["input"]), "") << out.dump(2);
  EXPECT_EQ(out["final_state"]["input"]["n"], 2);
}

TEST_F(PayloadSchemas, AnAgentTheLlmServiceAndTheProviderExchangeWhatTheSchemasSay) {
  test::FakeLlmServer server;
  server.enqueue(test::FakeLlmServer::openAiText("Hello, World!"));
  const fs::path experience = tmp_.path() / "exp";
  writeFile(experience / "prompts" / "echo.md", "Greet {{name}} in one short sentence.\n");
  writeFile(experience / "experience.yaml", R"(name: payloads
version: 0.1.0
plugins: { override: [agent, openai] }
state:
  schema:
    greeting: { type: string }
graph:
  nodes:
    - id: greet
      kind: agent
      prompt: prompts/echo.md
      args: { name: World }
      max_tokens: 200
      writes: [greeting]
  edges: []
)");
  const std::vector<fs::path> taps = {tapFor("agent"), tapFor("openai_llm")};
  trust(taps);
  const ProcessResult r =
      oe({"run", experience.string(), "--json"}, taps, test::openAiServerEnv(server));
  ASSERT_TRUE(r.exited) << r.describe();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(json::parse(r.out)["final_state"]["greeting"], "Hello, World!");
  const std::vector<Logged> payloads = logged();
  expectFit(payloads, {{"create.config", "create-config.schema.json"},
                       {"invoke.request", "invoke-request.schema.json"},
                       {"invoke.response", "invoke-response.schema.json"},
                       {"event.fields", "event-fields.schema.json"},
                       {"llm.request", "llm-request.schema.json"},
                       {"llm.response", "llm-response.schema.json"},
                       {"provider.config", "llm-provider-config.schema.json"},
                       {"provider.request", "llm-request.schema.json"},
                       {"provider.response", "llm-response.schema.json"},
                       {"http.request", "http-request.schema.json"},
                       {"http.response", "http-response.schema.json"}});
  for (const Logged& payload : payloads) {
    if (payload.what == "provider.request") {
      EXPECT_TRUE(json::parse(payload.text).contains("model"))
          << "the host resolves the model before the provider sees the request";
    }
  }
}

}  // namespace
}  // namespace oe::abi_test
