// EventLog and readEventLog against real files: upstream's events.test (reference §11.3), the
// exact line format of every event type (§4.2), escaping, threads, and torn lines.
#include "oe/events/event_log.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/temp_dir.hpp"

namespace oe::events {
namespace {

const std::regex kIsoTs(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");

std::vector<std::string> readLines(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

std::string readAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replaces the value of "ts" with TS so whole lines can be compared.
std::string maskTs(const std::string& line) {
  static const std::regex ts(R"("ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")");
  return std::regex_replace(line, ts, "\"ts\":TS");
}

class EventLogTest : public ::testing::Test {
 protected:
  std::unique_ptr<EventLog> open(std::string run_id = "run-1") {
    auto log = EventLog::open(path_, std::move(run_id));
    EXPECT_TRUE(log.ok()) << (log.ok() ? "" : log.error().message);
    return log.ok() ? std::move(*log) : nullptr;
  }

  test::TempDir dir_;
  std::filesystem::path path_ = dir_ / ".openexpertise/runs/run-1.jsonl";
};

TEST(EventClockTest, NowIsoIsUtcWithMilliseconds) {
  const std::string ts = nowIso();
  EXPECT_TRUE(std::regex_match(ts, kIsoTs)) << ts;
}

TEST(EventClockTest, RunIdsAreLowercaseUuidV4AndUnique) {
  const std::regex uuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    const std::string id = newRunId();
    EXPECT_TRUE(std::regex_match(id, uuid4)) << id;
    EXPECT_TRUE(std::regex_match(id, std::regex("^[0-9a-f-]+$")));  // upstream's MCP test
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST_F(EventLogTest, BusDeliversInOrderToEveryListener) {
  auto log = open();
  std::vector<std::string> got;
  log->subscribe([&](const Event& e) { got.push_back("A:" + std::string(e.type())); });
  log->subscribe([&](const Event& e) { got.push_back("B:" + std::string(e.type())); });
  log->runStarted(Json::object());
  log->nodeReady("x", std::nullopt);
  EXPECT_EQ(got, (std::vector<std::string>{"A:run.started", "B:run.started", "A:node.ready",
                                           "B:node.ready"}));
}

TEST_F(EventLogTest, ListenerReceivesTheEventAsWritten) {
  auto log = open();
  std::vector<Json> got;
  log->subscribe([&](const Event& e) { got.push_back(e.json()); });
  log->nodeStarted("x", std::string("collect"));
  log->runStarted(Json::object());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["type"], "node.started");
  EXPECT_EQ(got[0]["run_id"], "run-1");
  EXPECT_EQ(got[0]["node_id"], "x");
  EXPECT_EQ(got[0]["phase"], "collect");
  EXPECT_EQ(got[0], Json::parse(readLines(path_)[0]));
}

TEST_F(EventLogTest, UnsubscribeStopsDeliveryAndIsIdempotent) {
  auto log = open();
  int calls = 0;
  const size_t id = log->subscribe([&](const Event&) { ++calls; });
  log->nodeReady("x", std::nullopt);
  log->unsubscribe(id);
  log->unsubscribe(id);
  log->nodeReady("x", std::nullopt);
  EXPECT_EQ(calls, 1);
}

TEST_F(EventLogTest, AThrowingListenerIsReportedAndTheOthersStillRun) {
  auto log = open();
  int after = 0;
  log->subscribe([](const Event&) { throw std::runtime_error("listener broke"); });
  log->subscribe([&](const Event&) { ++after; });
  ::testing::internal::CaptureStderr();
  log->nodeReady("x", std::nullopt);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "event listener error: listener broke\n");
  EXPECT_EQ(after, 1);
  EXPECT_EQ(readLines(path_).size(), 1u);
}

TEST_F(EventLogTest, AListenerMayUnsubscribeItselfAndEmit) {
  auto log = open();
  size_t id = 0;
  int calls = 0;
  id = log->subscribe([&](const Event& e) {
    ++calls;
    log->unsubscribe(id);
    if (e.type() == "node.ready") {
      log->nodeStarted("x", std::nullopt);
    }
  });
  log->nodeReady("x", std::nullopt);
  log->nodeReady("y", std::nullopt);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(readLines(path_).size(), 3u);
}

TEST_F(EventLogTest, AListenerThatWantsSomeTypesSeesExactlyThoseInOrder) {
  auto log = open();
  std::vector<std::string> got;
  log->subscribe([&](const Event& e) {
    if (e.type() == "node.failed") {
      got.push_back("failed " + std::string(e.nodeId()) + ": " +
                    e.json()["error"].get<std::string>());
    } else if (e.type() == "node.finished" || e.type() == "node.tokens") {
      got.push_back(std::string(e.type()) + " " + std::string(e.nodeId()) +
                    (e.cached() ? " cached" : ""));
    }
  });
  log->runStarted(Json::object());
  log->nodeReady("a", std::nullopt);
  log->nodeStarted("a", std::nullopt);
  log->stateWrite("a", "f");
  log->nodeFinished("a", std::nullopt, nullptr);
  log->nodeFinished("b", std::string("p"), nullptr, /*cached=*/true);
  ASSERT_TRUE(log->nodeEvent("node.tokens", "c", R"({"input_tokens":1})").ok());
  log->nodeFailed("c", "boom", std::nullopt);
  log->nodeSkipped("d", "when: condition false", std::nullopt);
  log->runFinished("failed");
  EXPECT_EQ(got, (std::vector<std::string>{"node.finished a", "node.finished b cached",
                                           "node.tokens c", "failed c: boom"}));
}

// The fields the bus hands out without parsing are those of the line, for every event type.
TEST_F(EventLogTest, AnEventsFieldsAreThoseOfItsLine) {
  auto log = open();
  std::vector<std::string> mismatches;
  size_t seen = 0;
  log->subscribe([&](const Event& e) {
    const Json& j = e.json();
    const std::string node_id = j.value("node_id", "");
    if (e.type() != j["type"].get<std::string>() || e.nodeId() != node_id ||
        e.cached() != j.value("cached", false) || e.phase() != j.value("phase", "") ||
        e.line() != readLines(path_)[seen]) {
      mismatches.push_back(std::string(e.line()));
    }
    ++seen;
  });
  const Json metrics = {{"tokens", 3}};
  log->runStarted(Json{{"x", 1}}, Json{{"chain_id", "c"}});
  log->nodeReady("a", std::string("p"));
  log->nodeStarted("a", std::nullopt);
  log->stateWrite("a", "f");
  log->nodeFinished("a", std::string("p"), &metrics);
  log->nodeFinished("b", std::nullopt, nullptr, /*cached=*/true);
  log->nodeFailed("c", "bad \"quote\"\n", std::string("p"));
  log->nodeSkipped("d", "why", std::nullopt);
  ASSERT_TRUE(log->nodeEvent("node.activity", "e", "{\"activity\":\"x\"}").ok());
  ASSERT_TRUE(log->nodeEvent("my.event", "e", R"({"phase":"plug"})").ok());
  log->runFinished("success");
  EXPECT_EQ(seen, 11u);
  EXPECT_TRUE(mismatches.empty()) << mismatches.front();
}

TEST_F(EventLogTest, EveryListenerOfAnEventSharesOneParse) {
  auto log = open();
  std::vector<const Json*> parsed;
  log->subscribe([&](const Event& e) { parsed.push_back(&e.json()); });
  log->subscribe([](const Event&) { throw std::runtime_error("after parsing"); });
  log->subscribe([&](const Event& e) { parsed.push_back(&e.json()); });
  ::testing::internal::CaptureStderr();
  log->nodeStarted("x", std::nullopt);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "event listener error: after parsing\n");
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0], parsed[1]);
}

