// Process plumbing shared by the plugins that run programs: see subprocess.hpp.
#include "proc_kit/subprocess.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <utility>

extern char** environ;  // NOLINT: POSIX declares it nowhere else

namespace oe::prockit {
namespace {

// Sources are first moved above every target fd, so a dup2 in the child can never overwrite a
// source that a later dup2 still needs (our pipe fds are often 3 and 4 themselves).
constexpr int kFirstHighFd = 10;

std::string errnoText(int error_number) { return std::strerror(error_number); }

int openPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

int UniqueFd::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

Expected<Pipe> makePipe() {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return fail(OE_RESOURCE_EXHAUSTED, "could not create a pipe: " + errnoText(errno));
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

bool setNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

Expected<Child> spawnChild(const SpawnRequest& request) {
  if (request.sandbox) {
    if (request.sandbox->exe.empty()) {
      return fail(OE_FAILED_PRECONDITION,
                  "a policy is in force for this node, but oe-sandbox (which enforces it) was "
                  "not found next to oe nor in its libexec/oe folder; reinstall oe");
    }
    SpawnRequest confined = request;
    confined.sandbox.reset();
    confined.path = request.sandbox->exe;
    confined.argv = {request.sandbox->exe, "--confinement", request.sandbox->confinement, "--",
                     request.path};
    confined.argv.insert(confined.argv.end(), request.argv.begin() + (request.argv.empty() ? 0 : 1),
                         request.argv.end());
    return spawnChild(confined);
  }
  std::vector<UniqueFd> high_fds;
  high_fds.reserve(request.fds.size());
  for (const FdMapping& mapping : request.fds) {
    const int high = ::fcntl(mapping.source, F_DUPFD_CLOEXEC, kFirstHighFd);
    if (high < 0) {
      return fail(OE_RESOURCE_EXHAUSTED, "could not duplicate a descriptor: " + errnoText(errno));
    }
    high_fds.emplace_back(high);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (size_t i = 0; i < request.fds.size(); ++i) {
    posix_spawn_file_actions_adddup2(&actions, high_fds[i].get(), request.fds[i].target);
  }
  if (!request.cwd.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, request.cwd.c_str());
  }

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // Own process group: a terminal's Ctrl-C reaches the host, which decides; cancelling a tool
  // signals the whole group, so what the tool started goes too.
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  posix_spawnattr_setsigmask(&attributes, &empty_mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  argv.reserve(request.argv.size() + 1);
  for (const std::string& arg : request.argv) {
    argv.push_back(const_cast<char*>(arg.c_str()));  // NOLINT: posix_spawn's signature
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (request.env) {
    envp.reserve(request.env->size() + 1);
    for (const std::string& entry : *request.env) {
      envp.push_back(const_cast<char*>(entry.c_str()));  // NOLINT: posix_spawn's signature
    }
    envp.push_back(nullptr);
  }

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, request.path.c_str(), &actions, &attributes, argv.data(),
                               request.env ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    std::string reason = errnoText(rc);
    if (rc == ENOEXEC) {
      reason += " (a script needs a #! line, e.g. #!/usr/bin/env python3)";
    }
    return fail(OE_FAILED_PRECONDITION, reason);
  }
  Child child;
  child.pid = pid;
  child.pidfd = UniqueFd(openPidfd(pid));
  return child;
}

Expected<PipedChild> spawnPiped(SpawnRequest request) {
  auto stdin_pipe = makePipe();
  auto stdout_pipe = makePipe();
  auto stderr_pipe = makePipe();
  for (auto* pipe : {&stdin_pipe, &stdout_pipe, &stderr_pipe}) {
    if (!pipe->ok()) {
      return pipe->failure();
    }
  }
  request.fds = {
      {stdin_pipe->read.get(), 0}, {stdout_pipe->write.get(), 1}, {stderr_pipe->write.get(), 2}};
  auto child = spawnChild(request);
  if (!child) {
    return std::move(child).failure();
  }
  // Our copies of the child's ends go, so EOF on stdout/stderr means the child's side closed.
  stdin_pipe->read.reset();
  stdout_pipe->write.reset();
  stderr_pipe->write.reset();
  PipedChild out{std::move(*child), std::move(stdin_pipe->write), std::move(stdout_pipe->read),
                 std::move(stderr_pipe->read)};
  setNonBlocking(out.to_stdin.get());
  setNonBlocking(out.from_stdout.get());
  setNonBlocking(out.from_stderr.get());
  return out;
}

std::vector<std::string> environmentWith(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  auto nameOf = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  for (char** entry = environ; *entry != nullptr; ++entry) {
    out.emplace_back(*entry);
  }
  for (const std::string& entry : overrides) {
    const std::string_view name = nameOf(entry);
    std::erase_if(out, [&](const std::string& have) { return nameOf(have) == name; });
    out.push_back(entry);
  }
  return out;
}

bool groupHasLiveMembers(pid_t pgid) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) {
    return false;
  }
  bool alive = false;
  while (const dirent* entry = ::readdir(proc)) {
    if (std::isdigit(static_cast<unsigned char>(entry->d_name[0])) == 0) {
      continue;
    }
    // read(2), not an ifstream: a process that exits between open and read makes the read
    // fail with ESRCH, which libstdc++'s filebuf turns into an exception even with the stream's
    // exceptions off (seen with several programs ending at once, as oe doctor runs them).
    std::string text;
    if (UniqueFd fd(::open((std::string("/proc/") + entry->d_name + "/stat").c_str(),
                           O_RDONLY | O_CLOEXEC));
        fd.valid()) {
      char buffer[1024];  // the fields after "(comm)" that matter come first
      const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
      if (got > 0) {
        text.assign(buffer, static_cast<size_t>(got));
      }
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parens, so parse after the
    // last ')'.
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos) {
      continue;
    }
    char state = 0;
    long ppid = 0;
    long pgrp = 0;
    if (std::sscanf(text.c_str() + paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 &&
        pgrp == pgid && state != 'Z' && state != 'X') {
      alive = true;
      break;
    }
  }
  ::closedir(proc);
  return alive;
}

int reapChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return 0;
    }
  }
  return status;
}

