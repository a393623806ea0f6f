// The live view's terminal driver; see live_view.hpp.
#include "oe/view/live_view.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "oe/view/text.hpp"

namespace oe::view {

namespace {

// Set by SIGWINCH, read by the redraw thread: a signal handler can only store to a lock-free
// atomic, so this one flag is process-wide. A resize may have reflowed the old frame's lines.
std::atomic<bool> g_resized{false};

extern "C" void onWindowChange(int /*signal*/) { g_resized.store(true); }

}  // namespace

bool LiveView::wanted(int fd) {
  const char* term = std::getenv("TERM");
  return isatty(fd) == 1 && term != nullptr && *term != '\0' && std::strcmp(term, "dumb") != 0;
}

Result<std::unique_ptr<LiveView>> LiveView::start(int fd, Dashboard dashboard,
                                                  const std::string& term) {
  auto caps = TerminalCaps::load(term);
  if (!caps) {
    return caps.error();
  }
  return std::make_unique<LiveView>(fd, std::move(dashboard), std::move(*caps));
}

LiveView::LiveView(int fd, Dashboard dashboard, TerminalCaps caps)
    : fd_(fd), caps_(std::move(caps)), dashboard_(std::move(dashboard)) {
  struct sigaction action {};
  action.sa_handler = onWindowChange;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGWINCH, &action, &previous_winch_);
  writeAll(caps_.cursor_hide);
  thread_ = std::thread([this] { loop(); });
}

LiveView::~LiveView() { finish(); }

void LiveView::onEvent(const events::Event& event) {
  std::lock_guard lock(mutex_);
  dashboard_.apply(event);
}

void LiveView::printAbove(std::string line) {
  {
    std::lock_guard lock(mutex_);
    if (!finished_) {
      above_.push_back(std::move(line));
      return;
    }
  }
  // After the final frame, just below it: once its bytes are out (draw holds draw_mutex_ while
  // writing; taken without mutex_, the order draw takes them in).
  std::lock_guard drawing(draw_mutex_);
  writeAll(line + "\n");
}

void LiveView::finish() {
  {
    std::lock_guard lock(mutex_);
    if (finished_) {
      return;
    }
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  draw(/*final_frame=*/true);  // sets finished_ with the model's last lines taken
  writeAll(caps_.cursor_show);
  sigaction(SIGWINCH, &previous_winch_, nullptr);
}

FrameSize LiveView::size() const {
  winsize ws{};
  if (ioctl(fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    return {ws.ws_col, ws.ws_row};
  }
  return {caps_.default_columns, caps_.default_rows};
}

void LiveView::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kRedrawInterval, [this] { return stopping_; });
    if (stopping_) {
      break;
    }
    lock.unlock();
    draw(/*final_frame=*/false);
    lock.lock();
  }
}

