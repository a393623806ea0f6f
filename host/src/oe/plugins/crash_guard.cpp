// The crash handler (crash_guard.hpp). Everything reachable from the handler is
// async-signal-safe: it reads a thread_local pointer, formats into stack buffers and calls
// write(2), clock_gettime, sigaction and raise.
#include "oe/plugins/crash_guard.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace oe::plugins {
namespace {

constexpr std::string_view kExitCause = "exit()";
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};

// The innermost scope of this thread; constinit keeps the access free of any lazy
// initialisation, which a signal handler could not afford.
constinit thread_local const CrashScope* t_scope = nullptr;
// Whether this thread has an alternate signal stack (ours or one somebody set before): a plugin
// that overflows its stack can only be reported from another one.
constinit thread_local bool t_alt_stack_checked = false;

struct sigaction g_previous[NSIG];
// One report per process: a second thread crashing while the first reports stays quiet.
std::atomic<bool> g_reported{false};

// The alternate stack this thread mapped; unmapped when the thread ends.
class AltStack {
 public:
  AltStack() = default;
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;
  ~AltStack() {
    if (base_ != nullptr) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
      munmap(base_, size_);
    }
  }
  void map() {
    // 64 KiB, or what the kernel says a signal frame needs (AVX-512 frames are large).
    size_ = std::max<size_t>(64 * 1024, static_cast<size_t>(sysconf(_SC_SIGSTKSZ)));
    void* base = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
      return;  // no report of a stack overflow on this thread; everything else still works
    }
    stack_t stack{};
    stack.ss_sp = base;
    stack.ss_size = size_;
    if (sigaltstack(&stack, nullptr) != 0) {
      munmap(base, size_);
      return;
    }
    base_ = base;
  }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

void ensureAltStack() {
  t_alt_stack_checked = true;
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) {
    return;  // the thread has one (a sanitizer's runtime gives every thread one)
  }
  thread_local AltStack stack;
  stack.map();
}

const char* signalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGABRT:
      return "SIGABRT";
    case SIGSYS:
      return "SIGSYS";
    default:
      return "a fatal signal";
  }
}

void onFatalSignal(int sig, siginfo_t* info, void* /*context*/) {
  const int saved_errno = errno;
  if (const CrashScope* scope = CrashScope::current();
      scope != nullptr && !g_reported.exchange(true)) {
    scope->report(signalName(sig));
  }
  // The disposition in place before ours (the default: die, with a core if so configured).
  sigaction(sig, &g_previous[sig], nullptr);
  if (info == nullptr || info->si_code <= 0) {
    // Sent (abort(), kill): it is blocked while this handler runs, so it is delivered again,
    // to the restored disposition, when the handler returns. A fault (si_code > 0) happens
    // again by itself when the faulting instruction runs again.
    raise(sig);
  }
  errno = saved_errno;
}

void onExit() {
  // exit() called by a plugin: atexit handlers run on the thread that called exit.
  if (const CrashScope* scope = CrashScope::current();
      scope != nullptr && !g_reported.exchange(true)) {
    scope->report(kExitCause);
  }
}

