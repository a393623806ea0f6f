// The write side of `oe serve` at the handler level: requests built here and given to the
// Router, a real queue file, a real launcher running the built oe (OE_EXE) on experiences with
// shell tools. Covers POST /api/runs (its checks and a run under the id it answered), cancel of
// a queued and of a running run, resume, DELETE, the approvals, and what a new server does with
// the runs a dead one left (requeued, watched, or resumed). Each runs on both stores: the
// experiences' SQLite files and a PostgreSQL store (a fresh database of the test cluster), where
// the queue is oe_run_queue, the children run with --store (they still write their local log,
// which the tests read) and DELETE removes the run's rows from the store.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "oe/events/event_log.hpp"
#include "oe/httpd/target.hpp"
#include "oe/service/launcher.hpp"
#include "oe/service/parts.hpp"
#include "oe/service/read_routes.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/service/service.hpp"
#include "proc_kit/subprocess.hpp"
#include "support/pg_test_db.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "unit/service/service_support.hpp"

namespace oe::service {
namespace {

using namespace std::chrono_literals;
using test_support::logOf;
using test_support::waitUntil;

constexpr auto kRunTimeout = std::chrono::milliseconds(60s);

// A tool that blocks the first time it runs, leaving `mark` (the tests wait for it: the tool is
// running, the work a cancel interrupts; it ends when the oe that runs it is gone, so a killed
// run leaves nothing behind), and answers at once after that, so a resume of the run it blocked
// finishes.
std::string blockingTool(const std::filesystem::path& mark) {
  return "#!/bin/sh\ncat > /dev/null\nif [ ! -e '" + mark.string() + "' ]; then : > '" +
         mark.string() +
         "'; while kill -0 $PPID 2>/dev/null; do sleep 0.1; done; exit 1; fi\n"
         "printf '{\"state_delta\":{\"done\":true}}\\n'\n";
}

constexpr std::string_view kQuickTool =
    "#!/bin/sh\ncat > /dev/null\nprintf '{\"state_delta\":{\"done\":true}}\\n'\n";

Json eventOf(const std::vector<Json>& log, const std::string& type) {
  for (const auto& e : log) {
    if (e.value("type", "") == type) {
      return e;
    }
  }
  return nullptr;
}

// A tool that blocks, as blockingTool does, when the run's args hold "hold":true, and answers at
// once otherwise: runs of one experience that finish beside one that runs.
std::string holdingTool(const std::filesystem::path& mark) {
  return "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"hold\":true'*) : > '" + mark.string() +
         "'; while kill -0 $PPID 2>/dev/null; do sleep 0.1; done; exit 1;; esac\n"
         "printf '{\"state_delta\":{\"done\":true}}\\n'\n";
}

// Parameterized by the store: "sqlite" (each experience's files, the queue in queue.db) or
// "postgresql" (--store: a database of its own on the test cluster).
class ServiceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    root_ = std::filesystem::canonical(dir_.path());
    if (onPg()) {
      db_ = std::make_unique<oe::test::PgTestDb>();
      store_ = db_->url();
    }
  }
  void TearDown() override {
    launcher_.reset();
    queue_.reset();
  }

  [[nodiscard]] bool onPg() const { return GetParam() == "postgresql"; }

  // The first column of the first row of `sql` on the store (PostgreSQL only), as a number.
  int64_t storeCount(const std::string& sql, const std::vector<pg::Param>& params = {}) {
    auto conn = pg::Connection::open(store_);
    EXPECT_TRUE(conn) << conn.error().message;
    if (!conn) {
      return -1;
    }
    auto rows = (*conn)->exec(sql, params);
    EXPECT_TRUE(rows) << sql << ": " << rows.error().message;
    return rows && rows->size() > 0 ? rows->int64(0, 0) : -1;
  }

