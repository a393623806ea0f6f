// The live view of `oe run --tui` in a real terminal: tmux (a server of the test's own) runs oe
// under `script`, which keeps the raw bytes; the test reads the screen with capture-pane. It
// waits by polling the screen or a file, within a bound, never for a fixed time.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <regex>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

namespace fs = std::filesystem;

size_t occurrences(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

class LiveViewTest : public OeTest {
 protected:
  void SetUp() override {
    // remain-on-exit: the pane, and what oe left on it, stays after oe exits.
    dir_.write("tmux.conf", "set -g remain-on-exit on\nset -g history-limit 5000\n");
  }
  void TearDown() override { (void)tmux({"kill-server"}); }

  ProcessResult tmux(std::vector<std::string> args) {
    args.insert(args.begin(), {"tmux", "-S", (dir_.path() / "tmux.sock").string(), "-f",
                               (dir_.path() / "tmux.conf").string()});
    return runProcess(args);
  }

  // A copy of an experience folder of the source tree in the temp dir, without a .openexpertise/
  // left by someone who ran it in place (the README's first command runs hello-tool there).
  fs::path copyExperience(const std::string& rel, const std::string& name) {
    const fs::path to = dir_.path() / name;
    fs::copy(fs::path(OE_SOURCE_DIR) / rel, to, fs::copy_options::recursive);
    fs::remove_all(to / ".openexpertise");
    return to;
  }

  // Starts `oe <args>` in a detached session of `cols` x `rows`, under `script`, whose raw output
  // goes to raw.log. TERM is tmux's ("screen").
  void start(const std::string& args, int cols = 100, int rows = 30) {
    const std::string command = std::string("env -u OE_PLUGIN_PATH script -qfec '") + OE_EXE + " " +
                                args + "' " + (dir_.path() / "raw.log").string();
    auto r = tmux({"new-session", "-d", "-s", session_, "-x", std::to_string(cols), "-y",
                   std::to_string(rows), command});
    ASSERT_EQ(r.exit_code, 0) << "tmux new-session failed (install tmux: .ci/deps): " << r.err;
  }

  // The pane's text; with the scrollback when `history`.
  std::string screen(bool history = false) {
    std::vector<std::string> args = {"capture-pane", "-p", "-t", session_};
    if (history) {
      args.insert(args.end(), {"-S", "-"});
    }
    return tmux(args).out;
  }

  // Polls (every 20 ms, for at most a minute) until `done` holds.
  static bool waitUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      const timespec pause{0, 20'000'000};
      nanosleep(&pause, nullptr);
    }
    return true;
  }

  // Waits for oe to exit; its exit status.
  int waitForExit() {
    const auto field = [this](const char* format) {
      std::string out = tmux({"display-message", "-p", "-t", session_, format}).out;
      while (!out.empty() && out.back() == '\n') {
        out.pop_back();
      }
      return out;
    };
    EXPECT_TRUE(waitUntil([&] { return field("#{pane_dead}") == "1"; }))
        << "oe did not end; the screen:\n"
        << screen();
    // oe's own status as `script` recorded it: the pane's is script's, which under load was
    // seen as 0 while script's log said oe exited 130 (script's status, not oe's, was off).
    const std::string log = raw();
    const std::string key = "COMMAND_EXIT_CODE=\"";
    if (const size_t at = log.rfind(key); at != std::string::npos) {
      return std::atoi(log.c_str() + at + key.size());
    }
    return std::atoi(field("#{pane_dead_status}").c_str());
  }

  std::string raw() { return readFile(dir_.path() / "raw.log"); }

  std::string session_ = "oe";  // the session the helpers act on

  // What every run's output must satisfy: one final frame (earlier frames were redrawn in place,
  // not scrolled away), the summary below it, and raw bytes that never clear the scrollback.
  void expectCleanEnd(const std::string& history, const std::string& status) {
    EXPECT_EQ(occurrences(history, "oe run "), 1u) << history;
    const size_t frame = history.find("finished: " + status);
    const size_t summary = history.find(": " + status + " in ");
    EXPECT_NE(frame, std::string::npos) << history;
    EXPECT_NE(summary, std::string::npos) << history;
    EXPECT_LT(frame, summary) << "the final frame stays above the summary:\n" << history;
    const std::string bytes = raw();
    EXPECT_EQ(bytes.find("\x1b[3J"), std::string::npos) << "the scrollback was cleared";
    EXPECT_NE(bytes.find("\x1b[?2026h"), std::string::npos) << "no synchronized output";
  }
};

TEST_F(LiveViewTest, HelloToolEndsOnItsFinalFrameAndSummary) {
  const fs::path exp = copyExperience("examples/hello-tool", "hello");
  start("run " + exp.string() + " --tui");
  EXPECT_EQ(waitForExit(), 0);
  const std::string history = screen(true);
  expectCleanEnd(history, "success");
  EXPECT_NE(history.find("1/1 nodes"), std::string::npos) << history;
  EXPECT_NE(history.find("  ok     greet tool\n"), std::string::npos) << history;
  EXPECT_NE(history.find("greeting: \"hello, World\""), std::string::npos) << history;
}