TEST_F(EventLogTest, AListenerSubscribedByAListenerSeesOnlyLaterEvents) {
  auto log = open();
  std::vector<std::string> late;
  bool added = false;
  log->subscribe([&](const Event&) {
    if (!added) {
      added = true;
      log->subscribe([&](const Event& e) { late.push_back(std::string(e.nodeId())); });
    }
  });
  log->nodeReady("first", std::nullopt);
  log->nodeReady("second", std::nullopt);
  EXPECT_EQ(late, (std::vector<std::string>{"second"}));
}

TEST_F(EventLogTest, AListenerUnsubscribedDuringAnEventStillGetsThatOneOnly) {
  auto log = open();
  std::vector<std::string> second_saw;
  size_t second = 0;
  log->subscribe([&](const Event&) { log->unsubscribe(second); });
  second = log->subscribe([&](const Event& e) { second_saw.push_back(std::string(e.nodeId())); });
  log->nodeReady("first", std::nullopt);
  log->nodeReady("second", std::nullopt);
  EXPECT_EQ(second_saw, (std::vector<std::string>{"first"}));
}

TEST_F(EventLogTest, SinkWritesOneJsonLinePerEvent) {
  auto log = open();
  log->runStarted(Json::object());
  log->nodeReady("x", std::nullopt);
  const std::string text = readAll(path_);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  auto lines = readLines(path_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(Json::parse(lines[0])["type"], "run.started");
  EXPECT_EQ(Json::parse(lines[1])["node_id"], "x");
}

TEST_F(EventLogTest, EveryEventTypeHasUpstreamFieldOrder) {
  auto log = open("5f0c");
  const Json metrics = {{"tokens_in", 12}, {"tokens_out", 7}};
  log->runStarted(Json{{"topic", "cats"}});
  log->nodeReady("greet", std::nullopt);
  log->nodeStarted("greet", std::string("collect"));
  ASSERT_TRUE(log->nodeEvent("node.activity", "greet",
                             R"({"activity":"calling claude-sonnet-4-6"})").ok());
  ASSERT_TRUE(log->nodeEvent("node.tokens", "greet",
                             R"({"input_tokens":12,"output_tokens":7,"model":"m"})").ok());
  log->stateWrite("greet", "greeting");
  log->nodeFinished("greet", std::nullopt, &metrics);
  log->nodeFinished("plain", std::string("p"), nullptr);
  log->nodeFailed("x", "boom", std::nullopt);
  log->nodeFailed("x", "boom", std::string("p"));
  log->nodeSkipped("gated", "when: condition false", std::nullopt);
  log->nodeSkipped("gated", "predecessor failed or skipped", std::string("p"));
  log->runFinished("success");
  std::vector<std::string> lines;
  for (const std::string& line : readLines(path_)) {
    lines.push_back(maskTs(line));
  }
  const std::vector<std::string> expected = {
      R"({"type":"run.started","run_id":"5f0c","ts":TS,"args":{"topic":"cats"}})",
      R"({"type":"node.ready","run_id":"5f0c","node_id":"greet","ts":TS})",
      R"({"type":"node.started","run_id":"5f0c","node_id":"greet","ts":TS,"phase":"collect"})",
      R"({"type":"node.activity","run_id":"5f0c","node_id":"greet","ts":TS,)"
      R"("activity":"calling claude-sonnet-4-6"})",
      R"({"type":"node.tokens","run_id":"5f0c","node_id":"greet","ts":TS,)"
      R"("input_tokens":12,"output_tokens":7,"model":"m"})",
      R"({"type":"state.write","run_id":"5f0c","node_id":"greet","field":"greeting","ts":TS})",
      R"({"type":"node.finished","run_id":"5f0c","node_id":"greet","ts":TS,)"
      R"("metrics":{"tokens_in":12,"tokens_out":7}})",
      R"({"type":"node.finished","run_id":"5f0c","node_id":"plain","ts":TS,"phase":"p"})",
      R"({"type":"node.failed","run_id":"5f0c","node_id":"x","ts":TS,"error":"boom"})",
      R"({"type":"node.failed","run_id":"5f0c","node_id":"x","ts":TS,"error":"boom",)"
      R"("phase":"p"})",
      R"({"type":"node.skipped","run_id":"5f0c","node_id":"gated","ts":TS,)"
      R"("reason":"when: condition false"})",
      R"({"type":"node.skipped","run_id":"5f0c","node_id":"gated","ts":TS,)"
      R"("reason":"predecessor failed or skipped","phase":"p"})",
      R"({"type":"run.finished","run_id":"5f0c","ts":TS,"status":"success"})",
  };
  EXPECT_EQ(lines, expected);
}

TEST_F(EventLogTest, ExtraMembersFollowTheStandardFields) {
  auto log = open("r");
  log->runStarted(Json::object(), Json{{"experience", "demo"}, {"oe_version", "0.1.0"}});
  log->runFinished("partial", Json{{"duration_ms", 12}});
  log->runFinished("failed", Json::array({1}));  // not an object: ignored
  auto lines = readLines(path_);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(maskTs(lines[0]), R"({"type":"run.started","run_id":"r","ts":TS,"args":{},)"
                              R"("experience":"demo","oe_version":"0.1.0"})");
  EXPECT_EQ(maskTs(lines[1]),
            R"({"type":"run.finished","run_id":"r","ts":TS,"status":"partial","duration_ms":12})");
  EXPECT_EQ(maskTs(lines[2]), R"({"type":"run.finished","run_id":"r","ts":TS,"status":"failed"})");
}

TEST_F(EventLogTest, StringsAreEscapedAndInvalidUtf8Replaced) {
  auto log = open();
  const std::string nasty = std::string("quote\" back\\ nl\n cr\r tab\t bell\x07 nul") +
                            std::string(1, '\0') + " utf8 é 😀 bad \xff\xc3 end";
  log->nodeFailed("n\"1", nasty, std::nullopt);
  auto lines = readLines(path_);
  ASSERT_EQ(lines.size(), 1u);  // the newline inside the message did not split the line
  const Json e = Json::parse(lines[0]);
  EXPECT_EQ(e["node_id"], "n\"1");
  EXPECT_EQ(e["error"], std::string("quote\" back\\ nl\n cr\r tab\t bell\x07 nul") +
                            std::string(1, '\0') + " utf8 é 😀 bad \uFFFD\uFFFD end");
}

TEST_F(EventLogTest, ArgsWithInvalidUtf8StillGiveAParseableLine) {
  auto log = open();
  log->runStarted(Json{{"k", std::string("\xff")}});
  const Json e = Json::parse(readLines(path_).at(0));
  EXPECT_EQ(e["args"]["k"], "\uFFFD");
}

TEST_F(EventLogTest, NodeEventRejectsNonObjectsAndReservedNames) {
  auto log = open();
  auto not_json = log->nodeEvent("node.activity", "a", "{oops");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.error().message,
            "event \"node.activity\" from node \"a\": its fields must be a JSON object, got: "
            "{oops");
  EXPECT_FALSE(log->nodeEvent("node.activity", "a", "[1]").ok());
  EXPECT_FALSE(log->nodeEvent("node.activity", "a", "{} {}").ok());
  EXPECT_FALSE(log->nodeEvent("", "a", "{}").ok());
  auto reserved = log->nodeEvent("node.activity", "a", R"({"ts":"x"})");
  ASSERT_FALSE(reserved.ok());
  EXPECT_NE(reserved.error().message.find("\"ts\""), std::string::npos);
  EXPECT_FALSE(log->nodeEvent("node.activity", "a", R"({"type":"run.finished"})").ok());
  EXPECT_FALSE(std::filesystem::exists(path_) && !readAll(path_).empty());
}