  // An experience folder `name` with one tool node running `tool` (shell text).
  std::filesystem::path experience(const std::string& name, std::string_view tool,
                                   const std::string& runtime = "") {
    const auto sub = root_ / name;
    std::filesystem::create_directories(sub / "tools");
    std::ofstream(sub / "experience.yaml")
        << "name: " << std::filesystem::path(name).filename().string() << "\nversion: 0.1.0\n"
        << runtime << "state:\n  schema:\n    done: { type: boolean }\n"
        << "graph:\n  nodes:\n    - { id: t, kind: tool, impl: ./tools/t.sh, writes: [done] }\n"
        << "  edges: []\n";
    std::ofstream(sub / "tools" / "t.sh") << tool;
    std::filesystem::permissions(sub / "tools" / "t.sh", std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
    return sub;
  }

  // `oe run` of `exp` under `id`, started outside the service (as a terminal, or a server that
  // died, would have), on the test's store, in a process group of its own: its pid, or -1.
  pid_t spawnRun(const std::filesystem::path& exp, const std::string& id) {
    prockit::SpawnRequest request;
    request.argv = {OE_EXE, "run", exp.string(), "--json", "--run-id", id};
    if (onPg()) {
      request.argv.insert(request.argv.end(), {"--store", store_});
    }
    request.path = OE_EXE;
    request.cwd = exp.string();
    prockit::UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
    request.fds = {{null_fd.get(), 0}, {null_fd.get(), 1}, {null_fd.get(), 2}};
    auto child = prockit::spawnChild(request);
    EXPECT_TRUE(child);
    return child ? child->pid : -1;
  }

  // The queue's place: the store, else the root's queue.db.
  [[nodiscard]] std::string queueWhere() const {
    return store_.empty() ? RunQueue::defaultPath(root_).string() : store_;
  }

  void start(ClaimLimits limits = {4, 4}) {
    const std::string& store = store_;
    if (!queue_) {
      auto q = RunQueue::open(queueWhere());
      ASSERT_TRUE(q) << q.error().message;
      queue_ = std::move(q).value();
    }
    LauncherOptions options;
    options.oe_exe = OE_EXE;
    options.root = root_;
    options.limits = limits;
    options.stop_grace = 20s;
    options.poll = 50ms;
    options.store = store;
    auto l = Launcher::start(*queue_, options);
    ASSERT_TRUE(l) << l.error().message;
    launcher_ = std::move(l).value();
    context_.root = root_;
    context_.store = store;
    context_.queue = queue_.get();
    context_.launcher = launcher_.get();
    // With the read side, as `oe serve` composes it, so a test sees what a client lists.
    router_ = buildRouter(context_, {[](httpd::Router& router, const ServiceContext& context) {
                            addReadRoutes(router, ReadContext{context.root, context.store,
                                                              queueLister(context.queue)});
                          }});
  }

  httpd::Response call(const std::string& method, const std::string& target,
                       const std::string& body = "") {
    auto decoded = httpd::decodeTarget(target);
    if (!decoded) {
      ADD_FAILURE() << target << ": " << decoded.error().message;
      return {};
    }
    const std::string path = decoded->path;
    auto match = router_.match(method, path);
    if (match.route == nullptr) {
      ADD_FAILURE() << "no route for " << method << " " << path;
      return {};
    }
    httpd::Request request;
    request.method = method;
    request.path = path;
    request.target = target;
    request.query = std::move(decoded->query);
    request.body = body;
    request.params = match.params;
    request.granted = httpd::Scope::kAdmin;
    return match.route->handler(request);
  }

  static Json bodyOf(const httpd::Response& r) { return Json::parse(r.body, nullptr, false); }

  // POSTs a run and returns its id (after checking the 202).
  std::string postRun(const std::string& body) {
    const auto r = call("POST", "/api/runs", body);
    EXPECT_EQ(r.status, 202) << r.body;
    return bodyOf(r).value("id", "");
  }

  // The log of `run_id` has a line of `type` (the run got that far).
  bool logHas(const std::filesystem::path& exp, const std::string& run_id,
              const std::string& type) {
    return !eventOf(logOf(exp, run_id), type).is_null();
  }

  oe::test::TempDir dir_;
  std::filesystem::path root_;
  std::unique_ptr<oe::test::PgTestDb> db_;  // onPg(): outlives the queue and the launcher
  std::string store_;                       // onPg(): its URL
  std::unique_ptr<RunQueue> queue_;
  std::unique_ptr<Launcher> launcher_;
  ServiceContext context_;
  httpd::Router router_;
};

TEST_P(ServiceTest, PostRunChecksItsBodyAndTheRunKeepsTheIdItWasQueuedUnder) {
  const auto hello = experience("hello", kQuickTool);
  std::filesystem::create_directories(root_ / "team");
  experience("team/review", kQuickTool);
  oe::test::TempDir outside;
  outside.write("experience.yaml", "name: outside\n");
  std::filesystem::create_symlink(outside.path(), root_ / "escape");
  start();

  const auto refused = [&](const std::string& body, int status, const std::string& says) {
    const auto r = call("POST", "/api/runs", body);
    EXPECT_EQ(r.status, status) << body << " -> " << r.body;
    EXPECT_EQ(r.content_type, "application/problem+json") << body;
    EXPECT_NE(bodyOf(r).value("detail", "").find(says), std::string::npos)
        << body << " -> " << r.body;
  };
  refused("not json", 400, "JSON object");
  refused("{}", 400, "\"experience\" (a string) is required");
  refused(R"({"experience":"../x"})", 400, "`..` segment");
  refused(R"({"experience":"hello/../hello"})", 400, "`..` segment");
  refused(R"({"experience":"/etc"})", 400, "relative to the server's root");
  refused(R"({"experience":"escape"})", 404, "outside the server's root");
  refused(R"({"experience":"nope"})", 404, "no experience \"nope\"");
  refused(R"({"experience":"hello","args":[1]})", 400, "\"args\" must be an object");
  refused(R"({"experience":"hello","priority":11})", 400, "from 1 to 10");
  refused(R"({"experience":"hello","priority":"high"})", 400, "from 1 to 10");
  refused(R"({"experience":"hello","options":{"llm":"x"}})", 400, "options.llm");
  refused(R"({"experience":"hello","extra":1})", 400, "no member \"extra\"");
  auto listed = queue_->list();
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty()) << "nothing refused was queued";