TEST_F(LiveViewTest, SixtyNodeFanOutCollapsesToItsPhases) {
  const fs::path exp = copyExperience("tests/integration/live_view/fanout-60", "fanout");
  start("run " + exp.string() + " --tui");
  EXPECT_EQ(waitForExit(), 0);
  const std::string history = screen(true);
  expectCleanEnd(history, "success");
  // 60 nodes do not fit 29 lines: a line per phase with its counts.
  EXPECT_NE(history.find("60/60 nodes"), std::string::npos) << history;
  EXPECT_NE(history.find("\nPrepare  1/1  1 ok\n"), std::string::npos) << history;
  EXPECT_NE(history.find("\nFan out  58/58  58 ok\n"), std::string::npos) << history;
  EXPECT_NE(history.find("\nFan in  1/1  1 ok\n"), std::string::npos) << history;
  EXPECT_NE(history.find("total: 12"), std::string::npos) << history;
  const std::string visible = screen();
  size_t start = 0;
  for (size_t nl = visible.find('\n'); nl != std::string::npos; nl = visible.find('\n', start)) {
    EXPECT_LT(nl - start, 100u) << "a line reached the last column";
    start = nl + 1;
  }
}

TEST_F(LiveViewTest, ATallTerminalListsEveryNodeWithForEachProgress) {
  const fs::path exp = copyExperience("tests/integration/live_view/fanout-60", "fanout");
  start("run " + exp.string() + " --tui", 100, 70);
  EXPECT_EQ(waitForExit(), 0);
  const std::string history = screen(true);
  expectCleanEnd(history, "success");
  EXPECT_NE(history.find("  ok     seed   tool\n"), std::string::npos) << history;
  EXPECT_NE(history.find("  ok     w57    tool\n"), std::string::npos) << history;
  EXPECT_NE(history.find("  ok     each   tool       12/12\n"), std::string::npos) << history;
  EXPECT_NE(history.find("  ok     gather tool\n"), std::string::npos) << history;
}

TEST_F(LiveViewTest, CtrlCLeavesARunThatResumeCompletes) {
  const fs::path exp = copyExperience("tests/integration/live_view/slow", "slow");
  start("run " + exp.string() + " --tui");
  ASSERT_TRUE(waitForFile(exp / "waiting")) << screen();
  // The live view shows the node that waits before Ctrl-C arrives.
  ASSERT_TRUE(waitUntil([&] { return screen().find("  run    wait") != std::string::npos; }))
      << screen();
  ASSERT_EQ(tmux({"send-keys", "-t", session_, "C-c"}).exit_code, 0);
  EXPECT_EQ(waitForExit(), 130) << screen(true);  // 128 + SIGINT, as a shell reports it
  const std::string history = screen(true);
  expectCleanEnd(history, "interrupted");
  EXPECT_NE(history.find("oe resume "), std::string::npos) << history;

  // `oe resume` shows the live view too: the finished node replays from the cache.
  dir_.write("slow/release", "");
  // A second session on the same server: killing the last one would stop the server while the
  // next new-session connects to it.
  session_ = "resume";
  start("resume --last --experience " + exp.string() + " --tui");
  EXPECT_EQ(waitForExit(), 0);
  const std::string resumed = screen(true);
  EXPECT_NE(resumed.find("finished: success"), std::string::npos) << resumed;
  EXPECT_NE(resumed.find("  cached first tool\n"), std::string::npos) << resumed;
  EXPECT_NE(resumed.find("  ok     wait  tool\n"), std::string::npos) << resumed;
  EXPECT_NE(resumed.find("second: \"released\""), std::string::npos) << resumed;
}

TEST_F(LiveViewTest, AResizeRedrawsTheFrameForTheNewSize) {
  const fs::path exp = copyExperience("tests/integration/live_view/slow", "slow");
  start("run " + exp.string() + " --tui");
  ASSERT_TRUE(waitForFile(exp / "waiting")) << screen();
  ASSERT_TRUE(waitUntil([&] { return screen().find("  run    wait") != std::string::npos; }))
      << screen();
  ASSERT_EQ(tmux({"resize-window", "-t", session_, "-x", "40", "-y", "12"}).exit_code, 0);
  // One frame on the screen, redrawn for 40 columns: no line reaches the last column. (tmux
  // reflows the old frame's longer lines as it narrows; what it pushes into the scrollback there
  // is out of any program's reach, so only the screen is asserted.)
  const auto fits = [&] {
    const std::string visible = screen();
    if (occurrences(visible, "oe run ") != 1 ||
        visible.find("  run    wait") == std::string::npos) {
      return false;
    }
    size_t start = 0;
    for (size_t nl = visible.find('\n'); nl != std::string::npos; nl = visible.find('\n', start)) {
      if (nl - start >= 40) {
        return false;
      }
      start = nl + 1;
    }
    return true;
  };
  EXPECT_TRUE(waitUntil(fits)) << screen();
  ASSERT_EQ(tmux({"send-keys", "-t", session_, "C-c"}).exit_code, 0);
  EXPECT_EQ(waitForExit(), 130) << screen(true);
}

TEST_F(LiveViewTest, NoTuiKeepsThePlainLinesOnATerminal) {
  const fs::path exp = copyExperience("examples/hello-tool", "hello");
  start("run " + exp.string() + " --no-tui");
  EXPECT_EQ(waitForExit(), 0);
  EXPECT_EQ(raw().find("\x1b["), std::string::npos) << raw();
  EXPECT_NE(screen(true).find("  ok      greet"), std::string::npos) << screen(true);
}

TEST_F(LiveViewTest, JsonStaysMachineReadableOnATerminal) {
  const fs::path exp = copyExperience("examples/hello-tool", "hello");
  start("run " + exp.string() + " --json");
  EXPECT_EQ(waitForExit(), 0);
  const std::string bytes = raw();
  EXPECT_EQ(bytes.find("\x1b["), std::string::npos) << bytes;
  const size_t open = bytes.find('{');
  const size_t close = bytes.rfind('}');
  ASSERT_NE(open, std::string::npos) << bytes;
  auto parsed = nlohmann::json::parse(bytes.substr(open, close - open + 1), nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << bytes;
  EXPECT_EQ(parsed["status"], "success");
}

}  // namespace
}  // namespace oe::test
