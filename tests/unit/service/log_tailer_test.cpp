// The live events: the JSON pages of a run's log, the SSE stream of one run from a position
// (Last-Event-ID or ?after) through to run.finished, one tailer per log however many
// subscribers, a new subscriber joining a run being written without a gap or a repeated line, a
// subscriber that stops reading dropped without holding the others, and the all-runs stream.
#include "oe/service/log_tailer.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "unit/service/service_fixture.hpp"

namespace oe::service::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string line(int n, const char* type = "node.activity") {
  return std::string(R"({"type":")") + type +
         R"(","run_id":"r","node_id":"n","ts":"2026-01-01T00:00:00.000Z","n":)" +
         std::to_string(n) + "}\n";
}

// Appends as the run's event log does: one write(2) of the whole line, O_APPEND.
class LogWriter {
 public:
  explicit LogWriter(const fs::path& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
  ~LogWriter() { ::close(fd_); }
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  void write(const std::string& text) const {
    ASSERT_EQ(::write(fd_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }

 private:
  int fd_;
};

// The frames' ids are exactly from..to, in order.
::testing::AssertionResult idsAre(const std::vector<std::string>& ids, int from, int to) {
  if (ids.size() != static_cast<size_t>(to - from + 1)) {
    return ::testing::AssertionFailure() << ids.size() << " frames, expected " << to - from + 1;
  }
  for (int i = from; i <= to; ++i) {
    if (ids[static_cast<size_t>(i - from)] != std::to_string(i)) {
      return ::testing::AssertionFailure()
             << "frame " << i - from << " has id " << ids[static_cast<size_t>(i - from)]
             << ", expected " << i;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(LogCursorTest, ReadsWholeLinesAndLeavesATornOneForLater) {
  oe::test::TempDir dir;
  const fs::path log = dir / "r.jsonl";
  writeText(log, line(1) + line(2) + R"({"type":"half)");
  LogCursor cursor(log);
  auto lines = cursor.next(1 << 20);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[1].seq, 2U);
  EXPECT_TRUE(cursor.next(1 << 20).empty());
  {
    LogWriter writer(log);
    writer.write(R"(","n":3})"
                 "\n");
  }
  lines = cursor.next(1 << 20);
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0].seq, 3U);
  EXPECT_EQ(lines[0].text, R"({"type":"half","n":3})");
}

TEST(LogHubTest, StreamsFromAPositionFollowsTheLogAndEndsAtRunFinished) {
  oe::test::TempDir dir;
  const fs::path log = dir / "r.jsonl";
  writeText(log, line(1, "run.started") + line(2) + line(3));
  LogHub hub(5ms);
  auto sink = std::make_shared<RecordingSink>();
  hub.subscribeRun(log, 1, sink);
  ASSERT_TRUE(sink->waitFor([](const auto& frames, bool) { return frames.size() == 2; }));
  EXPECT_EQ(hub.runTailers(), 1U);
  {
    LogWriter writer(log);
    writer.write(line(4));
    writer.write(line(5, "run.finished"));
  }
  ASSERT_TRUE(sink->waitFor([](const auto&, bool finished) { return finished; }));
  EXPECT_TRUE(idsAre(sink->ids(), 2, 5));
  EXPECT_NE(sink->frames().back().find("data: {\"type\":\"run.finished\""), std::string::npos);
  // The tailer went with its last subscriber.
  EXPECT_TRUE(eventually([&hub] { return hub.runTailers() == 0; }));
  // A finished run: caught up from the file and finished, no tailer made.
  auto late = std::make_shared<RecordingSink>();
  hub.subscribeRun(log, 3, late);
  EXPECT_TRUE(late->finished());
  EXPECT_TRUE(idsAre(late->ids(), 4, 5));
  EXPECT_EQ(hub.runTailers(), 0U);
}

// 1,000 subscribers join one by one while a writer appends 1,000 lines: each receives every line
// after its starting point exactly once, in order, and the hub tails the log once.
TEST(LogHubTest, SubscribersJoiningALiveRunMissNothingAndShareOneTailer) {
  oe::test::TempDir dir;
  const fs::path log = dir / "r.jsonl";
  writeText(log, line(1, "run.started"));
  LogHub hub(1ms);
  constexpr int kLines = 1000;
  constexpr int kSubscribers = 1000;
  std::atomic<int> written{1};
  std::thread writer_thread([&] {
    LogWriter writer(log);
    for (int i = 2; i < kLines; ++i) {
      writer.write(line(i));
      written = i;
      if (i % 50 == 0) {
        std::this_thread::yield();
      }
    }
    writer.write(line(kLines, "run.finished"));
    written = kLines;
  });
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  std::vector<int> starts;
  size_t most_tailers = 0;
  for (int i = 0; i < kSubscribers; ++i) {
    auto sink = std::make_shared<RecordingSink>();
    const int after = i % 3 == 0 ? 0 : std::max(0, written.load() - 5);
    starts.push_back(after);
    hub.subscribeRun(log, static_cast<uint64_t>(after), sink);
    sinks.push_back(sink);
    most_tailers = std::max(most_tailers, hub.runTailers());
  }
  writer_thread.join();
  for (size_t i = 0; i < sinks.size(); ++i) {
    ASSERT_TRUE(sinks[i]->waitFor([](const auto&, bool finished) { return finished; }))
        << "subscriber " << i << " never saw run.finished";
    EXPECT_TRUE(idsAre(sinks[i]->ids(), starts[i] + 1, kLines)) << "subscriber " << i;
  }
  EXPECT_LE(most_tailers, 1U);
}

// The two races of a join, made to happen: lines written and fanned out while a subscriber is
// between its catch-up and its join (it must get them from the file: no gap), and a subscriber
// whose catch-up read further than the tailer has (the tailer must not give them again).
TEST(LogHubTest, AJoinBridgesLinesTheTailerSentMeanwhileAndSkipsLinesItHas) {
  oe::test::TempDir dir;
  const fs::path log = dir / "r.jsonl";
  writeText(log, line(1, "run.started") + line(2));
  auto first = std::make_shared<RecordingSink>();
  std::atomic<bool> race{false};
  LogHub hub(1ms, [&] {
    if (!race.exchange(false)) {
      return;
    }
    // After the second subscriber read lines 1-2 from the file: lines 3-5 are written and the
    // first subscriber gets them from the tailer, which is now ahead of the second.
    LogWriter writer(log);
    for (int i = 3; i <= 5; ++i) {
      writer.write(line(i));
    }
    EXPECT_TRUE(first->waitFor([](const auto& frames, bool) { return frames.size() == 5; }));
  });
  hub.subscribeRun(log, 0, first);  // makes the tailer, at line 2
  race = true;
  auto second = std::make_shared<RecordingSink>();
  hub.subscribeRun(log, 0, second);
  EXPECT_TRUE(idsAre(second->ids(), 1, 5));
  // A third joins after lines 6-8 were written: whether its catch-up or the tailer reads them
  // first, it has each once.
  auto third = std::make_shared<RecordingSink>();
  {
    LogWriter writer(log);
    for (int i = 6; i <= 8; ++i) {
      writer.write(line(i));
    }
  }
  hub.subscribeRun(log, 0, third);
  {
    LogWriter writer(log);
    writer.write(line(9, "run.finished"));
  }
  for (const auto& sink : {first, second, third}) {
    ASSERT_TRUE(sink->waitFor([](const auto&, bool finished) { return finished; }));
    EXPECT_TRUE(idsAre(sink->ids(), 1, 9));
  }
}

TEST(LogHubTest, ASubscriberThatStopsReadingIsDroppedAndTheOthersGoOn) {
  oe::test::TempDir dir;
  const fs::path log = dir / "r.jsonl";
  writeText(log, line(1, "run.started"));
  LogHub hub(2ms);
  auto stalled = std::make_shared<RecordingSink>(3);  // its queue holds 3 frames
  auto reader = std::make_shared<RecordingSink>();
  hub.subscribeRun(log, 0, stalled);
  hub.subscribeRun(log, 0, reader);
  EXPECT_EQ(hub.subscribers(), 2U);
  {
    LogWriter writer(log);
    for (int i = 2; i <= 50; ++i) {
      writer.write(line(i));
    }
  }
  ASSERT_TRUE(reader->waitFor([](const auto& frames, bool) { return frames.size() == 50; }));
  EXPECT_TRUE(eventually([&hub] { return hub.subscribers() == 1; }));
  EXPECT_EQ(stalled->frames().size(), 3U);
  EXPECT_FALSE(stalled->finished());
  // A client that went away (open() false) is dropped too, and the tailer with it.
  reader->close();
  {
    LogWriter writer(log);
    writer.write(line(51));
  }
  EXPECT_TRUE(eventually([&hub] { return hub.runTailers() == 0; }));
}

TEST(LogHubTest, TheAllRunsStreamCarriesNewLinesOfEveryRunWithRunIdAndSeq) {
  oe::test::TempDir dir;
  const fs::path runs = dir / "runs";
  writeText(runs / "old.jsonl", line(1, "run.started") + line(2));
  LogHub hub(2ms);
  auto sink = std::make_shared<RecordingSink>();
  hub.subscribeAll([runs] { return std::vector<fs::path>{runs}; }, sink);
  {
    LogWriter writer(runs / "old.jsonl");
    writer.write(line(3));
  }
  writeText(runs / "new.jsonl", line(1, "run.started"));
  ASSERT_TRUE(sink->waitFor([](const auto& frames, bool) { return frames.size() == 2; }))
      << sink->frames().size();
  auto ids = sink->ids();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"new:1", "old:3"}));
}

