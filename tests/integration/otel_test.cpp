// OpenTelemetry export end to end (issue 14, item 5): the real `oe` sends a run's trace as
// OTLP/HTTP JSON to a local receiver (a real HTTP server on port 0 that records the POSTs), with
// a span per node attempt under the run span and a `chat` span per LLM call from the fake
// OpenAI server; a collector that refuses or is down costs a warning, never the run.
#include <signal.h>
#include <sys/wait.h>

#include <map>

#include "live_oe.hpp"
#include "oe_fixture.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

// One tool that works, one that fails its first attempt (a marker file says it ran), one that
// always fails, and an agent calling the LLM.
constexpr std::string_view kTracedExperience = R"(name: traced
version: 0.1.0
state:
  schema:
    ok: {type: boolean}
    flaky: {type: boolean}
    answer: {type: string}
graph:
  nodes:
    - {id: works, kind: tool, impl: ./tools/ok.sh, writes: [ok]}
    - {id: flaky, kind: tool, impl: ./tools/flaky.sh, writes: [flaky],
       on_error: {policy: retry, attempts: 2, base_ms: 0}}
    - {id: broken, kind: tool, impl: ./tools/broken.sh}
    - {id: ask, kind: agent, prompt: prompts/ask.md, writes: [answer]}
  edges: [{from: works, to: ask}]
)";