  const auto posted =
      call("POST", "/api/runs", R"({"experience":"hello","args":{"who":"api"},"priority":7})");
  ASSERT_EQ(posted.status, 202) << posted.body;
  const std::string id = bodyOf(posted)["id"];
  EXPECT_TRUE(events::isRunId(id)) << id;
  EXPECT_EQ(bodyOf(posted)["status"], "queued");
  ASSERT_TRUE(launcher_->waitGone(id, kRunTimeout));
  const auto log = logOf(hello, id);
  ASSERT_FALSE(log.empty()) << "no log " << id << " under " << hello;
  EXPECT_EQ(eventOf(log, "run.started")["run_id"], id);
  EXPECT_EQ(eventOf(log, "run.finished")["status"], "success");
  // The child's --json summary went to its own file, not to the server's stderr.
  EXPECT_NE(oe::test::readFile(childLogPath(root_, id)).find("\"run_id\": \"" + id + "\""),
            std::string::npos);
  if (onPg()) {
    // The queue is the store's table, and the child ran on the store: its record and its lines
    // are there (beside the local log it still writes).
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_runs WHERE run_id = $1 AND status = 'success'",
                         {id}),
              1);
    EXPECT_GT(storeCount("SELECT count(*) FROM oe_events WHERE run_id = $1", {id}), 0);
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_run_queue"), 0);
    EXPECT_FALSE(std::filesystem::exists(RunQueue::defaultPath(root_)));
  }

  // By folder below the root, and by `name:` when only one experience has it.
  const std::string nested = postRun(R"({"experience":"team/review"})");
  ASSERT_TRUE(launcher_->waitGone(nested, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(root_ / "team/review", nested), "run.finished")["status"], "success");
  const std::string by_name = postRun(R"({"experience":"review"})");
  ASSERT_TRUE(launcher_->waitGone(by_name, kRunTimeout));
  EXPECT_TRUE(logHas(root_ / "team/review", by_name, "run.finished"));
}

