// Claims queued runs and supervises their child `oe` processes (docs/serve.md, "Runs started from
// the API"). One thread does it all: claim while the limits allow, reap the children that ended,
// escalate a stop that takes too long, renew the leases.
#include "oe/service/launcher.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>

#include "oe/events/event_log.hpp"
#include "oe/runs/run_history.hpp"
#include "oe/service/service.hpp"
#include "oe/spec/workspace.hpp"
#include "proc_kit/subprocess.hpp"

namespace oe::service {
namespace {

using Clock = std::chrono::steady_clock;

// The child's command line: `oe run DIR` or `oe resume ID --experience DIR`, under the id the
// queue gave it, with the options the request asked for and the server's store and workers.
// --wait: runs of one experience share its state store (one writer at a time, docs D18), so a
// second one waits for the first rather than failing.
std::vector<std::string> childArgv(const LauncherOptions& o, const QueuedRun& e,
                                   const std::filesystem::path& dir) {
  std::vector<std::string> argv = {o.oe_exe.string()};
  if (e.kind == "resume") {
    argv.insert(argv.end(), {"resume", e.resume_of, "--experience", dir.string()});
  } else {
    argv.insert(argv.end(), {"run", dir.string(), "--args", e.args.dump()});
  }
  argv.insert(argv.end(), {"--json", "--run-id", e.run_id, "--wait"});
  const Json& opt = e.options;
  if (auto c = opt.find("concurrency"); c != opt.end() && c->is_number_integer()) {
    argv.insert(argv.end(), {"--concurrency", std::to_string(c->get<int64_t>())});
  }
  if (auto n = opt.find("no_cache"); n != opt.end() && n->is_boolean() && n->get<bool>()) {
    argv.emplace_back("--no-cache");
  }
  if (auto l = opt.find("llm"); l != opt.end() && l->is_string()) {
    argv.insert(argv.end(), {"--llm", l->get<std::string>()});
  }
  if (!o.store.empty()) {
    argv.insert(argv.end(), {"--store", o.store});
  }
  if (o.workers) {
    argv.emplace_back("--workers");
  }
  return argv;
}

// True while `pid` is a live (not zombie) process whose command line names `run_id`: the child a
// dead server started, not another process that got its pid since.
bool isChildOf(int64_t pid, const std::string& run_id) {
  if (pid <= 0) {
    return false;
  }
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream stat(proc + "/stat");
  std::string stat_text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = stat_text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat_text.size() || stat_text[paren + 2] == 'Z' ||
      stat_text[paren + 2] == 'X') {
    return false;
  }
  std::ifstream cmdline(proc + "/cmdline");
  std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  return args.find(run_id) != std::string::npos;
}

// How a run that a dead server left stands, from its log: none (its child never started it),
// finished (nothing to do), or to resume (unfinished, or interrupted by the stop).
enum class LeftAs { kNoLog, kFinished, kResume };

LeftAs leftAs(const std::filesystem::path& root, const QueuedRun& e) {
  auto dir = experienceDir(root, e.folder);
  if (!dir) {
    return LeftAs::kNoLog;
  }
  const auto runs_dir = spec::workspaceDir(*dir / "experience.yaml") / "runs";
  if (std::error_code ec; !std::filesystem::exists(runs_dir / (e.run_id + ".jsonl"), ec)) {
    return LeftAs::kNoLog;
  }
  for (const auto& run : runs::listRuns(runs_dir, true)) {
    if (run.id == e.run_id) {
      return run.finished() && run.status != "interrupted" ? LeftAs::kFinished : LeftAs::kResume;
    }
  }
  return LeftAs::kResume;
}

}  // namespace

std::string ownerName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) {
    std::strcpy(host, "localhost");
  }
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" +
         events::newRunId().substr(0, 8);
}

std::filesystem::path childLogPath(const std::filesystem::path& root, std::string_view run_id) {
  return root / ".openexpertise" / "serve" / "runs" / (std::string(run_id) + ".log");
}

Launcher::Launcher(Key /*only start()*/, RunQueue& queue, LauncherOptions options)
    : queue_(queue), options_(std::move(options)) {
  if (options_.owner.empty()) {
    options_.owner = ownerName();
  }
}

Result<std::unique_ptr<Launcher>> Launcher::start(RunQueue& queue, LauncherOptions options) {
  if (!options.oe_exe.is_absolute()) {
    return makeError("the launcher needs the absolute path of oe, not " + options.oe_exe.string());
  }
  auto launcher = std::make_unique<Launcher>(Key{}, queue, std::move(options));
  std::error_code ec;
  std::filesystem::create_directories(childLogPath(launcher->options_.root, "x").parent_path(), ec);
  if (ec) {
    return makeError("cannot create " +
                     childLogPath(launcher->options_.root, "x").parent_path().string() + ": " +
                     ec.message() + "; check the permissions of --root");
  }
  launcher->recover();
  launcher->dropOldCancelled();
  launcher->next_takeover_ = Clock::now() + launcher->options_.lease;
  launcher->thread_ = std::thread([l = launcher.get()] { l->loop(); });
  return launcher;
}