std::string signalName(int signal_number) {
  const char* abbreviation = ::sigabbrev_np(signal_number);
  if (abbreviation == nullptr) {
    return "signal " + std::to_string(signal_number);
  }
  return std::string("SIG") + abbreviation;
}

std::string describeWaitStatus(int status) {
  if (WIFSIGNALED(status)) {
    return "signal " + signalName(WTERMSIG(status));
  }
  if (WIFEXITED(status)) {
    return "exit code " + std::to_string(WEXITSTATUS(status));
  }
  return "wait status " + std::to_string(status);
}

bool isExecutableFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> findOnPath(std::string_view name, const char* path_list) {
  const char* path_env =
      path_list != nullptr ? path_list : std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  const std::string_view dirs = path_env == nullptr ? "/usr/local/bin:/usr/bin:/bin" : path_env;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string_view::npos) {
      end = dirs.size();
    }
    std::string dir(dirs.substr(start, end - start));
    if (dir.empty()) {
      dir = ".";
    }
    std::string candidate = dir + "/" + std::string(name);
    if (isExecutableFile(candidate)) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

SigpipeBlock::SigpipeBlock() noexcept {
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask_);
}

SigpipeBlock::~SigpipeBlock() {
  if (!was_pending_) {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1) {
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      const timespec no_wait{0, 0};
      ::sigtimedwait(&pipe_only, nullptr, &no_wait);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void TailBuffer::append(std::string_view bytes) {
  data_.append(bytes);
  if (data_.size() > 2 * capacity_) {
    data_.erase(0, data_.size() - capacity_);
    truncated_ = true;
  }
}

std::string TailBuffer::text() const {
  std::string_view view = data_;
  if (view.size() > capacity_) {
    view.remove_prefix(view.size() - capacity_);
  }
  if (truncated_ || view.size() < data_.size()) {
    const size_t newline = view.find('\n');
    if (newline != std::string_view::npos && newline + 1 < view.size()) {
      view.remove_prefix(newline + 1);
    }
  }
  while (!view.empty() && std::isspace(static_cast<unsigned char>(view.back())) != 0) {
    view.remove_suffix(1);
  }
  while (!view.empty() && std::isspace(static_cast<unsigned char>(view.front())) != 0) {
    view.remove_prefix(1);
  }
  return std::string(view);
}

std::string TailBuffer::lastLines(size_t count) const {
  std::string all = text();
  size_t position = all.size();
  for (size_t seen = 0; seen < count && position > 0; ++seen) {
    const size_t newline = all.rfind('\n', position - 1);
    if (newline == std::string::npos) {
      return all;
    }
    position = newline;
  }
  return position == 0 ? all : all.substr(position + 1);
}

}  // namespace oe::prockit