TEST_P(ServiceTest, CancelKeepsAQueuedRunAsCancelledAndStopsARunningOneWhichResumesAndDeletes) {
  const auto slow = experience("slow", blockingTool(root_ / "slow-mark"));
  experience("quick", kQuickTool);
  start({1, 1});  // one run at a time: the second waits in the queue

  const std::string running = postRun(R"({"experience":"slow"})");
  ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(root_ / "slow-mark"); }))
      << oe::test::readFile(childLogPath(root_, running));
  const std::string queued = postRun(R"({"experience":"quick","priority":10})");
  auto entry = queue_->find(queued);
  ASSERT_TRUE(entry && *entry);
  EXPECT_EQ((*entry)->state, "queued") << "the global cap keeps it queued";

  // Queued: cancelled at once, and it never runs; it stays visible as cancelled.
  const auto c1 = call("POST", "/api/runs/" + queued.substr(0, 13) + "/cancel");
  EXPECT_EQ(c1.status, 200) << c1.body;
  EXPECT_EQ(bodyOf(c1)["status"], "cancelled");
  entry = queue_->find(queued);
  ASSERT_TRUE(entry && *entry);
  EXPECT_EQ((*entry)->state, "cancelled");
  EXPECT_GT((*entry)->cancelled_ms, 0);
  const auto shown = call("GET", "/api/runs/" + queued);
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(bodyOf(shown)["status"], "cancelled");
  EXPECT_EQ(bodyOf(shown)["started_at"], nullptr);
  EXPECT_TRUE(bodyOf(shown)["finished_at"].is_string()) << shown.body;
  const auto listed = call("GET", "/api/runs?status=cancelled");
  ASSERT_EQ(listed.status, 200) << listed.body;
  ASSERT_EQ(bodyOf(listed)["runs"].size(), 1U) << listed.body;
  EXPECT_EQ(bodyOf(listed)["runs"][0]["id"], queued);
  const auto twice_cancelled = call("POST", "/api/runs/" + queued + "/cancel");
  EXPECT_EQ(twice_cancelled.status, 409) << twice_cancelled.body;
  EXPECT_NE(bodyOf(twice_cancelled).value("detail", "").find("cancelled before it started"),
            std::string::npos)
      << twice_cancelled.body;
  const auto never_started = call("POST", "/api/runs/" + queued + "/resume");
  EXPECT_EQ(never_started.status, 409) << never_started.body;
  EXPECT_NE(bodyOf(never_started).value("detail", "").find("start a new run"), std::string::npos)
      << never_started.body;

  // Running: SIGTERM, the run records itself interrupted.
  const auto c2 = call("POST", "/api/runs/" + running + "/cancel");
  EXPECT_EQ(c2.status, 202) << c2.body;
  EXPECT_EQ(bodyOf(c2)["status"], "stopping");
  ASSERT_TRUE(launcher_->waitGone(running, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(slow, running), "run.finished")["status"], "interrupted");
  EXPECT_FALSE(
      std::filesystem::exists(root_ / "quick" / ".openexpertise" / "runs" / (queued + ".jsonl")));
  const auto again = call("POST", "/api/runs/" + running + "/cancel");
  EXPECT_EQ(again.status, 409) << again.body;

  // Resume: a new run of the chain, queued under its own id, finishes (the tool's mark exists).
  const auto resumed = call("POST", "/api/runs/" + running + "/resume", R"({"priority":9})");
  ASSERT_EQ(resumed.status, 202) << resumed.body;
  const std::string next = bodyOf(resumed)["id"];
  EXPECT_NE(next, running);
  EXPECT_EQ(bodyOf(resumed)["resume_of"], running);
  ASSERT_TRUE(launcher_->waitGone(next, kRunTimeout)) << oe::test::readFile(childLogPath(root_, next));
  const auto next_log = logOf(slow, next);
  EXPECT_EQ(eventOf(next_log, "run.started")["resumed_from"], running);
  EXPECT_EQ(eventOf(next_log, "run.finished")["status"], "success");
  const auto twice = call("POST", "/api/runs/" + next + "/resume");
  EXPECT_EQ(twice.status, 409) << "a run that succeeded has nothing to resume: " << twice.body;

  // DELETE: the finished run's log and output file go; an unknown id is a 404.
  const auto deleted = call("DELETE", "/api/runs/" + running.substr(0, 13));
  EXPECT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(bodyOf(deleted)["id"], running);
  EXPECT_GT(bodyOf(deleted).value("bytes_freed", 0), 0);
  EXPECT_FALSE(std::filesystem::exists(slow / ".openexpertise" / "runs" / (running + ".jsonl")));
  EXPECT_FALSE(std::filesystem::exists(childLogPath(root_, running)));
  EXPECT_TRUE(std::filesystem::exists(slow / ".openexpertise" / "runs" / (next + ".jsonl")));
  if (onPg()) {
    // Its rows went from the store; the resume of its chain, and the chain's marks it landed,
    // stay.
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_runs WHERE run_id = $1", {running}), 0);
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_events WHERE run_id = $1", {running}), 0);
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_runs WHERE run_id = $1", {next}), 1);
    EXPECT_GT(storeCount("SELECT count(*) FROM oe_events WHERE run_id = $1", {next}), 0);
    EXPECT_GT(storeCount("SELECT count(*) FROM oe_landed_writes WHERE chain_id = $1", {running}),
              0);
  }
  EXPECT_EQ(call("DELETE", "/api/runs/" + running).status, 404);
  EXPECT_EQ(call("POST", "/api/runs/00000000-dead/cancel").status, 404);

  // The cancelled run never started (the slot was free long since) and is deleted like any
  // finished run: its entry was all there was of it.
  EXPECT_FALSE(
      std::filesystem::exists(root_ / "quick" / ".openexpertise" / "runs" / (queued + ".jsonl")));
  EXPECT_EQ(call("GET", "/api/runs/" + queued).status, 200);
  const auto gone = call("DELETE", "/api/runs/" + queued);
  EXPECT_EQ(gone.status, 200) << gone.body;
  EXPECT_EQ(bodyOf(gone)["id"], queued);
  EXPECT_EQ(bodyOf(gone)["deleted"], true);
  EXPECT_FALSE(*queue_->find(queued));
  EXPECT_EQ(call("GET", "/api/runs/" + queued).status, 404);
  EXPECT_EQ(call("DELETE", "/api/runs/" + queued).status, 404);
}

// A finished run is deleted while another run of its experience runs (on PostgreSQL without the
// scope's lock, which the running one holds): the running one, its rows and the state stay. The
// running one is refused (409), and so is one still queued.
TEST_P(ServiceTest, DeleteRefusesARunThatIsQueuedOrRunningAndTakesAFinishedOneBesideIt) {
  const auto exp = experience("hold", holdingTool(root_ / "mark"));
  experience("quick", kQuickTool);
  start({1, 1});
  const std::string finished = postRun(R"({"experience":"hold"})");
  ASSERT_TRUE(launcher_->waitGone(finished, kRunTimeout));
  ASSERT_EQ(eventOf(logOf(exp, finished), "run.finished")["status"], "success");
  const std::string id = postRun(R"({"experience":"hold","args":{"hold":true}})");
  ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(root_ / "mark"); }));
  const std::string queued = postRun(R"({"experience":"quick"})");

  const auto r = call("DELETE", "/api/runs/" + id);
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(bodyOf(r).value("detail", "").find("/cancel"), std::string::npos) << r.body;
  const auto q = call("DELETE", "/api/runs/" + queued);
  EXPECT_EQ(q.status, 409) << q.body;
  EXPECT_NE(bodyOf(q).value("detail", "").find("queued"), std::string::npos) << q.body;

  const auto d = call("DELETE", "/api/runs/" + finished);
  EXPECT_EQ(d.status, 200) << d.body;
  EXPECT_FALSE(std::filesystem::exists(exp / ".openexpertise" / "runs" / (finished + ".jsonl")));
  if (onPg()) {
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_runs WHERE run_id = $1", {finished}), 0);
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_runs WHERE run_id = $1 AND status = 'running'",
                         {id}),
              1);
    // The snapshot keeps what the deleted run wrote, and its history row, the field's newest.
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_state_snapshot WHERE field = 'done' AND "
                         "value = 'true'"),
              1);
    EXPECT_EQ(storeCount("SELECT count(*) FROM oe_state_history WHERE run_id = $1", {finished}),
              1);
  }
  EXPECT_EQ(launcher_->childPid(id) > 0, true) << "the running run goes on";
  EXPECT_EQ(call("POST", "/api/runs/" + id + "/cancel").status, 202);
  ASSERT_TRUE(launcher_->waitGone(id, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(exp, id), "run.finished")["status"], "interrupted");
  ASSERT_TRUE(launcher_->waitGone(queued, kRunTimeout));
  EXPECT_EQ(call("DELETE", "/api/runs/" + id).status, 200);
}

