// Process plumbing shared by the plugins that run programs (tool, cli-agent, dataset): owned fds,
// posix_spawn with explicit fd maps, SIGPIPE-safe writes and wait-status wording.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <oe/cpp/expected.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oe::prockit {

using sdk::Expected;
using sdk::fail;
using sdk::Failure;

// How often a waiting runner (executable or Node.js worker) polls the host's cancel flag.
inline constexpr std::chrono::milliseconds kPollSlice{100};
// How often group membership is re-read while waiting for a process group to die.
inline constexpr std::chrono::milliseconds kGroupPoll{20};
// After SIGKILL, how long a group is waited for before giving up on it (a process stuck in
// uninterruptible sleep cannot be waited for forever).
inline constexpr std::chrono::milliseconds kAfterKill{2000};

// Owns one file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept;
  void reset() noexcept;

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// A pipe whose both ends are close-on-exec, so that processes spawned concurrently by other
// threads never inherit them (an inherited write end would keep our reader from seeing EOF).
Expected<Pipe> makePipe();
bool setNonBlocking(int fd);

enum class Drain { kOpen, kEof };

// Reads what is available now from a non-blocking fd, handing each chunk to `sink`. kEof: the
// stream ended (EOF, or an error that ends it just the same).
template <class Sink>
Drain drainAvailable(int fd, Sink&& sink) {
  std::array<char, 65536> buffer{};
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n > 0) {
      sink(std::string_view(buffer.data(), static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Drain::kOpen;
    }
    return Drain::kEof;
  }
}

// One fd the child gets: `source` (a parent fd) becomes `target` in the child.
struct FdMapping {
  int source;
  int target;
};

// Where oe-sandbox is and what it enforces: the "sandbox" member of a node's create config.
struct SandboxSpec {
  std::string exe;          // empty: oe did not find oe-sandbox (the spawn fails, saying so)
  std::string confinement;  // JSON text
};

struct SpawnRequest {
  std::string path;               // absolute path of the program to execute
  std::vector<std::string> argv;  // argv[0] included
  std::vector<FdMapping> fds;     // every other fd of ours stays closed in the child
  std::string cwd;                // empty: the host's working directory
  // "NAME=value" entries; unset: the host's own environment.
  std::optional<std::vector<std::string>> env;
  // Set when a policy is in force for the node (docs/policy.md): the program runs under
  // oe-sandbox, which applies `confinement` (JSON text) and then executes it.
  std::optional<SandboxSpec> sandbox;
};

struct Child {
  pid_t pid = -1;
  UniqueFd pidfd;  // readable once the child exits; invalid if the kernel has no pidfd_open
};

// Starts a child with posix_spawn (never fork: the host may be large) in its own process group,
// with default signal dispositions and an empty signal mask. The message of a failure is the
// system's reason (e.g. "Permission denied").
Expected<Child> spawnChild(const SpawnRequest& request);

// A child whose stdin, stdout and stderr are pipes to us; our ends are non-blocking.
struct PipedChild {
  Child child;
  UniqueFd to_stdin;
  UniqueFd from_stdout;
  UniqueFd from_stderr;
};

// spawnChild with `request.fds` replaced by the three pipes (the child's ends closed here).
Expected<PipedChild> spawnPiped(SpawnRequest request);

// The host's environment with `overrides` ("NAME=value") applied, later entries winning.
std::vector<std::string> environmentWith(const std::vector<std::string>& overrides);

// True while some process of group `pgid` is still running (zombies do not count), read from
// /proc. Used once the group leader has exited, to find what it left behind.
bool groupHasLiveMembers(pid_t pgid);

// Waits for the child (EINTR-safe) and returns its raw wait status.
int reapChild(pid_t pid);

// "exit code 3" / "signal SIGKILL" for a wait status.
std::string describeWaitStatus(int status);
std::string signalName(int signal_number);

bool isExecutableFile(const std::string& path);
// `name` in the directories of `path_list` (colon-separated; null: the host's PATH).
std::optional<std::string> findOnPath(std::string_view name, const char* path_list = nullptr);

// Blocks SIGPIPE in the calling thread while writing to a pipe whose reader may be gone, so a
// write fails with EPIPE instead of killing the host; a SIGPIPE raised meanwhile is consumed.
class SigpipeBlock {
 public:
  SigpipeBlock() noexcept;
  ~SigpipeBlock();
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t old_mask_{};
  bool was_pending_ = false;
};

// Keeps the last `capacity` bytes appended (stderr of a tool) without growing without bound.
class TailBuffer {
 public:
  explicit TailBuffer(size_t capacity) : capacity_(capacity) {}
  void append(std::string_view bytes);
  // The kept text, trimmed, without a leading partial line when some bytes were dropped.
  [[nodiscard]] std::string text() const;
  // The last `count` lines of text().
  [[nodiscard]] std::string lastLines(size_t count) const;

 private:
  size_t capacity_;
  std::string data_;
  bool truncated_ = false;
};

}  // namespace oe::prockit