class OtelTest : public OeTest {
 protected:
  void SetUp() override {
    receiver_.setHandler(
        [](const RecordedRequest&) { return FakeLlmServer::json(200, json::object()); });
    llm_.setHandler([](const RecordedRequest&) {
      return FakeLlmServer::openAiText("forty-two", 11, 5, "stop", "gpt-4o-2024-11-20");
    });
    writeExperience(kTracedExperience);
    writeExecutable("tools/ok.sh",
                    "#!/bin/sh\ncat >/dev/null\necho '{\"state_delta\":{\"ok\":true}}'\n");
    writeExecutable("tools/flaky.sh", R"(#!/bin/sh
cat >/dev/null
marker="$(dirname "$0")/flaky.ran"
if [ ! -f "$marker" ]; then touch "$marker"; echo 'first attempt fails' >&2; exit 1; fi
echo '{"state_delta":{"flaky":true}}'
)");
    writeExecutable("tools/broken.sh",
                    "#!/bin/sh\ncat >/dev/null\necho 'broken on purpose' >&2\nexit 3\n");
    dir_.write("prompts/ask.md", "What is six times seven?");
  }
  std::map<std::string, std::string> env(const std::string& endpoint) {
    auto vars = openAiServerEnv(llm_);
    vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint;
    vars["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "";
    vars["OTEL_SDK_DISABLED"] = "";
    vars["OTEL_SERVICE_NAME"] = "oe-test";
    return vars;
  }
  ProcessResult run(std::vector<std::string> extra,
                    const std::map<std::string, std::string>& vars) {
    std::vector<std::string> args = {"run", dir_.path().string(), "--json", "--no-cache"};
    args.insert(args.end(), extra.begin(), extra.end());
    return oe(args, vars);
  }
  // Every span the receiver got, from every POST.
  std::vector<json> spans() {
    std::vector<json> out;
    for (const auto& request : receiver_.requests()) {
      EXPECT_EQ(request.path, "/v1/traces");
      EXPECT_EQ(request.header("content-type"), "application/json");
      const json body = request.json();
      for (const json& s : body["resourceSpans"][0]["scopeSpans"][0]["spans"]) {
        out.push_back(s);
      }
    }
    return out;
  }
  static json attribute(const json& span, const std::string& key) {
    for (const json& a : span["attributes"]) {
      if (a["key"] == key) {
        return a["value"];
      }
    }
    return nullptr;
  }
  static std::vector<json> named(const std::vector<json>& all, const std::string& name) {
    std::vector<json> out;
    for (const json& s : all) {
      if (s["name"] == name) {
        out.push_back(s);
      }
    }
    return out;
  }

  FakeLlmServer receiver_;
  FakeLlmServer llm_;
};

TEST_F(OtelTest, ARunsTraceArrivesWithASpanPerNodeAttemptAndLlmCall) {
  const auto r = run({"--otel"}, env(receiver_.baseUrl()));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;  // `broken` fails: the run is partial
  const json out = json::parse(r.out);
  EXPECT_EQ(out["status"], "partial");
  const auto all = spans();
  ASSERT_EQ(all.size(), 7u) << r.err;  // run, works, flaky x2, broken, ask, chat

  const auto body = receiver_.requests()[0].json();
  EXPECT_EQ(body["resourceSpans"][0]["resource"]["attributes"][0],
            json({{"key", "service.name"}, {"value", {{"stringValue", "oe-test"}}}}));

  const auto runs = named(all, "invoke_workflow traced");
  ASSERT_EQ(runs.size(), 1u);
  const json& root = runs[0];
  EXPECT_FALSE(root.contains("parentSpanId"));
  EXPECT_EQ(attribute(root, "oe.run.id")["stringValue"], out["run_id"]);
  EXPECT_EQ(attribute(root, "oe.run.status")["stringValue"], "partial");
  const std::string trace = root["traceId"];
  EXPECT_EQ(trace.size(), 32u);
  for (const json& s : all) {
    EXPECT_EQ(s["traceId"], trace);
    EXPECT_EQ(s["spanId"].get<std::string>().size(), 16u);
    EXPECT_TRUE(s["startTimeUnixNano"].is_string());
    EXPECT_LE(std::stoull(s["startTimeUnixNano"].get<std::string>()),
              std::stoull(s["endTimeUnixNano"].get<std::string>()));
  }

  // One span per node attempt, each a child of the run span.
  for (const char* name : {"execute_tool works", "execute_tool broken", "invoke_agent ask"}) {
    const auto found = named(all, name);
    ASSERT_EQ(found.size(), 1u) << name;
    EXPECT_EQ(found[0]["parentSpanId"], root["spanId"]) << name;
    EXPECT_EQ(attribute(found[0], "oe.attempt")["intValue"], "1") << name;
  }
  const json broken = named(all, "execute_tool broken")[0];
  EXPECT_EQ(broken["status"]["code"], 2);
  EXPECT_NE(broken["status"]["message"].get<std::string>().find("broken on purpose"),
            std::string::npos)
      << broken.dump();
  EXPECT_EQ(named(all, "execute_tool works")[0]["status"]["code"], 0);

  // The retry: two spans, the first failed.
  const auto flaky = named(all, "execute_tool flaky");
  ASSERT_EQ(flaky.size(), 2u);
  std::map<std::string, json> by_attempt;
  for (const json& s : flaky) {
    EXPECT_EQ(s["parentSpanId"], root["spanId"]);
    by_attempt[attribute(s, "oe.attempt")["intValue"]] = s;
  }
  ASSERT_EQ(by_attempt.size(), 2u);
  EXPECT_EQ(by_attempt["1"]["status"]["code"], 2);
  EXPECT_EQ(by_attempt["2"]["status"]["code"], 0);
  EXPECT_NE(by_attempt["1"]["spanId"], by_attempt["2"]["spanId"]);

  // The LLM call: a chat span under the agent's attempt, with the GenAI attributes.
  const json agent = named(all, "invoke_agent ask")[0];
  EXPECT_EQ(attribute(agent, "gen_ai.operation.name")["stringValue"], "invoke_agent");
  EXPECT_EQ(attribute(agent, "gen_ai.agent.name")["stringValue"], "ask");
  const auto chats = named(all, "chat gpt-4o-2024-11-20");
  ASSERT_EQ(chats.size(), 1u);
  const json& chat = chats[0];
  EXPECT_EQ(chat["parentSpanId"], agent["spanId"]);
  EXPECT_EQ(chat["kind"], 3);
  EXPECT_EQ(attribute(chat, "gen_ai.operation.name")["stringValue"], "chat");
  EXPECT_EQ(attribute(chat, "gen_ai.provider.name")["stringValue"], "openai");
  EXPECT_EQ(attribute(chat, "gen_ai.request.model")["stringValue"], "gpt-4o-2024-11-20");
  EXPECT_EQ(attribute(chat, "gen_ai.usage.input_tokens")["intValue"], "11");
  EXPECT_EQ(attribute(chat, "gen_ai.usage.output_tokens")["intValue"], "5");
  EXPECT_EQ(
      attribute(chat, "gen_ai.response.finish_reasons")["arrayValue"]["values"][0]["stringValue"],
      "stop");
  EXPECT_TRUE(attribute(chat, "oe.llm.cost_usd").contains("doubleValue"));  // a shipped price
  EXPECT_EQ(llm_.requestCount(), 1u);
}

TEST_F(OtelTest, TheEnvironmentAloneTurnsItOnAndTheFlagIsNotNeeded) {
  const auto r = run({}, env(receiver_.baseUrl()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(named(spans(), "invoke_workflow traced").size(), 1u);
}

TEST_F(OtelTest, NothingIsSentWithoutTheFlagOrTheEnvironment) {
  auto vars = env("");
  const auto r = run({}, vars);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(receiver_.requestCount(), 0u);
  vars = env(receiver_.baseUrl());
  vars["OTEL_SDK_DISABLED"] = "true";
  EXPECT_EQ(run({}, vars).exit_code, 1);
  EXPECT_EQ(receiver_.requestCount(), 0u);
}

TEST_F(OtelTest, ACacheReplayIsASpanMarkedAsAHit) {
  auto vars = env(receiver_.baseUrl());
  std::vector<std::string> args = {"run", dir_.path().string(), "--json"};
  ASSERT_EQ(oe(args, vars).exit_code, 1);
  const size_t first = spans().size();
  ASSERT_EQ(oe(args, vars).exit_code, 1);  // works, flaky and ask replay; broken runs again
  const auto all = spans();
  std::vector<json> second(all.begin() + static_cast<std::ptrdiff_t>(first), all.end());
  const auto works = named(second, "execute_tool works");
  ASSERT_EQ(works.size(), 1u);
  EXPECT_EQ(attribute(works[0], "oe.cache.hit")["boolValue"], true);
  EXPECT_TRUE(named(second, "chat gpt-4o-2024-11-20").empty());  // no LLM call on a replay
  EXPECT_EQ(llm_.requestCount(), 1u);
}

TEST_F(OtelTest, ARefusingCollectorIsAWarningNotAFailure) {
  receiver_.setHandler(
      [](const RecordedRequest&) { return FakeLlmServer::serverError(500, "collector broke"); });
  const auto r = run({"--otel"}, env(receiver_.baseUrl()));
  EXPECT_EQ(r.exit_code, 1) << r.err;  // partial, as without telemetry
  EXPECT_EQ(json::parse(r.out)["status"], "partial");
  EXPECT_NE(r.err.find("oe: warning: OpenTelemetry: could not send"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HTTP 500"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("7 not delivered"), std::string::npos) << r.err;
}

TEST_F(OtelTest, ACollectorThatIsDownIsAWarningNotAFailure) {
  FakeLlmServer gone;
  const std::string endpoint = gone.baseUrl();
  gone.stop();
  writeExperience(R"(name: fine
version: 0.1.0
state: {schema: {ok: {type: boolean}}}
graph:
  nodes: [{id: works, kind: tool, impl: ./tools/ok.sh, writes: [ok]}]
  edges: []
)");
  const auto r = run({"--otel"}, env(endpoint));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["status"], "success");
  EXPECT_NE(r.err.find("could not send 2 spans to the OTLP collector at " + endpoint),
            std::string::npos)
      << r.err;
}

TEST_F(OtelTest, SigintStillSendsTheTrace) {
  writeExperience(R"(name: hang
version: 0.1.0
state: {schema: {ok: {type: boolean}}}
graph:
  nodes: [{id: sleeper, kind: tool, impl: ./tools/hang.sh, writes: [ok]}]
  edges: []
)");
  writeExecutable("tools/hang.sh", "#!/bin/sh\necho started >&2\nexec sleep 600\n");
  auto vars = env(receiver_.baseUrl());
  vars["OE_STILL_RUNNING_INTERVAL_MS"] = "20";
  LiveOe live({"run", dir_.path().string(), "--otel"}, vars, dir_.path());
  ASSERT_TRUE(live.waitForStderr("still running: sleeper")) << live.err();
  live.signal(SIGINT);
  const int status = live.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << live.err();
  const auto all = spans();
  const auto root = named(all, "invoke_workflow hang");
  ASSERT_EQ(root.size(), 1u) << live.err();
  EXPECT_EQ(attribute(root[0], "oe.run.status")["stringValue"], "interrupted");
  EXPECT_EQ(root[0]["status"]["code"], 2);
  const auto sleeper = named(all, "execute_tool sleeper");
  ASSERT_EQ(sleeper.size(), 1u);
  EXPECT_EQ(sleeper[0]["status"]["code"], 2);
}

}  // namespace
}  // namespace oe::test