void LiveView::draw(bool final_frame, bool forced) {
  std::lock_guard drawing(draw_mutex_);
  const FrameSize now_size = size();
  const bool resized = g_resized.exchange(false) || now_size.columns != drawn_size_.columns ||
                       now_size.rows != drawn_size_.rows;
  const int64_t elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now() - started_)
                                 .count();
  std::vector<std::string> lines;
  std::vector<std::string> above;
  {
    // Only the model's part of a redraw holds the lock: rendering costs the size of the screen,
    // never of the run; the terminal is written without it.
    std::lock_guard lock(mutex_);
    const int64_t tenths = elapsed_ms / 100;
    if (!final_frame && !forced && !resized && above_.empty() &&
        dashboard_.version() == drawn_version_ && tenths == drawn_tenths_) {
      return;
    }
    drawn_version_ = dashboard_.version();
    drawn_tenths_ = tenths;
    // A run that never started (refused: a held state store, a bad budget) leaves no frame
    // behind, only its error message.
    if (!(final_frame && dashboard_.runId().empty())) {
      lines = renderFrame(dashboard_, now_size, elapsed_ms);
    }
    above.swap(above_);
    finished_ = finished_ || final_frame;  // later lines go below the final frame
  }
  // Where the live region starts. A terminal that reflows on resize (tmux, VTE) rewraps the old
  // lines to the new width, so each old line may now take several rows.
  size_t up_rows = 0;
  for (size_t width : drawn_widths_) {
    up_rows += now_size.columns > 0 && width > now_size.columns
                   ? (width + now_size.columns - 1) / now_size.columns
                   : 1;
  }
  up_rows = std::min(up_rows, now_size.rows > 0 ? now_size.rows - 1 : 0);
  std::string out(kSyncBegin);
  out += '\r';
  out += caps_.up(up_rows);
  for (const auto& line : above) {
    out += line;
    out += caps_.erase_to_eol;
    out += '\n';
  }
  drawn_widths_.clear();
  for (const auto& line : lines) {
    out += line;
    out += caps_.erase_to_eol;
    out += '\n';
    drawn_widths_.push_back(displayWidth(line));
  }
  out += caps_.erase_to_eos;  // what is left of a taller previous frame, never the scrollback
  out += kSyncEnd;
  drawn_size_ = now_size;
  if (final_frame) {
    drawn_widths_.clear();  // the final frame stays: nothing will move up over it
  }
  writeAll(out);
}

void LiveView::writeAll(const std::string& bytes) const {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // a closed terminal: the run goes on without a view
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace oe::view

// ncurses' terminfo API, last: its header defines a macro per capability (`columns`, `lines`,
// `cursor_up`, ...) for the rest of the file. For the same reason this file is kept out of the
// module's unity build (host/CMakeLists.txt).
#include <term.h>

namespace oe::view {

namespace {

std::string capability(const char* name) {
  // tigetstr takes a non-const char* in older ncurses; the name is not modified.
  const char* value = tigetstr(const_cast<char*>(name));
  if (value == nullptr || value == reinterpret_cast<const char*>(-1)) {
    return {};
  }
  return value;
}

}  // namespace

Result<TerminalCaps> TerminalCaps::load(const std::string& term) {
  const char* name = term.empty() ? std::getenv("TERM") : term.c_str();
  if (name == nullptr || *name == '\0') {
    return makeError("TERM is not set, so the terminal's capabilities are unknown");
  }
  int status = 0;
  // fd -1: terminfo must not touch the terminal (it would query its size and modes).
  if (setupterm(const_cast<char*>(name), -1, &status) != 0) {
    return makeError(std::string("terminfo has no entry for TERM=") + name +
                     " (install ncurses-term, or set TERM to your terminal's type)");
  }
  TerminalCaps caps;
  caps.up_many = capability("cuu");
  caps.up_one = capability("cuu1");
  caps.erase_to_eol = capability("el");
  caps.erase_to_eos = capability("ed");
  caps.cursor_hide = capability("civis");
  caps.cursor_show = capability("cnorm");
  const int cols = tigetnum(const_cast<char*>("cols"));
  const int rows = tigetnum(const_cast<char*>("lines"));
  caps.default_columns = cols > 0 ? static_cast<size_t>(cols) : 80;
  caps.default_rows = rows > 0 ? static_cast<size_t>(rows) : 24;
  del_curterm(cur_term);  // the strings are copied; tiparm needs no terminal
  if ((caps.up_many.empty() && caps.up_one.empty()) || caps.erase_to_eol.empty() ||
      caps.erase_to_eos.empty()) {
    return makeError(std::string("TERM=") + name +
                     " cannot move the cursor up or erase a line, which a live view needs");
  }
  return caps;
}

std::string TerminalCaps::up(size_t lines_up) const {
  if (lines_up == 0) {
    return {};
  }
  if (!up_many.empty()) {
    return tiparm(up_many.c_str(), static_cast<int>(lines_up));
  }
  std::string out;
  for (size_t i = 0; i < lines_up; ++i) {
    out += up_one;
  }
  return out;
}

}  // namespace oe::view
