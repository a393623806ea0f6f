// The terminal driver on a real pseudo-terminal: the bytes it writes redraw the region in place,
// are synchronized, never clear the scrollback, and leave the final frame.
#include "oe/view/live_view.hpp"

#include <gtest/gtest.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <regex>
#include <thread>
#include "unit/view/run_event.hpp"

namespace oe::view {
namespace {

using test::runEvent;

// A pty of `cols` x `rows` whose master side is read to the end by a thread.
class Pty {
 public:
  Pty(unsigned short cols, unsigned short rows) {
    winsize ws{};
    ws.ws_col = cols;
    ws.ws_row = rows;
    EXPECT_EQ(openpty(&master_, &slave_, nullptr, nullptr, &ws), 0);
    termios raw{};
    tcgetattr(slave_, &raw);
    cfmakeraw(&raw);  // the bytes as written: no \n -> \r\n
    tcsetattr(slave_, TCSANOW, &raw);
    reader_ = std::thread([this] {
      char buf[4096];
      ssize_t n = 0;
      while ((n = ::read(master_, buf, sizeof buf)) > 0) {
        bytes_.append(buf, static_cast<size_t>(n));
      }
    });
  }
  ~Pty() {
    closeSlave();
    if (reader_.joinable()) {
      reader_.join();
    }
    ::close(master_);
  }
  int slave() const { return slave_; }
  // Everything written, once the terminal side is closed (the reader then sees EIO).
  const std::string& drain() {
    closeSlave();
    reader_.join();
    return bytes_;
  }

 private:
  void closeSlave() {
    if (slave_ >= 0) {
      ::close(slave_);
      slave_ = -1;
    }
  }
  int master_ = -1;
  int slave_ = -1;
  std::thread reader_;
  std::string bytes_;
};

size_t count(const std::string& hay, std::string_view needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

TEST(TerminalCaps, KnowsXtermAndRefusesDumb) {
  auto xterm = TerminalCaps::load("xterm");
  ASSERT_TRUE(xterm) << xterm.error().message;
  EXPECT_EQ(xterm->up(3), "\x1b[3A");
  EXPECT_EQ(xterm->erase_to_eol, "\x1b[K");
  EXPECT_EQ(xterm->erase_to_eos, "\x1b[J");
  auto dumb = TerminalCaps::load("dumb");
  ASSERT_FALSE(dumb);
  EXPECT_NE(dumb.error().message.find("TERM=dumb"), std::string::npos);
  auto unknown = TerminalCaps::load("no-such-terminal-oe");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("no-such-terminal-oe"), std::string::npos);
}

TEST(LiveView, RedrawsInPlaceAndLeavesTheFinalFrame) {
  Pty pty(60, 20);
  auto view = LiveView::start(
      pty.slave(), Dashboard({{"greet", "tool", "", "", false}, {"wave", "tool", "", "", false}}),
      "xterm");
  ASSERT_TRUE(view) << view.error().message;
  (*view)->onEvent(events::Event(runEvent("run.started")));
  (*view)->redrawNow();  // 3 lines: header and two nodes
  (*view)->onEvent(events::Event(runEvent("node.started", "greet")));
  (*view)->printAbove("oe: warning: [tool] a line that stays");
  (*view)->onEvent(events::Event(runEvent("node.finished", "greet")));
  (*view)->onEvent(
      events::Event(runEvent("node.skipped", "wave", {{"reason", "when: condition false"}})));
  (*view)->onEvent(events::Event(runEvent("run.finished", "", {{"status", "success"}})));
  (*view)->finish();
  (*view)->finish();  // idempotent
  view->reset();
  const std::string& out = pty.drain();

  EXPECT_EQ(out.find("\x1b[3J"), std::string::npos) << "the scrollback must never be cleared";
  EXPECT_EQ(count(out, std::string(kSyncBegin)), count(out, std::string(kSyncEnd)));
  EXPECT_GE(count(out, std::string(kSyncBegin)), 2u);
  // The second frame starts by moving up over the first (3 lines) and erases what is left.
  EXPECT_NE(out.find("\r\x1b[3A"), std::string::npos);
  EXPECT_NE(out.find("\x1b[J"), std::string::npos);
  // The warning is printed once, above the final frame, which is the last thing drawn.
  EXPECT_EQ(count(out, "a line that stays"), 1u);
  const size_t final_frame = out.rfind(std::string(kSyncBegin));
  EXPECT_LT(out.find("a line that stays"), out.find("finished: success", final_frame));
  EXPECT_NE(out.find("  ok     greet", final_frame), std::string::npos);
  EXPECT_NE(out.find("  skip   wave", final_frame), std::string::npos);
  // The cursor is hidden while the view draws and shown again at the end.
  EXPECT_EQ(out.find("\x1b[?25l"), 0u);
  EXPECT_NE(out.find("\x1b[?25h", final_frame), std::string::npos);
  // No line of a frame reaches the last column.
  const std::string text = std::regex_replace(out, std::regex("\x1b\\[[0-9;?]*[A-Za-z]|\r"), "");
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    EXPECT_LE(nl - start, 59u) << text.substr(start, nl - start);
    start = nl + 1;
  }
}

TEST(LiveView, ARunThatNeverStartedLeavesNoFrame) {
  Pty pty(60, 20);
  auto view = LiveView::start(pty.slave(), Dashboard({{"greet", "tool", "", "", false}}), "xterm");
  ASSERT_TRUE(view) << view.error().message;
  (*view)->redrawNow();
  (*view)->finish();
  view->reset();
  const std::string& out = pty.drain();
  const size_t final_frame = out.rfind(std::string(kSyncBegin));
  EXPECT_NE(out.find("oe  starting"), std::string::npos);  // drawn while it waited
  EXPECT_EQ(out.find("greet", final_frame), std::string::npos);
  EXPECT_NE(out.find("\r\x1b[2A\x1b[J", final_frame), std::string::npos);  // and erased
}

TEST(LiveView, EventsFromManyThreadsWhileItDraws) {
  Pty pty(80, 24);
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < 4; ++i) {
    nodes.push_back({"n" + std::to_string(i), "tool", "", "", true});
  }
  auto view = LiveView::start(pty.slave(), Dashboard(nodes), "xterm");
  ASSERT_TRUE(view) << view.error().message;
  LiveView& live = **view;
  live.onEvent(events::Event(runEvent("run.started")));
  static constexpr int kItems = 500;
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&live, w] {
      const std::string id = "n" + std::to_string(w);
      live.onEvent(events::Event(runEvent("node.items", id, {{"count", kItems}})));
      for (int i = 0; i < kItems; ++i) {
        live.onEvent(events::Event(runEvent("node.started", id)));
        live.onEvent(events::Event(
            runEvent("node.activity", id, {{"activity", "item " + std::to_string(i)}})));
        live.onEvent(events::Event(runEvent("node.finished", id)));
        if (i % 100 == 0) {
          live.printAbove("a note from " + id);
        }
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    live.redrawNow();  // beside the redraw thread's own frames
  }
  for (auto& worker : workers) {
    worker.join();
  }
  live.finish();
  view->reset();
  const std::string& out = pty.drain();
  const size_t final_frame = out.rfind(std::string(kSyncBegin));
  EXPECT_NE(out.find("4/4 nodes", final_frame), std::string::npos);
  EXPECT_NE(out.find("  ok     n3   tool       500/500", final_frame), std::string::npos)
      << out.substr(final_frame);
  EXPECT_EQ(count(out, "a note from n2"), 5u);
}

}  // namespace
}  // namespace oe::view