// A run started outside the server (a terminal's `oe run`) is not in the queue. While it runs a
// DELETE is refused on both stores. Once it was killed, the stores differ: the SQLite files
// cannot tell a dead run from a live one whose log moved in the last ten minutes (still 409);
// on PostgreSQL the scope's lock went with the killed coordinator's session, so the run is
// known dead and deleted under that lock.
TEST_P(ServiceTest, DeleteOfARunStartedOutsideTheServerWaitsForItToBeKnownDead) {
  const auto exp = experience("outside", blockingTool(root_ / "mark"));
  start();
  const std::string id = events::newRunId();
  const pid_t child = spawnRun(exp, id);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(root_ / "mark"); }));

  const auto live = call("DELETE", "/api/runs/" + id);
  EXPECT_EQ(live.status, 409) << live.body;
  EXPECT_EQ(bodyOf(live)["type"], "https://oe.dev/problems/run-maybe-running") << live.body;
  if (onPg()) {
    EXPECT_NE(bodyOf(live).value("detail", "").find("held by run " + id), std::string::npos)
        << live.body;
  }
  ::kill(-child, SIGKILL);
  (void)prockit::reapChild(child);
  EXPECT_TRUE(std::filesystem::exists(exp / ".openexpertise" / "runs" / (id + ".jsonl")));

  if (!onPg()) {
    const auto dead = call("DELETE", "/api/runs/" + id);
    EXPECT_EQ(dead.status, 409) << dead.body;
    EXPECT_NE(bodyOf(dead).value("detail", "").find("last 10 minutes"), std::string::npos)
        << dead.body;
    return;
  }
  EXPECT_EQ(storeCount("SELECT count(*) FROM oe_runs WHERE run_id = $1 AND status = 'running'",
                       {id}),
            1);
  // The server drops the killed session's lock once it notices the connection closed.
  httpd::Response dead;
  EXPECT_TRUE(waitUntil([&] {
    dead = call("DELETE", "/api/runs/" + id);
    return dead.status != 409;
  }));
  EXPECT_EQ(dead.status, 200) << dead.body;
  EXPECT_EQ(storeCount("SELECT count(*) FROM oe_runs WHERE run_id = $1", {id}), 0);
  EXPECT_FALSE(std::filesystem::exists(exp / ".openexpertise" / "runs" / (id + ".jsonl")));
}

TEST_P(ServiceTest, ExperienceLimitKeepsASecondRunOfItQueued) {
  const auto slow =
      experience("slow", blockingTool(root_ / "mark"), "runtime: { max_concurrent_runs: 1 }\n");
  experience("other", kQuickTool);
  start({4, 4});
  const std::string first = postRun(R"({"experience":"slow"})");
  ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(root_ / "mark"); }));
  const std::string second = postRun(R"({"experience":"slow"})");
  const std::string other = postRun(R"({"experience":"other"})");
  // The other experience is not held up by slow's limit.
  ASSERT_TRUE(launcher_->waitGone(other, kRunTimeout));
  auto entry = queue_->find(second);
  ASSERT_TRUE(entry && *entry);
  EXPECT_EQ((*entry)->state, "queued");
  EXPECT_EQ((*entry)->max_concurrent, 1);
  EXPECT_EQ(call("POST", "/api/runs/" + first + "/cancel").status, 202);
  // Once the first has ended the second starts (and finishes: the tool's mark exists).
  ASSERT_TRUE(launcher_->waitGone(second, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(slow, second), "run.finished")["status"], "success");
}