TEST_F(EventLogTest, NodeEventKeepsOneLineForPrettyJson) {
  auto log = open("r");
  ASSERT_TRUE(log->nodeEvent("node.activity", "a", "  {\n  \"activity\": \"x\",\r\n  \"n\": 1\n}\n")
                  .ok());
  ASSERT_TRUE(log->nodeEvent("node.custom", "a", " { } ").ok());
  auto lines = readLines(path_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(Json::parse(lines[0]), (Json{{"type", "node.activity"}, {"run_id", "r"},
                                         {"node_id", "a"}, {"ts", Json::parse(lines[0])["ts"]},
                                         {"activity", "x"}, {"n", 1}}));
  EXPECT_EQ(maskTs(lines[1]), R"({"type":"node.custom","run_id":"r","node_id":"a","ts":TS})");
}

TEST_F(EventLogTest, AppendsToAnExistingLog) {
  {
    auto log = open();
    log->runStarted(Json::object());
  }
  auto log = open();
  log->runFinished("success");
  auto lines = readLines(path_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(Json::parse(lines[1])["type"], "run.finished");
}

TEST_F(EventLogTest, ConcurrentEmittersNeverInterleaveLines) {
  auto log = open();
  std::atomic<int> seen{0};
  log->subscribe([&](const Event&) { seen.fetch_add(1, std::memory_order_relaxed); });
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&log, t] {
      const std::string node = "node-" + std::to_string(t);
      const std::string long_error(300, static_cast<char>('a' + t));
      for (int i = 0; i < kPerThread; ++i) {
        log->nodeFailed(node, long_error, std::nullopt);
        (void)log->nodeEvent("node.activity", node, R"({"activity":"working"})");
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  auto lines = readLines(path_);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kPerThread * 2));
  EXPECT_EQ(seen.load(), kThreads * kPerThread * 2);
  std::map<std::string, int> per_node;
  for (const std::string& line : lines) {
    const Json e = Json::parse(line);  // throws (fails the test) on an interleaved line
    per_node[e["node_id"].get<std::string>()]++;
    if (e["type"] == "node.failed") {
      const std::string node = e["node_id"];
      EXPECT_EQ(e["error"], std::string(300, static_cast<char>('a' + (node.back() - '0'))));
    }
  }
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(per_node["node-" + std::to_string(t)], kPerThread * 2);
  }
}

