// `oe serve`'s launcher (docs/serve.md, "Runs started from the API"): claims runs from the queue
// within its limits and runs each as a child `oe run --json --run-id ID` (or `oe resume`) of the
// same binary, in a process group of its own, its output in a file of its own. It stops them on
// cancel (SIGTERM, then SIGKILL after a grace: the run ends interrupted and stays resumable), and
// on start takes over what a server that died left running: a child still alive is watched, one
// that is gone is resumed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/service/run_queue.hpp"

namespace oe::service {

struct LauncherOptions {
  std::filesystem::path oe_exe;  // the oe binary the children run (absolute)
  std::filesystem::path root;    // --root, canonical: an entry's experience is a folder below it
  std::string store;             // --store URL, passed to every child; empty: none
  bool workers = false;          // --workers, passed to every child
  ClaimLimits limits;
  // Who this server is in the queue's rows: "host:pid:nonce" by default (ownerName()).
  std::string owner;
  // How long a claimed run is ours without a renewal (PostgreSQL: another server takes over the
  // runs of one that stopped renewing). Renewed every third of it.
  std::chrono::milliseconds lease{30000};
  // After SIGTERM (a cancel, or the server stopping), how long a child may take to record its
  // interrupted run before its process group is killed.
  std::chrono::milliseconds stop_grace{20000};
  // How often the queue is looked at when nothing woke the launcher (another server's enqueue on
  // a shared store, a limit freed by a child on another machine).
  std::chrono::milliseconds poll{500};
};

// "host:pid:nonce": this process, told apart from a later one that reuses its pid.
std::string ownerName();

// The file a run's child writes its stdout and stderr to: <root>/.openexpertise/serve/runs/ID.log.
std::filesystem::path childLogPath(const std::filesystem::path& root, std::string_view run_id);

class Launcher {
  struct Key {};  // only start() constructs one

 public:
  Launcher(Key, RunQueue& queue, LauncherOptions options);
  // Takes over the running entries another server left (see the file's comment), then starts
  // the thread that claims and watches. `queue` outlives the launcher.
  static Result<std::unique_ptr<Launcher>> start(RunQueue& queue, LauncherOptions options);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // [thread-safe] Looks at the queue now (after an enqueue).
  void wake();

  enum class Cancel { kCancelled, kStopping, kNotHere };
  // [thread-safe] A queued run is marked cancelled in the queue (it never starts; its entry
  // stays listed until the retention drops it); a running child of ours gets SIGTERM
  // (and SIGKILL after stop_grace), its entry going when it has ended. kNotHere: neither (not in
  // the queue, or running under another server).
  Result<Cancel> cancel(std::string_view run_id);

  // [thread-safe] Stops claiming, sends SIGTERM to every child and waits for them (SIGKILL after
  // stop_grace). Their entries stay running in the queue with their leases given up, so the
  // next server (on a shared store, any other at its next look) resumes them. Idempotent; the
  // destructor calls it.
  void stop();

  // [thread-safe] Waits until the queue no longer owes `run_id` (it ended or was removed, or was
  // cancelled before it started: its entry stays, cancelled) or `timeout` passes; true when so.
  // For tests and shutdown.
  bool waitGone(std::string_view run_id, std::chrono::milliseconds timeout);

  // [thread-safe] The pid of the child running `run_id` here, 0 when none.
  int64_t childPid(std::string_view run_id);

  [[nodiscard]] const LauncherOptions& options() const { return options_; }

 private:
  struct Child {
    QueuedRun entry;
    int64_t pid = 0;
    bool ours = true;  // spawned by us (reaped with waitpid); false: adopted from a dead server
    std::chrono::steady_clock::time_point kill_at{};  // set once SIGTERM was sent
    bool signalled = false;
    bool killed = false;
  };

  void loop();
  void recover();
  // Removes the queue's entries cancelled more than kKeepCancelledMs ago.
  void dropOldCancelled();
  void launch(QueuedRun entry);
  void reap();
  void say(const std::string& message);

  RunQueue& queue_;
  LauncherOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_cv_;
  std::condition_variable ended_cv_;
  bool woken_ = false;
  bool stopping_ = false;
  bool stopped_ = false;
  std::vector<Child> children_;
  std::chrono::steady_clock::time_point next_renew_{};
  std::chrono::steady_clock::time_point next_takeover_{};
  std::chrono::steady_clock::time_point next_error_{};  // rate-limits the queue's errors
  std::thread thread_;
};

}  // namespace oe::service