class EventRoutesTest : public ServiceTest {};

TEST_F(EventRoutesTest, PagesOfARealRunsEventsAndItsStream) {
  writeToolExperience(root() / "greeter", "greeter");
  const std::string id = run(root() / "greeter");
  ASSERT_FALSE(id.empty());
  Json first = json("GET", "/api/runs/" + id + "/events?limit=3");
  ASSERT_EQ(first["events"].size(), 3U);
  EXPECT_EQ(first["events"][0]["seq"], 1);
  EXPECT_EQ(first["events"][0]["type"], "run.started");
  EXPECT_EQ(first["next_after"], 3);
  std::vector<Json> all;
  for (uint64_t after = 0;;) {
    Json page = json("GET", "/api/runs/" + id + "/events?limit=4&after=" + std::to_string(after));
    for (const auto& event : page["events"]) {
      all.push_back(event);
    }
    if (!page.contains("next_after")) {
      break;
    }
    after = page["next_after"];
  }
  ASSERT_GE(all.size(), 6U);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i]["seq"], i + 1);
  }
  EXPECT_EQ(all.back()["type"], "run.finished");
  EXPECT_EQ(call("GET", "/api/runs/" + id + "/events?after=x").status, 400);

  // The stream from Last-Event-ID: the rest of the log, then the end of the stream.
  const auto response =
      call("GET", "/api/runs/" + id + "/events/stream?after=1", {}, {{"last-event-id", "2"}});
  ASSERT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "text/event-stream");
  ASSERT_TRUE(response.events);
  auto sink = std::make_shared<RecordingSink>();
  response.events->start(sink);
  ASSERT_TRUE(sink->waitFor([](const auto&, bool finished) { return finished; }));
  EXPECT_TRUE(idsAre(sink->ids(), 3, static_cast<int>(all.size())));
}