// A server that died (kill -9) leaves queue rows "running" under its owner. The next one on the
// same root: a row whose child never started runs as asked under the same id; a row whose
// child died too is resumed; a row whose child still runs is watched (and can be cancelled).
TEST_P(ServiceTest, ANewServerRequeuesResumesOrWatchesWhatADeadOneLeftRunning) {
  const auto never = experience("never", kQuickTool);
  const auto killed = experience("killed", blockingTool(root_ / "killed-mark"));
  const auto alive = experience("alive", blockingTool(root_ / "alive-mark"));
  {
    auto q = RunQueue::open(queueWhere());
    ASSERT_TRUE(q);
    queue_ = std::move(q).value();
  }
  const auto enqueue = [&](const std::string& folder) {
    QueuedRun e;
    e.run_id = events::newRunId();
    e.experience = folder;
    e.folder = folder;
    e.enqueued_ms = nowMs();
    EXPECT_TRUE(queue_->enqueue(e));
    return e.run_id;
  };
  const std::string host = ownerName().substr(0, ownerName().find(':'));
  const std::string dead_owner = host + ":1:deadbeef";

  const std::string never_id = enqueue("never");
  const std::string killed_id = enqueue("killed");
  const std::string alive_id = enqueue("alive");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(*queue_->claim(dead_owner, {0, 0}, 60000));
  }
  const pid_t killed_pid = spawnRun(killed, killed_id);
  const pid_t alive_pid = spawnRun(alive, alive_id);
  ASSERT_TRUE(queue_->setPid(killed_id, killed_pid));
  ASSERT_TRUE(queue_->setPid(alive_id, alive_pid));
  ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(root_ / "killed-mark"); }));
  ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(root_ / "alive-mark"); }));
  ::kill(-killed_pid, SIGKILL);  // died with its server
  (void)prockit::reapChild(killed_pid);

  start();
  if (onPg()) {
    // A shared store: the rows are another server's until its lease runs out (it may be alive
    // on another machine). Nothing is taken over yet; once the leases have run out, a server
    // takes them.
    auto listed = queue_->list();
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 3U);
    for (const auto& e : *listed) {
      EXPECT_EQ(e.owner, dead_owner) << e.run_id;
      EXPECT_EQ(e.state, "running") << e.run_id;
    }
    EXPECT_EQ(launcher_->childPid(alive_id), 0);
    launcher_.reset();
    EXPECT_EQ(storeCount("WITH u AS (UPDATE oe_run_queue SET lease_until_ms = 1 RETURNING 1) "
                         "SELECT count(*) FROM u"),
              3);
    start();
  }
  // The run whose child never began: run as asked, under its id.
  ASSERT_TRUE(launcher_->waitGone(never_id, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(never, never_id), "run.finished")["status"], "success");
  // The killed one: resumed as a new run of its chain.
  std::string resume_id;
  ASSERT_TRUE(waitUntil([&] {
    for (const auto& entry : std::filesystem::directory_iterator(killed / ".openexpertise/runs")) {
      const auto id = entry.path().stem().string();
      if (id != killed_id && entry.path().extension() == ".jsonl") {
        resume_id = id;
        return logHas(killed, id, "run.finished");
      }
    }
    return false;
  }));
  const auto resumed = logOf(killed, resume_id);
  EXPECT_EQ(eventOf(resumed, "run.started")["resumed_from"], killed_id);
  EXPECT_EQ(eventOf(resumed, "run.finished")["status"], "success");
  // The live one is watched: still in the queue, running, until cancelled.
  auto watched = queue_->find(alive_id);
  ASSERT_TRUE(watched && *watched);
  EXPECT_EQ((*watched)->state, "running");
  EXPECT_EQ(launcher_->childPid(alive_id), alive_pid);
  const auto c = call("POST", "/api/runs/" + alive_id + "/cancel");
  EXPECT_EQ(c.status, 202) << c.body;
  (void)prockit::reapChild(alive_pid);  // the test is its parent: the launcher only watches
  ASSERT_TRUE(launcher_->waitGone(alive_id, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(alive, alive_id), "run.finished")["status"], "interrupted");
}

// Stopping the server (SIGTERM to `oe serve`) stops its children, which record an interrupted
// run; the next server resumes them.
TEST_P(ServiceTest, AServerThatStopsLeavesItsRunsToBeResumedByTheNext) {
  const auto slow = experience("slow", blockingTool(root_ / "mark"));
  start();
  const std::string id = postRun(R"({"experience":"slow"})");
  ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(root_ / "mark"); }));
  launcher_->stop();
  EXPECT_EQ(eventOf(logOf(slow, id), "run.finished")["status"], "interrupted");
  launcher_.reset();
  queue_.reset();  // a new process would open the file again
  start();
  auto listed = queue_->list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1U);
  const std::string next = listed->front().run_id;
  EXPECT_EQ(listed->front().resume_of, id);
  ASSERT_TRUE(launcher_->waitGone(next, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(slow, next), "run.finished")["status"], "success");
}