// A bounded buffer that formats without allocating.
class Line {
 public:
  void add(std::string_view text) {
    const size_t n = std::min(text.size(), sizeof(buffer_) - size_);
    std::copy_n(text.data(), n, buffer_ + size_);
    size_ += n;
  }
  void add(char c) { add(std::string_view(&c, 1)); }
  // As the inside of a JSON string.
  void addJson(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (const char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        add('\\');
        add(c);
      } else if (byte < 0x20) {
        add("\\u00");
        add(kHex[byte >> 4]);
        add(kHex[byte & 0xf]);
      } else {
        add(c);
      }
    }
  }
  void addNumber(int64_t value, int width) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value > 0 && n < 20);
    for (int pad = n; pad < width; ++pad) {
      add('0');
    }
    while (n > 0) {
      add(digits[--n]);
    }
  }
  // ISO-8601 UTC with milliseconds, as every other event's "ts" (events/event_log.hpp).
  void addTimestamp() {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    const int64_t seconds = now.tv_sec;
    // Civil date from days since 1970-01-01 (the proleptic Gregorian calendar, in 400-year eras).
    const int64_t days = seconds / 86400;
    const int64_t second_of_day = seconds % 86400;
    const int64_t z = days + 719468;
    const int64_t era = z / 146097;
    const int64_t day_of_era = z - era * 146097;
    const int64_t year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    const int64_t day_of_year =
        day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    const int64_t mp = (5 * day_of_year + 2) / 153;
    const int64_t day = day_of_year - (153 * mp + 2) / 5 + 1;
    const int64_t month = mp < 10 ? mp + 3 : mp - 9;
    const int64_t year = year_of_era + era * 400 + (month <= 2 ? 1 : 0);
    addNumber(year, 4);
    add('-');
    addNumber(month, 2);
    add('-');
    addNumber(day, 2);
    add('T');
    addNumber(second_of_day / 3600, 2);
    add(':');
    addNumber(second_of_day / 60 % 60, 2);
    add(':');
    addNumber(second_of_day % 60, 2);
    add('.');
    addNumber(now.tv_nsec / 1000000, 3);
    add('Z');
  }
  void writeTo(int fd) const {
    size_t done = 0;
    while (done < size_) {
      const ssize_t n = ::write(fd, buffer_ + done, size_ - done);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        return;
      }
      done += static_cast<size_t>(n);
    }
  }

 private:
  char buffer_[2048];
  size_t size_ = 0;
};

}  // namespace

template <size_t N>
void CrashScope::Text<N>::set(std::string_view text) noexcept {
  size = std::min(text.size(), N);
  std::copy_n(text.data(), size, data);
}

void installCrashHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = &onFatalSignal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (const int sig : kFatalSignals) {
      struct sigaction previous {};
      if (sigaction(sig, nullptr, &previous) != 0 || previous.sa_handler == SIG_IGN) {
        continue;
      }
      g_previous[sig] = previous;
      sigaction(sig, &action, nullptr);
    }
    std::atexit(&onExit);
  });
}

CrashScope::CrashScope(std::string_view phase, std::string_view plugin_id, std::string_view kind,
                       std::string_view node, std::string_view call, std::string_view run_id,
                       int event_log_fd) noexcept
    : event_log_fd_(event_log_fd), previous_(t_scope) {
  phase_.set(phase);
  plugin_id_.set(plugin_id);
  kind_.set(kind);
  node_.set(node);
  call_.set(call);
  run_id_.set(run_id);
  if (!t_alt_stack_checked) {
    ensureAltStack();
  }
  t_scope = this;
}

CrashScope::~CrashScope() { t_scope = previous_; }

const CrashScope* CrashScope::current() noexcept { return t_scope; }

void CrashScope::report(std::string_view what) const noexcept {
  Line message;
  message.add("oe: plugin `");
  message.add(plugin_id_.view());
  if (what == kExitCause) {
    message.add("` called exit() in ");
    message.add(phase_.view());
  } else {
    message.add("` crashed in ");
    message.add(phase_.view());
    message.add(" (");
    message.add(what);
    message.add(")");
  }
  message.add(" while running node `");
  message.add(call_.view());
  message.add("` (kind ");
  message.add(kind_.view());
  message.add(")");
  if (run_id_.size > 0) {
    message.add(" of run ");
    message.add(run_id_.view());
    message.add("; the run is left resumable: fix or remove the plugin, then `oe resume ");
    message.add(run_id_.view());
    message.add("`");
  }
  message.add('\n');
  message.writeTo(STDERR_FILENO);

  const int fd = event_log_fd_.load(std::memory_order_relaxed);
  if (fd < 0) {
    return;
  }
  // One line, one write(2), as the event log writes every line (event_log.hpp).
  Line event;
  event.add(R"({"type":"plugin.crashed","run_id":")");
  event.addJson(run_id_.view());
  event.add(R"(","node_id":")");
  event.addJson(node_.view());
  event.add(R"(","ts":")");
  event.addTimestamp();
  event.add(R"(","call":")");
  event.addJson(call_.view());
  event.add(R"(","plugin":")");
  event.addJson(plugin_id_.view());
  event.add(R"(","kind":")");
  event.addJson(kind_.view());
  event.add(R"(","phase":")");
  event.addJson(phase_.view());
  event.add(R"(","cause":")");
  event.addJson(what);
  event.add("\"}\n");
  event.writeTo(fd);
}

}  // namespace oe::plugins
