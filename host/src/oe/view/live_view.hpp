// The live view's terminal driver: redraws the dashboard in place on a terminal (an inline,
// Ink-style "log-update" region, not a full screen), at most 10 times a second, from its own
// thread. Events only update the model under a short lock, so a run's threads never wait on the
// terminal. The final frame stays in the scrollback; the scrollback is never cleared.
#pragma once

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/view/dashboard.hpp"
#include "oe/view/frame.hpp"

namespace oe::view {

// The control sequences a redraw needs, from terminfo (ncurses' libtinfo).
struct TerminalCaps {
  std::string up_many;          // cuu: up %d lines
  std::string up_one;           // cuu1, repeated when cuu is missing
  std::string erase_to_eol;     // el: to the end of the line
  std::string erase_to_eos;     // ed: to the end of the screen (never the scrollback: no E3)
  std::string cursor_hide;      // civis, optional
  std::string cursor_show;      // cnorm, optional
  size_t default_columns = 80;  // terminfo's, for when the tty cannot say
  size_t default_rows = 24;

  // The capabilities of terminal type `term` (TERM when empty). An error when terminfo does not
  // know it, or it lacks what an in-place redraw needs (cursor up, erase line, erase down).
  [[nodiscard]] static Result<TerminalCaps> load(const std::string& term);
  [[nodiscard]] std::string up(size_t lines) const;
};

// DEC synchronized output (mode 2026): the terminal shows a frame whole instead of half drawn.
// Terminals without it ignore the private mode; terminfo has no standard capability for it.
inline constexpr std::string_view kSyncBegin = "\x1b[?2026h";
inline constexpr std::string_view kSyncEnd = "\x1b[?2026l";

class LiveView {
 public:
  static constexpr std::chrono::milliseconds kRedrawInterval{100};  // at most 10 frames a second

  // Starts drawing `dashboard` on terminal `fd` (stderr in `oe run`). An error when `fd` is not a
  // terminal that supports an in-place redraw (the caller falls back to plain lines).
  [[nodiscard]] static Result<std::unique_ptr<LiveView>> start(int fd, Dashboard dashboard,
                                                               const std::string& term = {});
  ~LiveView();  // finish()
  LiveView(const LiveView&) = delete;
  LiveView& operator=(const LiveView&) = delete;

  // From any thread (the event log's writers, workers): O(1) under the model's lock; never
  // touches the terminal.
  void onEvent(const events::Event& event);
  // A line that must stay (a warning): printed above the live region at the next redraw.
  void printAbove(std::string line);
  // Draws now rather than at the next tick (tests; the redraw thread does it by itself).
  void redrawNow() { draw(/*final_frame=*/false, /*forced=*/true); }
  // Stops the redraw thread, draws the final frame and leaves it (and the cursor below it) in
  // the scrollback. Idempotent.
  void finish();

  // Whether `oe run` should show the live view without --tui: stderr is a terminal and TERM is
  // set and not "dumb".
  [[nodiscard]] static bool wanted(int fd);

  LiveView(int fd, Dashboard dashboard, TerminalCaps caps);  // through start()

 private:
  void loop();
  void draw(bool final_frame, bool forced = false);
  [[nodiscard]] FrameSize size() const;
  void writeAll(const std::string& bytes) const;

  const int fd_;
  const TerminalCaps caps_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex mutex_;       // the model and the pending lines
  std::mutex draw_mutex_;  // the terminal side of a redraw: what was drawn, and the writing
  std::condition_variable wake_;
  Dashboard dashboard_;
  std::vector<std::string> above_;
  bool stopping_ = false;
  uint64_t drawn_version_ = UINT64_MAX;
  int64_t drawn_tenths_ = -1;  // elapsed time shown, in 0.1 s
  FrameSize drawn_size_{};
  // The live region's lines, by display width: the cursor is on the line below them.
  std::vector<size_t> drawn_widths_;
  struct sigaction previous_winch_ {};
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace oe::view
