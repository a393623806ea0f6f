// The command line as a user meets it (issue 10): bad invocations refused before anything is
// recorded, run ids by prefix or --last, failures that say why in every output mode, cached
// nodes and retries shown once, long values shortened, a notice for nodes that never settle, and
// a reader of its output that goes away does not stop a run.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "live_oe.hpp"
#include "oe_fixture.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

constexpr std::string_view kToolsYaml = R"(name: cli
version: 0.1.0
state:
  schema:
    greeting: {type: string}
graph:
  nodes:
    - {id: flaky, kind: tool, impl: ./tools/fail.mjs,
       on_error: {policy: retry, attempts: 2, base_ms: 1}}
    - {id: greet, kind: tool, impl: ./tools/greet.mjs, writes: [greeting]}
  edges: []
)";

constexpr std::string_view kFailJs =
    "export default async function () { throw new Error('boom at the flaky node'); }\n";
constexpr std::string_view kGreetJs =
    "export default async function () { return { state_delta: { greeting: 'hello' } }; }\n";

class CliTest : public OeTest {
 protected:
  void writeTools() {
    writeExperience(kToolsYaml);
    writeTool("fail.mjs", kFailJs);
    writeTool("greet.mjs", kGreetJs);
  }
  // The run logs in .openexpertise/runs.
  size_t runLogs() {
    size_t n = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir_.path() / ".openexpertise" / "runs", ec), end;
         !ec && it != end; it.increment(ec)) {
      n += it->path().extension() == ".jsonl" ? 1 : 0;
    }
    return n;
  }
  // A fake run log, so that ids (and their prefixes) are chosen by the test.
  void writeRunLog(const std::string& id, const std::string& ts) {
    dir_.write(
        ".openexpertise/runs/" + id + ".jsonl",
        json{{"type", "run.started"}, {"run_id", id}, {"ts", ts}, {"args", json::object()}}.dump() +
            "\n" +
            json{{"type", "run.finished"},
                 {"run_id", id},
                 {"ts", ts},
                 {"status", "success"},
                 {"nodes", {{"ran", 0}, {"cached", 0}, {"failed", 0}, {"skipped", 0}}}}
                .dump() +
            "\n");
  }
  static size_t lines(const std::string& text, std::string_view needle) {
    size_t n = 0;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) {
        end = text.size();
      }
      n += std::string_view(text).substr(start, end - start).find(needle) != std::string_view::npos;
      start = end + 1;
    }
    return n;
  }
};

TEST_F(CliTest, BadInvocationsExitTwoBeforeAnythingIsRecorded) {
  writeTools();
  const std::string dir = dir_.path().string();
  const std::map<std::string, std::string> no_keys = {
      {"ANTHROPIC_API_KEY", ""}, {"OPENAI_API_KEY", ""}, {"OPENAI_BASE_URL", ""}};
  const TempDir not_an_experience;
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"run", dir, "--llm", "bogus"}, "unknown --llm value \"bogus\""},
      {{"run", dir, "--llm", "anthropic"}, "ANTHROPIC_API_KEY"},
      {{"run", dir, "--llm", "openai"}, "OPENAI_API_KEY"},
      {{"run", dir, "--llm-replay", (dir_.path() / "missing.jsonl").string()}, "missing.jsonl"},
      {{"run", dir, "--llm-record", (dir_.path() / "no/such/folder/rec.jsonl").string()},
       "does not exist"},
      {{"run", dir, "--only", "nope"}, "--only: no node \"nope\""},
      {{"run", dir, "--from", "nope"}, "--from: no node \"nope\""},
      {{"resume", "--last", "--experience", dir, "--llm", "bogus"}, "no runs yet"},
      {{"runs", "--experience", not_an_experience.path().string()}, "not an experience folder"},
      {{"inspect", "abc", "--experience", not_an_experience.path().string()},
       "not an experience folder"},
      {{"inspect", "abc", "--experience", dir}, "no runs yet"},
  };
  for (const auto& c : cases) {
    auto r = oe(c.args, no_keys);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args.back() << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(runLogs(), 0U) << c.args.back();
  }
  // The same flags, usable: a key-less local OpenAI server, an existing recording.
  dir_.write("rec.jsonl", "");
  auto local =
      oe({"run", dir, "-q", "--llm", "openai"}, {{"ANTHROPIC_API_KEY", ""},
                                                 {"OPENAI_API_KEY", ""},
                                                 {"OPENAI_BASE_URL", "http://127.0.0.1:9/v1"}});
  EXPECT_EQ(local.exit_code, 1) << local.err;  // partial: the flaky node fails
  auto replay = oe({"run", dir, "-q", "--llm", "anthropic", "--llm-replay",
                    (dir_.path() / "rec.jsonl").string()},
                   no_keys);
  EXPECT_EQ(replay.exit_code, 1) << replay.err;
  EXPECT_EQ(runLogs(), 2U);
}