Launcher::~Launcher() { stop(); }

void Launcher::say(const std::string& message) { service::say(message); }

void Launcher::dropOldCancelled() {
  // The trace a cancelled queued run leaves is kept a week (docs/serve.md, "The queue").
  if (auto dropped = queue_.dropCancelled(nowMs() - kKeepCancelledMs); !dropped) {
    say("warning: " + dropped.error().message);
  }
}

void Launcher::recover() {
  auto left = queue_.takeOverExpired(options_.owner, nowMs(), options_.lease.count());
  if (!left) {
    say("warning: " + left.error().message);
    return;
  }
  const std::string host = options_.owner.substr(0, options_.owner.find(':'));
  for (auto& entry : *left) {
    const bool same_host = entry.owner.substr(0, entry.owner.find(':')) == host;
    if (same_host && isChildOf(entry.pid, entry.run_id)) {
      say("run " + entry.run_id + " (pid " + std::to_string(entry.pid) +
          ") outlived the server that started it: watching it");
      std::lock_guard lock(mutex_);
      children_.push_back(Child{entry, entry.pid, /*ours=*/false});
      continue;
    }
    switch (leftAs(options_.root, entry)) {
      case LeftAs::kNoLog:
        // Its child never began the run: it starts again as it was asked.
        if (auto r = queue_.requeue(entry); !r) {
          say("warning: " + r.error().message);
        }
        break;
      case LeftAs::kFinished:
        (void)queue_.remove(entry.run_id);
        break;
      case LeftAs::kResume: {
        // A resume is a new run of the same chain: queued where the run was, under a new id.
        QueuedRun resume = entry;
        resume.run_id = events::newRunId();
        resume.kind = "resume";
        resume.resume_of = entry.run_id;
        resume.state = "queued";
        if (auto r = queue_.enqueue(resume); !r) {
          say("warning: cannot queue the resume of run " + entry.run_id + ": " + r.error().message);
          break;
        }
        (void)queue_.remove(entry.run_id);
        say("run " + entry.run_id + " was stopped with its server: resuming it as run " +
            resume.run_id);
        break;
      }
    }
  }
}

void Launcher::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  wake_cv_.notify_all();
}

void Launcher::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    reap();
    const auto now = Clock::now();
    if (now >= next_takeover_) {
      // A server of a shared store that stopped renewing (it died) left its runs to us.
      next_takeover_ = now + options_.lease;
      recover();
      dropOldCancelled();
    }
    if (now >= next_renew_) {
      next_renew_ = now + options_.lease / 3;
      if (auto renewed = queue_.renew(options_.owner, options_.lease.count()); !renewed) {
        say("warning: " + renewed.error().message);
      }
    }
    while (true) {
      {
        std::lock_guard guard(mutex_);
        if (stopping_) {
          break;
        }
      }
      auto claimed = queue_.claim(options_.owner, options_.limits, options_.lease.count());
      if (!claimed) {
        if (Clock::now() >= next_error_) {
          next_error_ = Clock::now() + std::chrono::seconds(30);
          say("warning: " + claimed.error().message);
        }
        break;
      }
      if (!*claimed) {
        break;
      }
      launch(std::move(**claimed));
    }
    lock.lock();
    // Children are reaped on this thread: look again soon while some run.
    const auto wait =
        children_.empty() ? options_.poll : std::min(options_.poll, std::chrono::milliseconds(100));
    wake_cv_.wait_for(lock, wait, [this] { return woken_ || stopping_; });
    woken_ = false;
  }
}