TEST_P(ServiceTest, AnApprovalIsListedDecidedOnceAndContinuesTheRunThroughTheQueue) {
  const auto gated = root_ / "gated";
  experience("gated", kQuickTool);
  std::ofstream(gated / "experience.yaml")
      << "name: gated\nversion: 0.1.0\nstate:\n  schema:\n    done: { type: boolean }\n"
         "    decision: { type: object }\ngraph:\n  nodes:\n"
         "    - { id: review, kind: approval, prompt: Ship it, writes: [decision] }\n"
         "    - { id: t, kind: tool, impl: ./tools/t.sh, writes: [done] }\n"
         "  edges:\n    - { from: review, to: t, when: \"$.decision.approved == true\" }\n";
  start();
  const std::string id = postRun(R"({"experience":"gated"})");
  ASSERT_TRUE(launcher_->waitGone(id, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(gated, id), "run.finished")["status"], "waiting")
      << oe::test::readFile(childLogPath(root_, id));

  const auto listed = call("GET", "/api/approvals");
  ASSERT_EQ(listed.status, 200) << listed.body;
  const Json approvals = bodyOf(listed)["approvals"];
  ASSERT_EQ(approvals.size(), 1U) << listed.body;
  EXPECT_EQ(approvals[0]["node_id"], "review");
  EXPECT_EQ(approvals[0]["run_id"], id);
  EXPECT_EQ(approvals[0]["experience"], "gated");

  EXPECT_EQ(call("POST", "/api/approvals/" + id + "/nope/approve").status, 404);
  // A resume of the parked run that was cancelled while queued continues nothing: the decision
  // still queues the continuation. (Put in the queue while no launcher could claim it.)
  launcher_->stop();
  launcher_.reset();
  QueuedRun dropped;
  dropped.run_id = events::newRunId();
  dropped.experience = "gated";
  dropped.folder = "gated";
  dropped.kind = "resume";
  dropped.resume_of = id;
  dropped.enqueued_ms = nowMs();
  ASSERT_TRUE(queue_->enqueue(dropped));
  ASSERT_TRUE(*queue_->cancelQueued(dropped.run_id, nowMs()));
  start();

  const auto approved =
      call("POST", "/api/approvals/" + id + "/review/approve", R"({"comment":"ok","as":"ana"})");
  ASSERT_EQ(approved.status, 200) << approved.body;
  EXPECT_EQ(bodyOf(approved)["approval"]["decision"]["by"], "ana");
  ASSERT_TRUE(bodyOf(approved)["continued"].is_object()) << approved.body;
  const std::string next = bodyOf(approved)["continued"]["id"];
  EXPECT_NE(next, dropped.run_id);
  ASSERT_TRUE(launcher_->waitGone(next, kRunTimeout));
  const auto log = logOf(gated, next);
  EXPECT_EQ(eventOf(log, "run.started")["resumed_from"], id);
  EXPECT_EQ(eventOf(log, "run.finished")["status"], "success");
  const auto twice = call("POST", "/api/approvals/" + id + "/review/reject");
  EXPECT_EQ(twice.status, 409) << twice.body;
  EXPECT_NE(bodyOf(twice).value("detail", "").find("approved by ana"), std::string::npos);
  EXPECT_TRUE(bodyOf(call("GET", "/api/approvals"))["approvals"].empty());
}