// A real run followed live: `oe run` in the background, held at a gate node; the run is
// listed as running (it holds its state store), a client subscribes mid-run, the gate opens,
// and the client gets every line of the log once, in order, and the end of the stream.
TEST_F(EventRoutesTest, ALiveRunIsStreamedToItsEnd) {
  const fs::path dir = root() / "gated";
  writeToolExperience(dir, "gated");
  writeText(dir / "experience.yaml",
            "name: gated\nversion: 0.1.0\nstate:\n  schema:\n    greeting: { type: string }\n"
            "    log: { type: array, merge: array_append }\ngraph:\n  nodes:\n"
            "    - { id: gate, kind: tool, impl: ./gate.sh }\n"
            "    - { id: greet, kind: tool, impl: ./greet.sh, writes: [greeting, log] }\n"
            "  edges:\n    - { from: gate, to: greet }\n");
  writeText(dir / "gate.sh", "#!/bin/sh\ncat >/dev/null\ntouch '" +
                                 (dir_.path() / "reached").string() + "'\nwhile [ ! -e '" +
                                 (dir_.path() / "go").string() +
                                 "' ]; do sleep 0.01; done\necho '{\"state_delta\":{}}'\n");
  fs::permissions(dir / "gate.sh", fs::perms::owner_all, fs::perm_options::add);
  oe::test::BackgroundProcess process({OE_EXE, "run", dir.string(), "--json"},
                                      {{"OE_PLUGIN_PATH", ""},
                                       {"OE_STORE", ""},
                                       {"HOME", dir_.path().string()},
                                       {"OE_TRUST_FILE", (dir_.path() / "trust.json").string()}},
                                      dir_.path(), dir_.path() / "run");
  ASSERT_TRUE(oe::test::waitForFile(dir_.path() / "reached")) << process.err();

  Json runs = json("GET", "/api/runs?status=running");
  ASSERT_EQ(runs["runs"].size(), 1U) << runs.dump();
  const std::string id = runs["runs"][0]["id"];
  const auto response = call("GET", "/api/runs/" + id.substr(0, 6) + "/events/stream");
  ASSERT_TRUE(response.events);
  auto sink = std::make_shared<RecordingSink>();
  response.events->start(sink);
  ASSERT_TRUE(sink->waitFor([](const auto& frames, bool) { return frames.size() >= 3; }));
  EXPECT_FALSE(sink->finished());

  writeText(dir_.path() / "go", "");
  ASSERT_EQ(process.waitFor(std::chrono::seconds(60)), std::optional<int>(0)) << process.err();
  ASSERT_TRUE(sink->waitFor([](const auto&, bool finished) { return finished; }));
  const std::string log = oe::test::readFile(dir / ".openexpertise" / "runs" / (id + ".jsonl"));
  const auto lines = static_cast<int>(std::count(log.begin(), log.end(), '\n'));
  EXPECT_TRUE(idsAre(sink->ids(), 1, lines));
  EXPECT_EQ(json("GET", "/api/runs/" + id)["status"], "succeeded");
}

}  // namespace
}  // namespace oe::service::test