TEST_F(EventLogTest, OpenFailsWithAClearMessage) {
  std::filesystem::create_directories(path_);  // a folder where the log file should be
  auto log = EventLog::open(path_, "r");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.error().message.find("cannot open the event log " + path_.string()),
            std::string::npos);
}

// Issue 10, item 9: a write that fails is kept with its cause, for the run's warning.
TEST_F(EventLogTest, AFailedWriteIsKeptWithItsCause) {
  auto ok = EventLog::open(path_, "r");
  ASSERT_TRUE(ok.ok());
  (*ok)->nodeReady("a", std::nullopt);
  EXPECT_FALSE((*ok)->writeError().has_value());

  auto full = EventLog::open("/dev/full", "r");  // every write fails with ENOSPC
  ASSERT_TRUE(full.ok()) << full.error().message;
  (*full)->nodeReady("a", std::nullopt);
  (*full)->nodeStarted("a", std::nullopt);
  const auto error = (*full)->writeError();
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("cannot write the event log /dev/full: "), std::string::npos) << *error;
  EXPECT_NE(error->find("space"), std::string::npos) << *error;
}

TEST_F(EventLogTest, ReadBackWhatWasWritten) {
  {
    auto log = open();
    log->runStarted(Json{{"a", 1}});
    log->nodeReady("x", std::nullopt);
    log->runFinished("success");
  }
  auto read = readEventLog(path_);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->events.size(), 3u);
  EXPECT_TRUE(read->warnings.empty());
  EXPECT_EQ(read->events[0]["args"], (Json{{"a", 1}}));
  EXPECT_EQ(read->events[2]["status"], "success");
}