void Launcher::launch(QueuedRun entry) {
  const auto log_path = childLogPath(options_.root, entry.run_id);
  prockit::UniqueFd log_fd(
      ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  auto fail = [&](const std::string& why) {
    const std::string line = "oe serve: run " + entry.run_id + " could not start: " + why + "\n";
    if (log_fd.valid()) {
      (void)!::write(log_fd.get(), line.data(), line.size());
    }
    say("run " + entry.run_id + " could not start: " + why);
    (void)queue_.remove(entry.run_id);
    ended_cv_.notify_all();
  };
  if (!log_fd.valid()) {
    fail("cannot open " + log_path.string() + ": " + std::strerror(errno));
    return;
  }
  auto dir = experienceDir(options_.root, entry.folder);
  if (!dir) {
    fail(dir.error().message);
    return;
  }
  prockit::UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  prockit::SpawnRequest request;
  request.argv = childArgv(options_, entry, *dir);
  request.path = request.argv.front();
  request.cwd = dir->string();
  request.fds = {{null_fd.get(), 0}, {log_fd.get(), 1}, {log_fd.get(), 2}};
  auto child = prockit::spawnChild(request);
  if (!child) {
    fail("cannot start " + request.path + ": " + child.failure().message);
    return;
  }
  if (auto r = queue_.setPid(entry.run_id, child->pid); !r) {
    say("warning: " + r.error().message);
  }
  entry.pid = child->pid;
  std::lock_guard lock(mutex_);
  children_.push_back(Child{std::move(entry), child->pid, /*ours=*/true});
}

void Launcher::reap() {
  std::vector<std::string> ended;
  {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    for (auto it = children_.begin(); it != children_.end();) {
      bool gone = false;
      if (it->ours) {
        int status = 0;
        pid_t r = 0;
        do {
          r = ::waitpid(static_cast<pid_t>(it->pid), &status, WNOHANG);
        } while (r < 0 && errno == EINTR);
        gone = r != 0;  // reaped, or no longer ours to wait for
        if (gone && prockit::groupHasLiveMembers(static_cast<pid_t>(it->pid))) {
          // What the run left in its group (a tool's background process) goes with it.
          ::kill(-static_cast<pid_t>(it->pid), SIGKILL);
        }
      } else {
        gone = !isChildOf(it->pid, it->entry.run_id);
      }
      if (!gone && it->signalled && !it->killed && now >= it->kill_at) {
        ::kill(-static_cast<pid_t>(it->pid), SIGKILL);  // it did not stop on SIGTERM
        it->killed = true;
      }
      if (gone) {
        ended.push_back(it->entry.run_id);
        it = children_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& run_id : ended) {
    if (auto r = queue_.remove(run_id); !r) {
      say("warning: " + r.error().message);
    }
  }
  if (!ended.empty()) {
    ended_cv_.notify_all();
  }
}

Result<Launcher::Cancel> Launcher::cancel(std::string_view run_id) {
  auto cancelled = queue_.cancelQueued(run_id, nowMs());
  if (!cancelled) {
    return cancelled.error();
  }
  if (*cancelled) {
    ended_cv_.notify_all();
    return Cancel::kCancelled;
  }
  std::lock_guard lock(mutex_);
  for (auto& child : children_) {
    if (child.entry.run_id == run_id) {
      if (!child.signalled) {
        // The engine stops scheduling, cancels its nodes and records an interrupted run.
        ::kill(-static_cast<pid_t>(child.pid), SIGTERM);
        child.signalled = true;
        child.kill_at = Clock::now() + options_.stop_grace;
      }
      return Cancel::kStopping;
    }
  }
  return Cancel::kNotHere;
}

int64_t Launcher::childPid(std::string_view run_id) {
  std::lock_guard lock(mutex_);
  for (const auto& child : children_) {
    if (child.entry.run_id == run_id) {
      return child.pid;
    }
  }
  return 0;
}

bool Launcher::waitGone(std::string_view run_id, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::unique_lock lock(mutex_);
  while (true) {
    lock.unlock();
    auto found = queue_.find(run_id);
    lock.lock();
    // A cancelled entry is a trace of a run that never started: nothing is owed.
    if (found && (!*found || (*found)->state == "cancelled")) {
      return true;
    }
    if (Clock::now() >= deadline) {
      return false;
    }
    // Woken when a child ends; the timeout covers an entry another server removes.
    ended_cv_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(200)));
  }
}

void Launcher::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
    stopping_ = true;
  }
  wake_cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  std::vector<Child> children;
  {
    std::lock_guard lock(mutex_);
    children.swap(children_);
  }
  for (auto& child : children) {
    ::kill(-static_cast<pid_t>(child.pid), SIGTERM);
  }
  // The entries stay running in the queue: the next server finds the children gone and resumes
  // their runs (each recorded interrupted by the SIGTERM).
  const auto kill_at = Clock::now() + options_.stop_grace;
  for (auto& child : children) {
    while (true) {
      const bool gone = child.ours ? ::waitpid(static_cast<pid_t>(child.pid), nullptr, WNOHANG) != 0
                                   : !isChildOf(child.pid, child.entry.run_id);
      if (gone) {
        break;
      }
      if (Clock::now() >= kill_at) {
        ::kill(-static_cast<pid_t>(child.pid), SIGKILL);
        if (child.ours) {
          (void)prockit::reapChild(static_cast<pid_t>(child.pid));
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (child.ours && prockit::groupHasLiveMembers(static_cast<pid_t>(child.pid))) {
      ::kill(-static_cast<pid_t>(child.pid), SIGKILL);
    }
    if (child.signalled) {
      (void)queue_.remove(child.entry.run_id);  // cancelled before the stop: not to be resumed
    }
  }
  // Every child has ended: the leases of what stays are given up (a lease that ran out a
  // millisecond ago), so on a shared store the next server, or another one running, resumes
  // those runs at its next look instead of after the lease (30 s). A server that dies gives up
  // nothing, and its runs wait for the lease as before.
  if (!children.empty()) {
    if (auto released = queue_.renew(options_.owner, -1); !released) {
      say("warning: " + released.error().message);
    }
  }
  ended_cv_.notify_all();
}

}  // namespace oe::service
