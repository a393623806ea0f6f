// Flow control across machines (issue 15, item 4), end to end: four real `oe worker` processes
// serve one run whose agent nodes call a real local server speaking the OpenAI protocol. The
// run's runtime.limits and runtime.budget are counted in PostgreSQL, so they hold across the
// workers as they do in one process.
#include <memory>

#include "oe_fixture.hpp"
#include "support/fake_llm_server.hpp"
#include "support/pg_test_db.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

class ScaleOutLlm : public OeTest {
 protected:
  // `count` independent agent nodes a0..a<count-1>, each writing its own field.
  void writeAgents(int count, const std::string& runtime, int max_tokens = 0) {
    std::string yaml = "name: fleet\nversion: 0.1.0\nstate:\n  schema:\n";
    for (int i = 0; i < count; ++i) {
      yaml += "    out" + std::to_string(i) + ": {type: string}\n";
    }
    yaml += "graph:\n  nodes:\n";
    for (int i = 0; i < count; ++i) {
      yaml += "    - {id: a" + std::to_string(i) +
              ", kind: agent, prompt: prompts/p.md, writes: [out" + std::to_string(i) +
              "], args: {n: " + std::to_string(i) + "}" +
              (max_tokens > 0 ? ", max_tokens: " + std::to_string(max_tokens) : "") + "}\n";
    }
    yaml += "  edges: []\n" + runtime;
    writeExperience(yaml);
    dir_.write("prompts/p.md", "hi");
  }

  void startWorkers(int count) {
    auto env = openAiServerEnv(server_);
    env["OE_PLUGIN_PATH"] = "";
    for (int i = 0; i < count; ++i) {
      const std::string id = "w" + std::to_string(i);
      workers_.push_back(std::make_unique<BackgroundProcess>(
          std::vector<std::string>{OE_EXE, "worker", "--store", db_.url(), "--id", id,
                                   "--concurrency", "8"},
          env, dir_.path(), dir_.path() / id));
    }
  }

  void TearDown() override {
    for (auto& worker : workers_) {
      worker->signal(SIGTERM);
      EXPECT_EQ(worker->wait(), 0) << worker->err();
    }
  }

  json runWithWorkers(int* exit_code) {
    auto env = openAiServerEnv(server_);
    auto r = oe({"run", dir_.path().string(), "--json", "-q", "--store", db_.url(), "--workers"},
                env);
    *exit_code = r.exit_code;
    last_stderr_ = r.err;
    auto parsed = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "stdout: " << r.out << "\nstderr: " << r.err;
    return parsed;
  }

  FakeLlmServer server_;
  PgTestDb db_;
  std::vector<std::unique_ptr<BackgroundProcess>> workers_;
};

TEST_F(ScaleOutLlm, FourWorkersAgainstAProviderRefusingAboveFiveInFlightSeeNoRefusal) {
  // The provider answers 429 to a sixth request in flight; each answer takes 30 ms, so 32 slots
  // over four workers would overlap far beyond five without a shared limit.
  server_.rejectAbove(5);
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::delayed(FakeLlmServer::openAiText("ok"), std::chrono::milliseconds(30));
  });
  writeAgents(48, "runtime:\n  concurrency: 32\n  limits:\n    openai: {max_in_flight: 5}\n");
  startWorkers(4);
  int code = -1;
  json out = runWithWorkers(&code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["nodes"]["ran"], 48);
  EXPECT_EQ(out["final_state"]["out47"], "ok");
  EXPECT_EQ(server_.requestCount(), 48U);  // no 429, so no call was sent twice
  EXPECT_LE(server_.peakInFlight(), 5U);
  // The workers' calls are the run's: counted in the coordinator's summary.
  EXPECT_EQ(out["usage"]["llm_calls"], 48) << out.dump();
  // The calls were spread over the workers, not served by one.
  auto conn = pg::Connection::open(db_.url());
  ASSERT_TRUE(conn);
  auto owners = (*conn)->exec(
      "SELECT count(DISTINCT lease_owner) FROM oe_attempts WHERE status = 'done'");
  ASSERT_TRUE(owners) << owners.error().message;
  EXPECT_GE(owners->int64(0, 0), 2);
}

TEST_F(ScaleOutLlm, ABudgetSharedByFourWorkersIsNeverExceeded) {
  // Each call reserves 16 + 8 + 2 + 20 = 46 tokens (llm_run_test's arithmetic) and spends 10.
  // A budget of 200 tokens lets at most 16 calls out: spent + held + 46 <= 200.
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::delayed(FakeLlmServer::openAiText("ok", 7, 3),
                                  std::chrono::milliseconds(20));
  });
  writeAgents(40, "runtime:\n  concurrency: 32\n  budget: {max_tokens: 200}\n", 20);
  startWorkers(4);
  int code = -1;
  json out = runWithWorkers(&code);
  EXPECT_NE(code, 0) << "40 calls of 10 tokens cannot fit a budget of 200";
  EXPECT_GE(server_.requestCount(), 1U);
  EXPECT_LE(server_.requestCount() * 10, 200U);
  auto conn = pg::Connection::open(db_.url());
  ASSERT_TRUE(conn);
  auto spent = (*conn)->exec("SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM oe_budget");
  ASSERT_TRUE(spent) << spent.error().message;
  EXPECT_EQ(spent->int64(0, 0), static_cast<int64_t>(server_.requestCount() * 10));
  EXPECT_LE(spent->int64(0, 0), 200);
  // What the workers spent is in the coordinator's summary and in each node's metrics (the
  // node.finished events the coordinator logged).
  const auto calls = static_cast<int64_t>(server_.requestCount());
  EXPECT_EQ(out["usage"]["llm_calls"], calls) << out.dump();
  EXPECT_EQ(out["usage"]["input_tokens"], calls * 7) << out.dump();
  EXPECT_EQ(out["usage"]["output_tokens"], calls * 3) << out.dump();
  int64_t metered = 0;
  auto finished = (*conn)->exec(
      "SELECT line FROM oe_events WHERE line::jsonb->>'type' = 'node.finished'");
  ASSERT_TRUE(finished) << finished.error().message;
  for (int i = 0; i < finished->size(); ++i) {
    const json event = json::parse(finished->text(i, 0));
    if (event.contains("metrics") && event["metrics"].contains("tokens_in")) {
      EXPECT_EQ(event["metrics"]["tokens_in"], 7) << event.dump();
      EXPECT_EQ(event["metrics"]["tokens_out"], 3) << event.dump();
      ++metered;
    }
  }
  EXPECT_EQ(metered, calls);
  // The refused nodes say why.
  EXPECT_NE(out.dump().find("budget"), std::string::npos) << out.dump();
}

}  // namespace
}  // namespace oe::test