TEST_F(EventLogTest, ReadToleratesATornLastLine) {
  {
    auto log = open();
    log->runStarted(Json::object());
    log->nodeReady("x", std::nullopt);
  }
  {
    std::ofstream out(path_, std::ios::app | std::ios::binary);
    out << R"({"type":"node.started","run_id":"run-1","node_id":"x","ts":"2026-)";
  }
  auto read = readEventLog(path_);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->events.size(), 2u);
  ASSERT_EQ(read->warnings.size(), 1u);
  EXPECT_EQ(read->warnings[0], path_.string() +
                                   ":3: ignoring a torn last line (the run was probably killed "
                                   "while writing it)");
}

TEST_F(EventLogTest, ReadSkipsAGarbledMiddleLineNamingIt) {
  {
    std::filesystem::create_directories(path_.parent_path());
    std::ofstream out(path_, std::ios::binary);
    out << R"({"type":"run.started","run_id":"r","ts":"t","args":{}})" << '\n'
        << "garbage here" << '\n'
        << '\n'
        << "[1,2]" << '\n'
        << R"({"type":"run.finished","run_id":"r","ts":"t","status":"success"})" << '\n';
  }
  auto read = readEventLog(path_);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->events.size(), 2u);
  EXPECT_EQ(read->events[1]["type"], "run.finished");
  ASSERT_EQ(read->warnings.size(), 2u);
  EXPECT_EQ(read->warnings[0], path_.string() + ":2: ignoring a line that is not a JSON object");
  EXPECT_EQ(read->warnings[1], path_.string() + ":4: ignoring a line that is not a JSON object");
}

