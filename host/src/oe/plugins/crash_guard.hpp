// Who crashed: a plugin that kills the process in invoke (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
// SIGABRT, SIGSYS, or exit() from inside the call) takes oe down with it, since it runs in oe's
// address space. Before the process dies, a handler writes which plugin, kind and node were
// running to stderr and, as a `plugin.crashed` line, to the run's event log, so the user knows
// whom to blame and that `oe resume` continues the run (docs/trust.md, "When a plugin crashes").
//
// A thread that calls into a plugin opens a CrashScope around the call; the handler reads the
// innermost scope of the thread that took the signal. Everything the handler touches was copied
// into the scope beforehand, so the handler only formats fixed buffers and calls write(2).
#pragma once

#include <atomic>
#include <cstddef>
#include <string_view>

namespace oe::plugins {

// Installs the handlers once per process (later calls do nothing). Signals whose disposition is
// SIG_IGN are left alone; a handler installed before ours (a sanitizer's) runs after ours.
void installCrashHandler();

// What a thread is running in a plugin; one lives on the calling thread's stack for the length
// of the call. The texts are copied (truncated to the buffers), so the handler never reads an
// object that may be gone by the time the plugin crashes (a run that abandoned the call).
class CrashScope {
 public:
  // `phase`: "invoke" or "create". `call`: the call's key ("node", "node#3", "stage@p#1").
  // `event_log_fd`: the run's JSONL log (O_APPEND), or -1.
  CrashScope(std::string_view phase, std::string_view plugin_id, std::string_view kind,
             std::string_view node, std::string_view call, std::string_view run_id,
             int event_log_fd) noexcept;
  ~CrashScope();
  CrashScope(const CrashScope&) = delete;
  CrashScope& operator=(const CrashScope&) = delete;

  // The run gave the call up (its log may be closed, its descriptor reused): from now on a
  // crash is reported on stderr only.
  void forgetEventLog() noexcept { event_log_fd_.store(-1, std::memory_order_relaxed); }

  // For the handler (async-signal-safe): the innermost scope of the calling thread, or null.
  static const CrashScope* current() noexcept;
  // Writes the report of a crash by `what` ("SIGSEGV", "exit()") to stderr and the event log.
  void report(std::string_view what) const noexcept;

 private:
  template <size_t N>
  struct Text {
    char data[N];
    size_t size = 0;
    void set(std::string_view text) noexcept;
    [[nodiscard]] std::string_view view() const noexcept { return {data, size}; }
  };

  Text<16> phase_;
  Text<160> plugin_id_;
  Text<96> kind_;
  Text<128> node_;
  Text<192> call_;
  Text<64> run_id_;
  std::atomic<int> event_log_fd_;
  const CrashScope* previous_;
};

}  // namespace oe::plugins