TEST_F(CliTest, UnknownCommandSaysSo) {
  auto r = oe({"bogus", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command \"bogus\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("resume"), std::string::npos) << r.err;  // it lists the commands
  EXPECT_EQ(oe({"--version"}).exit_code, 0);
}

TEST_F(CliTest, HelpNamesWhatEachNumericOptionTakes) {
  // The numeric flags are parsed by oe (for messages naming them), so CLI11 would call them TEXT.
  for (const char* command : {"run", "resume"}) {
    auto r = oe({command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("--concurrency INT"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--max-tokens INT"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--max-cost-usd NUMBER"), std::string::npos) << r.out;
  }
  EXPECT_NE(oe({"run", "--help"}).out.find("--args JSON"), std::string::npos);
  EXPECT_NE(oe({"gc", "--help"}).out.find("--older-than DURATION"), std::string::npos);
}

TEST_F(CliTest, RunIdsByUniquePrefixOrLast) {
  writeExperience(R"(name: cli
version: 0.1.0
state: {schema: {greeting: {type: string}}}
graph: {nodes: [{id: greet, kind: tool, impl: ./tools/greet.mjs, writes: [greeting]}], edges: []}
)");
  writeTool("greet.mjs", kGreetJs);
  writeRunLog("aaaa1111-0000-4000-8000-000000000000", "2026-01-01T00:00:00.000Z");
  writeRunLog("aaaa2222-0000-4000-8000-000000000000", "2026-01-02T00:00:00.000Z");
  const std::string dir = dir_.path().string();

  auto unique = oe({"inspect", "aaaa1", "--experience", dir});
  EXPECT_EQ(unique.exit_code, 0) << unique.err;
  EXPECT_NE(unique.out.find("run aaaa1111-0000-4000-8000-000000000000"), std::string::npos);

  auto ambiguous = oe({"inspect", "aaaa", "--experience", dir});
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("matches 2 runs"), std::string::npos) << ambiguous.err;
  EXPECT_NE(ambiguous.err.find("aaaa1111-0000"), std::string::npos) << ambiguous.err;
  EXPECT_NE(ambiguous.err.find("aaaa2222-0000"), std::string::npos) << ambiguous.err;

  auto none = oe({"inspect", "bbbb", "--experience", dir});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no run \"bbbb\""), std::string::npos) << none.err;
  EXPECT_EQ(oe({"resume", "bbbb", "--experience", dir}).exit_code, 2);
  EXPECT_EQ(oe({"inspect", "--experience", dir}).exit_code, 2);  // neither an id nor --last

  // A real run is the newest: --last names it, and a resume of it records its full id.
  json first = runJson({"-q"});
  const std::string id = first["run_id"];
  auto last = oe({"inspect", "--last", "--experience", dir});
  EXPECT_EQ(last.exit_code, 0) << last.err;
  EXPECT_NE(last.out.find("run " + id), std::string::npos) << last.out;

  auto resumed = oe({"resume", id.substr(0, 8), "--experience", dir, "--json", "-q"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto resumed_id = json::parse(resumed.out)["run_id"].get<std::string>();
  EXPECT_EQ(events(resumed_id).front()["resumed_from"], id);

  auto resumed_last = oe({"resume", "--last", "--experience", dir, "--json", "-q"});
  ASSERT_EQ(resumed_last.exit_code, 0) << resumed_last.err;
  EXPECT_EQ(
      events(json::parse(resumed_last.out)["run_id"].get<std::string>()).front()["resumed_from"],
      resumed_id);
}

TEST_F(CliTest, FailuresSayWhyInJsonQuietAndProgress) {
  writeTools();
  int code = -1;
  json out = runJson({}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out["status"], "partial");
  ASSERT_EQ(out["failures"].size(), 1U) << out.dump();
  EXPECT_EQ(out["failures"][0]["node_id"], "flaky");
  EXPECT_NE(out["failures"][0]["error"].get<std::string>().find("boom at the flaky node"),
            std::string::npos);
  EXPECT_TRUE(out["warnings"].is_array());

  auto quiet = oe({"run", dir_.path().string(), "-q"});
  EXPECT_EQ(quiet.exit_code, 1);
  EXPECT_EQ(quiet.err, "");
  EXPECT_NE(quiet.out.find("failed: flaky: "), std::string::npos) << quiet.out;
  EXPECT_NE(quiet.out.find("boom at the flaky node"), std::string::npos) << quiet.out;
  EXPECT_NE(quiet.out.find("oe inspect "), std::string::npos) << quiet.out;
}

TEST_F(CliTest, TheSummaryHintsAtTheDefaultConcurrencyOnlyWhenNodesWaitedOnIt) {
  const std::string three = R"(name: three
version: 0.1.0
state: { schema: { a: { type: string }, b: { type: string }, c: { type: string } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./t.mjs, args: { f: a }, writes: [a] }
    - { id: b, kind: tool, impl: ./t.mjs, args: { f: b }, writes: [b] }
    - { id: c, kind: tool, impl: ./t.mjs, args: { f: c }, writes: [c] }
  edges: []
%RUNTIME%)";
  dir_.write("t.mjs", "export default async (a) => ({ state_delta: { [a.f]: a.f } });\n");
  auto with_runtime = [&](const std::string& runtime) {
    std::string yaml = three;
    yaml.replace(yaml.find("%RUNTIME%"), 9, runtime);
    return yaml;
  };
  writeExperience(with_runtime(""));
  auto waited = oe({"run", dir_.path().string(), "--no-cache"});
  ASSERT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_NE(waited.out.find("note: one node ran at a time (runtime.concurrency defaults to 1) "
                            "while up to 2 more were ready"),
            std::string::npos)
      << waited.out;
  // Asked for explicitly (even 1), or with room for all three: no hint.
  EXPECT_EQ(oe({"run", dir_.path().string(), "--no-cache", "--concurrency", "1"}).out.find("note:"),
            std::string::npos);
  writeExperience(with_runtime("runtime: { concurrency: 3 }\n"));
  EXPECT_EQ(oe({"run", dir_.path().string(), "--no-cache"}).out.find("note:"), std::string::npos);
  // A chain never has two ready nodes: no hint either.
  writeExperience(R"(name: chain
version: 0.1.0
state: { schema: { a: { type: string }, b: { type: string } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./t.mjs, args: { f: a }, writes: [a] }
    - { id: b, kind: tool, impl: ./t.mjs, args: { f: b }, writes: [b] }
  edges: [ { from: a, to: b } ]
)");
  EXPECT_EQ(oe({"run", dir_.path().string(), "--no-cache"}).out.find("note:"), std::string::npos);
}

TEST_F(CliTest, ProgressNamesEachItemOfAForEach) {
  writeExperience(R"(name: items
version: 0.1.0
state: { schema: { xs: { type: array }, out: { type: array, merge: array_append } } }
graph:
  nodes:
    - { id: load, kind: tool, impl: ./load.mjs, writes: [xs] }
    - { id: square, kind: tool, impl: ./sq.mjs, writes: [out], for_each: { source: $.xs } }
  edges: [ { from: load, to: square } ]
)");
  dir_.write("load.mjs", "export default async () => ({ state_delta: { xs: [1, 2, 3] } });\n");
  dir_.write("sq.mjs",
             "export default async (a) => ({ state_delta: { out: [a.$item * a.$item] } });\n");
  auto first = oe({"run", dir_.path().string(), "--no-tui"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  for (const char* line : {"  ok      square [0]", "  ok      square [1]",
                           "  ok      square [2]", "  ok      load"}) {
    EXPECT_EQ(lines(first.err, line), 1U) << line << " in\n" << first.err;
  }
  auto second = oe({"run", dir_.path().string(), "--no-tui"});
  EXPECT_EQ(lines(second.err, "  cached  square [2]"), 1U) << second.err;
}

TEST_F(CliTest, CachedNodesShownAsCachedAndEachRetryOnOneLine) {
  writeTools();
  auto first = oe({"run", dir_.path().string()});
  EXPECT_EQ(lines(first.err, "  ok      greet"), 1U) << first.err;
  // One retry line, without the error's stack: the stack is printed once, with the failure.
  EXPECT_EQ(lines(first.err, "  retry   flaky after attempt 1"), 1U) << first.err;
  EXPECT_EQ(lines(first.err, "fail.mjs"), 1U) << first.err;

  auto second = oe({"run", dir_.path().string()});
  EXPECT_EQ(lines(second.err, "  cached  greet"), 1U) << second.err;
  EXPECT_EQ(lines(second.err, "  ok      greet"), 0U) << second.err;
}

TEST_F(CliTest, AProviderRetryIsPrintedOnce) {
  // The provider plugin reports a retry wait as a WARN log line and as a node.activity event
  // with the same text; the progress shows it once.
  FakeLlmServer server;
  server.enqueue(FakeLlmServer::rateLimited("0"));
  server.enqueue(FakeLlmServer::openAiText("fine"));
  dir_.write("prompts/p.md", "say something");
  writeExperience(R"(name: cli
version: 0.1.0
state: {schema: {said: {type: string}}}
graph: {nodes: [{id: talk, kind: agent, prompt: prompts/p.md, writes: [said]}], edges: []}
)");
  auto r = oe({"run", dir_.path().string()}, {{"OPENAI_BASE_URL", server.baseUrl() + "/v1"},
                                              {"OPENAI_API_KEY", "test-key"},
                                              {"ANTHROPIC_API_KEY", ""}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.err, "HTTP 429"), 1U) << r.err;
}

TEST_F(CliTest, LongValuesAreShortenedInTheSummary) {
  const std::string big(1000, 'x');
  writeExperience(R"(name: cli
version: 0.1.0
state: {schema: {big: {type: string}, small: {type: string}}}
graph: {nodes: [{id: write, kind: tool, impl: ./tools/big.mjs, writes: [big, small]}], edges: []}
)");
  writeTool("big.mjs", "export default async function () { return { state_delta: { big: '" + big +
                           "', small: 'short' } }; }\n");
  const std::string dir = dir_.path().string();
  auto r = oe({"run", dir, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find(big), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(1002 chars; `oe state big --experience " + dir + "` prints it all)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  small: \"short\"\n"), std::string::npos) << r.out;
  // The command the summary names prints the whole value.
  auto state = oe({"state", "big", "--experience", dir});
  EXPECT_NE(state.out.find(big), std::string::npos);
}

TEST_F(CliTest, RefusedPluginSaysWhyTheLoaderRefusedIt) {
  writeTools();
  dir_.write("plugins/broken.so", "this is not a shared library");
  trust(dir_.path());  // else the run refuses it before the loader sees it (docs/trust.md)
  auto r = oe({"run", dir_.path().string(), "-q"});
  EXPECT_NE(r.err.find("broken.so: not a loadable shared library"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Bad file descriptor"), std::string::npos) << r.err;
}

constexpr std::string_view kHangYaml = R"(name: cli
version: 0.1.0
state: {schema: {}}
graph: {nodes: [{id: hang, kind: tool, impl: ./tools/hang.mjs}], edges: []}
)";
// Never settles; the timer keeps Node's event loop (and so the call) alive.
constexpr std::string_view kHangJs =
    "export default async function () { setInterval(() => {}, 60000); await new Promise(() => "
    "{}); }\n";

TEST_F(CliTest, ANodeThatNeverSettlesGetsAStillRunningNotice) {
  writeExperience(kHangYaml);
  writeTool("hang.mjs", kHangJs);
  LiveOe run({"run", dir_.path().string()}, {{"OE_STILL_RUNNING_INTERVAL_MS", "20"}}, dir_.path());
  ASSERT_TRUE(run.waitForStderr("  still running: hang for ")) << run.err();
  run.signal(SIGTERM);
  const int status = run.wait();
  EXPECT_TRUE(WIFEXITED(status)) << "oe did not handle SIGTERM";
  EXPECT_NE(run.out().find("stopped: "), std::string::npos) << run.out();
}

// A reader that goes away never stops a run: `oe run ... 2>&1 | head -1` used to die of SIGPIPE
// (exit 141) at its next progress line, leaving the run `unfinished`. The run now completes, its
// log and state whole, and the programs it starts still get SIGPIPE's default disposition.

// The middle node announces that it runs (`reached`), then waits for `gate`, which the test
// creates once the reader of oe's output is gone; it reports the signals its process ignores.
constexpr std::string_view kPipedYaml = R"(name: piped
version: 0.1.0
state:
  schema:
    a: { type: string }
    b: { type: string }
    c: { type: string }
    ignored: { type: string }
graph:
  nodes:
    - { id: first, kind: tool, impl: ./tools/put.sh, args: { field: a }, writes: [a] }
    - { id: gated, kind: tool, impl: ./tools/gated.sh, writes: [b, ignored] }
    - { id: last, kind: tool, impl: ./tools/put.sh, args: { field: c }, writes: [c] }
  edges:
    - { from: first, to: gated }
    - { from: gated, to: last }
)";

constexpr std::string_view kPipedPutSh = R"SH(#!/bin/sh
IFS= read -r input || true
field=${input#*\"field\":\"}; field=${field%%\"*}
printf '{"state_delta":{"%s":"done"}}\n' "$field"
)SH";

// SigIgn of /proc/self/status: the mask of ignored signals, inherited across exec.
constexpr std::string_view kPipedGatedSh = R"SH(#!/bin/sh
cat > /dev/null
: > reached
while [ ! -e gate ]; do sleep 0.02; done
ignored=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status)
printf '{"state_delta":{"b":"done","ignored":"%s"}}\n' "$ignored"
)SH";

class ClosedOutput : public OeTest {
 protected:
  void SetUp() override {
    writeExperience(kPipedYaml);
    writeExecutable("tools/put.sh", kPipedPutSh);
    writeExecutable("tools/gated.sh", kPipedGatedSh);
  }

  // `oe <args>` in the experience's folder with stdout on `out_fd` and stderr on `err_fd`,
  // started as a shell starts a command: SIGPIPE at its default.
  pid_t spawnOe(std::vector<std::string> args, int out_fd, int err_fd) {
    args.insert(args.begin(), OE_EXE);
    SpawnArgs spawn(args, {{"OE_PLUGIN_PATH", ""}});
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    posix_spawn_file_actions_addchdir_np(&actions, dir_.path().c_str());
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    const int rc =
        posix_spawn(&pid, args[0].c_str(), &actions, &attributes, spawn.argv(), spawn.envp());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    EXPECT_EQ(rc, 0);
    return pid;
  }

  // The exit code, or 128+N when killed by signal N (as a shell says it).
  static int waitFor(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // Reads one line from `fd`, as `head -1` does before it exits.
  static std::string readLine(int fd) {
    std::string line;
    char c = 0;
    while (::read(fd, &c, 1) == 1 && c != '\n') {
      line += c;
    }
    return line;
  }

  std::vector<nlohmann::json> onlyRunsEvents() {
    std::vector<std::string> ids;
    for (const auto& entry :
         std::filesystem::directory_iterator(dir_.path() / ".openexpertise" / "runs")) {
      if (entry.path().extension() == ".jsonl") {
        ids.push_back(entry.path().stem().string());
      }
    }
    EXPECT_EQ(ids.size(), 1u);
    return ids.empty() ? std::vector<nlohmann::json>{} : events(ids[0]);
  }
};

TEST_F(ClosedOutput, ARunWhoseReaderWentAwayCompletesWithItsLogAndStateWhole) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const int read_end = fds[0];
  const pid_t pid = spawnOe({"run", dir_.path().string(), "--no-tui"}, fds[1], fds[1]);
  ::close(fds[1]);
  ASSERT_TRUE(waitForFile(dir_ / "reached"));
  // The first progress line came through; then the reader goes, and only then does the run go
  // on, so every later line (progress, summary, final state) meets a closed pipe.
  EXPECT_NE(readLine(read_end).find("first"), std::string::npos);
  ::close(read_end);
  dir_.write("gate", "");
  const int code = waitFor(pid);
  EXPECT_EQ(code, 0) << "128 + " << SIGPIPE << " is a death by SIGPIPE";

  const auto log = onlyRunsEvents();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().value("type", ""), "run.finished");
  EXPECT_EQ(log.back().value("status", ""), "success");
  EXPECT_EQ(count(log, "node.finished"), 3u);

  auto state = oe({"state", "--experience", dir_.path().string(), "--json"});
  ASSERT_EQ(state.exit_code, 0) << state.err;
  const auto values = nlohmann::json::parse(state.out);
  EXPECT_EQ(values["a"], "done");
  EXPECT_EQ(values["b"], "done");
  EXPECT_EQ(values["c"], "done");
  // oe ignores SIGPIPE; the tool it started must not inherit that (bit SIGPIPE - 1 of SigIgn).
  const unsigned long long ignored = std::stoull(values["ignored"].get<std::string>(), nullptr, 16);
  EXPECT_EQ(ignored & (1ULL << (SIGPIPE - 1)), 0u) << values["ignored"];
}

// Only stdout closed, before the first byte (`oe run --json | true`): the summary cannot be
// printed, and the exit code is still the run's.
TEST_F(ClosedOutput, AClosedStdoutDoesNotStopTheRun) {
  dir_.write("gate", "");
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[0]);  // the reader is gone before the first byte
  const int err_fd = ::open((dir_ / "err.txt").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  const pid_t pid = spawnOe({"run", dir_.path().string(), "--json"}, fds[1], err_fd);
  ::close(fds[1]);
  ::close(err_fd);
  EXPECT_EQ(waitFor(pid), 0);
  const auto log = onlyRunsEvents();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().value("type", ""), "run.finished");
  EXPECT_EQ(log.back().value("status", ""), "success");
}

}  // namespace
}  // namespace oe::test