TEST_F(EventLogTest, ReadOfAMissingFileFails) {
  auto read = readEventLog(dir_ / "nope.jsonl");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find("nope.jsonl"), std::string::npos);
}

TEST_F(EventLogTest, ReadOfAnEmptyFileGivesNoEvents) {
  std::filesystem::create_directories(path_.parent_path());
  std::ofstream(path_).close();
  auto read = readEventLog(path_);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->events.empty());
  EXPECT_TRUE(read->warnings.empty());
}

}  // namespace
}  // namespace oe::events

namespace oe::events {
namespace {

// The sink-level safety net (docs/policy.md, "Secrets"): whatever a line holds of a secret, the
// file and every listener get «secret:NAME», in the raw and the JSON-escaped form alike.
TEST_F(EventLogTest, SecretsAreRedactedFromTheFileAndTheListeners) {
  auto log = open();
  ASSERT_NE(log, nullptr);
  auto set = std::make_shared<secrets::SecretSet>();
  set->add("TOKEN", "tok-\"quoted\"-9911");
  log->setSecrets(set);
  std::vector<std::string> heard;
  log->subscribe([&heard](const Event& e) { heard.emplace_back(e.json().dump()); });
  log->runStarted(Json{{"token", "tok-\"quoted\"-9911"}});
  log->nodeFailed("n", "failed with tok-\"quoted\"-9911", std::nullopt);
  ASSERT_TRUE(
      log->nodeEvent("node.activity", "n", R"({"activity":"sent tok-\"quoted\"-9911"})").ok());
  const std::string text = readAll(path_);
  EXPECT_EQ(text.find("tok-"), std::string::npos) << text;
  const std::string shown = "\xC2\xABsecret:TOKEN\xC2\xBB";
  const auto lines = readLines(path_);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(Json::parse(lines[0])["args"]["token"], shown);
  EXPECT_EQ(Json::parse(lines[1])["error"], "failed with " + shown);
  EXPECT_EQ(Json::parse(lines[2])["activity"], "sent " + shown);
  ASSERT_EQ(heard.size(), 3U);
  for (const std::string& json : heard) {
    EXPECT_EQ(json.find("tok-"), std::string::npos) << json;
  }
}

TEST_F(EventLogTest, AnEmptySecretSetChangesNothing) {
  auto log = open();
  ASSERT_NE(log, nullptr);
  log->setSecrets(std::make_shared<secrets::SecretSet>());
  log->nodeFailed("n", "failed with tok-1234", std::nullopt);
  EXPECT_NE(readAll(path_).find("failed with tok-1234"), std::string::npos);
}

}  // namespace
}  // namespace oe::events