// A pipeline stage asks per item: the API lists the question under its item key and decides it
// when the client percent-encodes that key as a path segment (`#` would end the path).
TEST_P(ServiceTest, APipelineStageAsksPerItemAndTheApiDecidesEachItemByItsKey) {
  const auto sub = root_ / "staged";
  std::filesystem::create_directories(sub / "tools");
  std::ofstream(sub / "experience.yaml")
      << "name: staged\nversion: 0.1.0\nstate:\n  schema:\n    items: { type: array }\n"
      << "    results: { type: array, merge: array_append }\ngraph:\n  nodes:\n"
      << "    - { id: seed, kind: tool, impl: ./tools/seed.sh, writes: [items] }\n"
      << "    - { id: check, kind: tool, impl: ./tools/check.sh, writes: [results],\n"
      << "        approval: { prompt: Check this item } }\n"
      << "  edges: []\n  pipelines:\n    - { id: p, items: $.items, stages: [check] }\n";
  std::ofstream(sub / "tools" / "seed.sh")
      << "#!/bin/sh\ncat > /dev/null\nprintf '{\"state_delta\":{\"items\":[\"x\",\"y\"]}}\\n'\n";
  std::ofstream(sub / "tools" / "check.sh")
      << "#!/bin/sh\ncat > /dev/null\nprintf '{\"state_delta\":{\"results\":[\"ok\"]}}\\n'\n";
  for (const char* tool : {"seed.sh", "check.sh"}) {
    std::filesystem::permissions(sub / "tools" / tool, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
  }
  start();
  std::string run = postRun(R"({"experience":"staged"})");
  for (const char* key : {"check@p#0", "check@p#1"}) {
    ASSERT_TRUE(launcher_->waitGone(run, kRunTimeout));
    ASSERT_EQ(eventOf(logOf(sub, run), "run.finished")["status"], "waiting")
        << oe::test::readFile(childLogPath(root_, run));
    const Json approvals = bodyOf(call("GET", "/api/approvals"))["approvals"];
    ASSERT_EQ(approvals.size(), 1U) << approvals.dump();
    EXPECT_EQ(approvals[0]["node_id"], key);
    const std::string encoded = std::regex_replace(
        std::regex_replace(std::string(key), std::regex("@"), "%40"), std::regex("#"), "%23");
    const auto approved =
        call("POST", "/api/approvals/" + run + "/" + encoded + "/approve", R"({"as":"ana"})");
    ASSERT_EQ(approved.status, 200) << approved.body;
    run = bodyOf(approved)["continued"]["id"];
  }
  ASSERT_TRUE(launcher_->waitGone(run, kRunTimeout));
  EXPECT_EQ(eventOf(logOf(sub, run), "run.finished")["status"], "success")
      << oe::test::readFile(childLogPath(root_, run));
  EXPECT_TRUE(bodyOf(call("GET", "/api/approvals"))["approvals"].empty());
}

// A partial run (a node failed, the others went on) is resumed as oe resume does it: the failed
// node runs again, the one that landed does not, and the chain ends in success.
TEST_P(ServiceTest, APartialRunIsResumedAndOnlyItsFailedNodeRunsAgain) {
  const auto sub = root_ / "halves";
  std::filesystem::create_directories(sub / "tools");
  std::ofstream(sub / "experience.yaml")
      << "name: halves\nversion: 0.1.0\nstate:\n  schema:\n    a: { type: boolean }\n"
      << "    b: { type: boolean }\ngraph:\n  nodes:\n"
      << "    - { id: a, kind: tool, impl: ./tools/a.sh, writes: [a] }\n"
      << "    - { id: b, kind: tool, impl: ./tools/b.sh, writes: [b] }\n  edges: []\n";
  const auto mark = root_ / "a-failed-once";
  const auto calls = root_ / "b-calls";
  std::ofstream(sub / "tools" / "a.sh")
      << "#!/bin/sh\ncat > /dev/null\nif [ ! -e '" << mark.string() << "' ]; then : > '"
      << mark.string() << "'; exit 1; fi\nprintf '{\"state_delta\":{\"a\":true}}\\n'\n";
  std::ofstream(sub / "tools" / "b.sh")
      << "#!/bin/sh\ncat > /dev/null\necho b >> '" << calls.string()
      << "'\nprintf '{\"state_delta\":{\"b\":true}}\\n'\n";
  for (const char* tool : {"a.sh", "b.sh"}) {
    std::filesystem::permissions(sub / "tools" / tool, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
  }
  start();
  const std::string first = postRun(R"({"experience":"halves"})");
  ASSERT_TRUE(launcher_->waitGone(first, kRunTimeout))
      << oe::test::readFile(childLogPath(root_, first));
  ASSERT_EQ(eventOf(logOf(sub, first), "run.finished")["status"], "partial")
      << oe::test::readFile(childLogPath(root_, first));

  const auto resumed = call("POST", "/api/runs/" + first + "/resume");
  ASSERT_EQ(resumed.status, 202) << resumed.body;
  const std::string next = bodyOf(resumed)["id"];
  ASSERT_TRUE(launcher_->waitGone(next, kRunTimeout))
      << oe::test::readFile(childLogPath(root_, next));
  EXPECT_EQ(eventOf(logOf(sub, next), "run.finished")["status"], "success");
  EXPECT_EQ(oe::test::readFile(calls), "b\n") << "b landed in the first run: not run again";
}

TEST_P(ServiceTest, HealthzAnswersWhileTheQueueDoes) {
  start();
  const auto r = call("GET", "/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(bodyOf(r)["status"], "ok");
}

INSTANTIATE_TEST_SUITE_P(Stores, ServiceTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& store) {
                           return store.param;
                         });

TEST(OeRunRunId, RefusesAnIdThatIsNotOneOrThatExists) {
  oe::test::TempDir dir;
  const auto exp = dir.path() / "e";
  std::filesystem::create_directories(exp / "tools");
  std::ofstream(exp / "experience.yaml")
      << "name: e\nversion: 0.1.0\nstate:\n  schema:\n    done: { type: boolean }\ngraph:\n"
         "  nodes:\n    - { id: t, kind: tool, impl: ./tools/t.sh, writes: [done] }\n  edges: []\n";
  std::ofstream(exp / "tools" / "t.sh") << kQuickTool;
  std::filesystem::permissions(exp / "tools" / "t.sh", std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  const auto bad = oe::test::runProcess({OE_EXE, "run", exp.string(), "--run-id", "abc"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("UUID v4"), std::string::npos) << bad.err;
  const std::string id = events::newRunId();
  const auto first = oe::test::runProcess({OE_EXE, "run", exp.string(), "--json", "--run-id", id});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(Json::parse(first.out)["run_id"], id);
  const auto second = oe::test::runProcess({OE_EXE, "run", exp.string(), "--run-id", id});
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("a run with this id exists"), std::string::npos) << second.err;
}

}  // namespace
}  // namespace oe::service
