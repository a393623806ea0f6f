// The persistent Node.js tool worker: see node_worker.hpp and node_shim.hpp (the protocol).
#include "node_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "node_shim.hpp"
#include "subprocess.hpp"

namespace oe::tool {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kResponsiveGrace{2};  // ping answer after a cancel
constexpr size_t kWorkerStderrKeep = 4096;
constexpr size_t kCrashLines = 12;
constexpr size_t kMaxLogLine = 16384;
constexpr size_t kStackFrames = 5;

enum class SendResult { kSent, kCancelledBeforeSending, kTorn, kBroken };

// "    at f (file:///x.mjs:2:9)" frames of a JS stack, without Node's internals and the shim.
std::string userFrames(const std::string& stack) {
  std::string frames;
  size_t kept = 0;
  size_t start = 0;
  while (start < stack.size() && kept < kStackFrames) {
    size_t end = stack.find('\n', start);
    if (end == std::string::npos) {
      end = stack.size();
    }
    std::string_view line(stack.data() + start, end - start);
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string_view::npos && line.substr(first).starts_with("at ") &&
        line.find("node:internal") == std::string_view::npos &&
        line.find("[eval") == std::string_view::npos) {
      frames += "\n    ";
      frames += line.substr(first);
      ++kept;
    }
    start = end + 1;
  }
  return frames;
}

std::string stringField(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Turns one reply of the shim into the response, or the message that says what went wrong.
Expected<std::string> interpretReply(std::string_view text, const ToolIdentity& who) {
  Json reply;
  try {
    reply = Json::parse(text);
  } catch (const Json::exception& error) {
    return fail(OE_INTERNAL, "Tool \"" + who.id +
                                 "\": the Node.js tool worker sent an unreadable "
                                 "reply (" +
                                 std::string(error.what()) + ")");
  }
  if (!reply.is_object()) {
    return fail(OE_INTERNAL, "Tool \"" + who.id +
                                 "\": the Node.js tool worker sent a reply that "
                                 "is not an object");
  }
  if (auto ok = reply.find("ok"); ok != reply.end() && ok->is_boolean() && ok->get<bool>()) {
    auto result = reply.find("result");
    return toResponse(result == reply.end() ? Json() : std::move(*result), who,
                      Flavour::kNodeModule);
  }
  const std::string code = stringField(reply, "code");
  const std::string name = stringField(reply, "name");
  const std::string message = stringField(reply, "message");
  const std::string what = name.empty() ? message : name + ": " + message;
  if (code == "import") {
    const std::string location = stringField(reply, "location");
    std::string text_out =
        "Tool \"" + who.id + "\" module " + who.path + " could not be loaded: " + what;
    if (!location.empty()) {
      text_out += " (at " + location + ")";
    } else {
      text_out += userFrames(stringField(reply, "stack"));
    }
    return fail(OE_FAILED_PRECONDITION, text_out);
  }
  if (code == "no_default") {
    return fail(OE_FAILED_PRECONDITION,
                "Tool \"" + who.id + "\" module has no default export (or it is not a function)");
  }
  if (code == "threw") {
    return fail(OE_UNKNOWN,
                "Tool \"" + who.id + "\" threw " + what + userFrames(stringField(reply, "stack")));
  }
  if (code == "not_object") {
    return toResponse(Json(), who, Flavour::kNodeModule);
  }
  if (code == "not_json") {
    return fail(OE_UNKNOWN, "Tool \"" + who.id +
                                "\" returned a value that cannot be converted to JSON (" + what +
                                "); return plain objects, arrays, strings, numbers and booleans");
  }
  return fail(OE_INTERNAL, "Tool \"" + who.id + "\": the Node.js tool worker failed: " + what +
                               userFrames(stringField(reply, "stack")));
}

}  // namespace

// One caller waiting for one reply.
struct NodeWorker::Pending {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::string reply;               // the JSON after "<id> "
  std::optional<Failure> failure;  // set instead when the worker went away
  std::string node_id;             // names the caller when the worker dies
};

// One running `node`. The reader thread owns the reply/log pipes and the reaping; callers own
// the request pipe (one writer at a time).
class NodeWorker::Process {
 public:
  static Expected<std::shared_ptr<Process>> start(
      const std::string& node_binary, const std::function<void(std::string_view)>& log_line,
      const std::optional<SandboxSpec>& sandbox, const std::string& cwd) {
    auto requests = makePipe();
    auto replies = makePipe();
    auto log = makePipe();
    for (auto* pipe : {&requests, &replies, &log}) {
      if (!pipe->ok()) {
        return std::move(*pipe).failure();
      }
    }
    UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!dev_null.valid()) {
      return fail(OE_INTERNAL, "could not open /dev/null: " + std::string(std::strerror(errno)));
    }
    SpawnRequest request;
    request.path = node_binary;
    request.argv = {node_binary, "--input-type=module", "--eval", kNodeShimSource};
    request.fds = {{dev_null.get(), 0},
                   {log->write.get(), 1},
                   {log->write.get(), 2},
                   {requests->read.get(), 3},
                   {replies->write.get(), 4}};
    request.sandbox = sandbox;
    request.cwd = cwd;
    auto child = spawnChild(request);
    if (!child) {
      return std::move(child).failure();
    }
    auto process = std::shared_ptr<Process>(new Process(log_line));  // private constructor
    process->pid_ = child->pid;
    process->pidfd_ = std::move(child->pidfd);
    process->requests_ = std::move(requests->write);
    process->replies_ = std::move(replies->read);
    process->log_ = std::move(log->read);
    setNonBlocking(process->requests_.get());
    setNonBlocking(process->replies_.get());
    setNonBlocking(process->log_.get());
    process->reader_ = std::thread([raw = process.get()] { raw->readLoop(); });
    return process;
  }

  ~Process() {
    requests_.reset();  // the shim exits on EOF; the kill below makes sure
    stop("the tool plugin is shutting down");
    if (reader_.joinable()) {
      reader_.join();
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  [[nodiscard]] bool dead() const noexcept { return dead_.load(std::memory_order_acquire); }
  // False once the worker died or is being stopped: new calls must go to a fresh worker.
  [[nodiscard]] bool usable() const noexcept {
    return !dead() && !stopping_.load(std::memory_order_acquire);
  }

  // Registers the caller of request `id`; false when the worker is gone or going.
  bool expect(uint64_t id, std::shared_ptr<Pending> pending) {
    std::lock_guard lock(pending_mutex_);
    if (!usable()) {
      return false;
    }
    pending_.emplace(id, std::move(pending));
    return true;
  }

  // Drops a caller that stopped waiting; its reply, if one comes, is discarded.
  void forget(uint64_t id) {
    std::lock_guard lock(pending_mutex_);
    pending_.erase(id);
  }

  // Writes one request line. The pipe is non-blocking, so a worker whose event loop is stuck
  // cannot pin the caller: the wait is cut by cancellation (token) or by `deadline`.
  SendResult send(std::string_view line, const CancelToken* token,
                  std::optional<Clock::time_point> deadline) {
    std::lock_guard lock(write_mutex_);
    SigpipeBlock sigpipe_guard;
    size_t offset = 0;
    while (offset < line.size()) {
      const ssize_t n = ::write(requests_.get(), line.data() + offset, line.size() - offset);
      if (n > 0) {
        offset += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        const bool give_up = (token != nullptr && token->requested()) ||
                             (deadline.has_value() && Clock::now() >= *deadline) || dead();
        if (give_up) {
          return offset == 0 ? SendResult::kCancelledBeforeSending : SendResult::kTorn;
        }
        pollfd writable{requests_.get(), POLLOUT, 0};
        ::poll(&writable, 1, static_cast<int>(kPollSlice.count()));
        continue;
      }
      return SendResult::kBroken;  // EPIPE: the worker is gone; the reader reports why
    }
    return SendResult::kSent;
  }

  // Kills the worker's process group; callers still waiting fail with `reason`.
  void stop(const std::string& reason) {
    std::lock_guard lock(life_mutex_);
    if (reaped_) {
      return;
    }
    if (!stop_reason_) {
      stop_reason_ = reason;
    }
    stopping_.store(true, std::memory_order_release);
    ::kill(-pid_, SIGKILL);
  }

 private:
  explicit Process(std::function<void(std::string_view)> log_line)
      : log_line_(std::move(log_line)) {}

  void readLoop() {
    std::string reply_buffer;
    size_t reply_scanned = 0;
    std::string log_buffer;
    auto on_replies = [&](std::string_view bytes) {
      reply_buffer.append(bytes);
      size_t start = 0;
      size_t newline = reply_buffer.find('\n', reply_scanned);
      while (newline != std::string::npos) {
        deliver(std::string_view(reply_buffer).substr(start, newline - start));
        start = newline + 1;
        newline = reply_buffer.find('\n', start);
      }
      reply_buffer.erase(0, start);
      reply_scanned = reply_buffer.size();
    };
    auto on_log = [&](std::string_view bytes) {
      log_buffer.append(bytes);
      size_t start = 0;
      size_t newline = log_buffer.find('\n');
      while (newline != std::string::npos) {
        logLine(std::string_view(log_buffer).substr(start, newline - start));
        start = newline + 1;
        newline = log_buffer.find('\n', start);
      }
      log_buffer.erase(0, start);
      if (log_buffer.size() > kMaxLogLine) {
        logLine(log_buffer);
        log_buffer.clear();
      }
    };

    while (true) {
      if (!pidfd_.valid() && !replies_.valid()) {
        break;  // no pidfd: EOF on the reply pipe is the best sign of the end we have
      }
      std::array<pollfd, 3> fds{};
      nfds_t count = 0;
      int replies_index = -1;
      int log_index = -1;
      int pid_index = -1;
      auto add = [&](const UniqueFd& fd, int& index) {
        if (fd.valid()) {
          index = static_cast<int>(count);
          fds[count++] = pollfd{fd.get(), POLLIN, 0};
        }
      };
      add(replies_, replies_index);
      add(log_, log_index);
      add(pidfd_, pid_index);
      if (::poll(fds.data(), count, -1) < 0) {
        if (errno == EINTR) {
          continue;
        }
        break;
      }
      if (replies_index >= 0 && fds[replies_index].revents != 0 &&
          drainInto(replies_, on_replies)) {
        replies_.reset();
      }
      if (log_index >= 0 && fds[log_index].revents != 0 && drainInto(log_, on_log)) {
        log_.reset();
      }
      if (pid_index >= 0 && (fds[pid_index].revents & POLLIN) != 0) {
        if (replies_.valid()) {
          drainInto(replies_, on_replies);
        }
        if (log_.valid()) {
          drainInto(log_, on_log);
        }
        break;
      }
    }
    if (!log_buffer.empty()) {
      logLine(log_buffer);
    }
    finish();
  }

  // Reads what is available now; true at EOF.
  template <class Sink>
  static bool drainInto(const UniqueFd& fd, Sink& sink) {
    std::array<char, 65536> buffer{};
    while (true) {
      const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
      if (n > 0) {
        sink(std::string_view(buffer.data(), static_cast<size_t>(n)));
        continue;
      }
      if (n < 0 && errno == EINTR) {
        continue;
      }
      return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
  }

  void deliver(std::string_view line) {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) {
      return;
    }
    uint64_t id = 0;
    for (char digit : line.substr(0, space)) {
      if (digit < '0' || digit > '9') {
        return;
      }
      id = id * 10 + static_cast<uint64_t>(digit - '0');
    }
    std::shared_ptr<Pending> pending;
    {
      std::lock_guard lock(pending_mutex_);
      auto it = pending_.find(id);
      if (it == pending_.end()) {
        return;  // a caller that was cancelled and stopped waiting
      }
      pending = std::move(it->second);
      pending_.erase(it);
    }
    std::lock_guard lock(pending->mutex);
    pending->reply.assign(line.substr(space + 1));
    pending->done = true;
    pending->done_cv.notify_all();
  }

  void logLine(std::string_view line) {
    stderr_tail_.append(line);
    stderr_tail_.append("\n");
    if (log_line_) {
      log_line_(line);
    }
  }

  // The worker is gone: reap it and fail every caller still waiting, saying why.
  void finish() {
    int status = 0;
    std::optional<std::string> reason;
    {
      std::lock_guard lock(life_mutex_);
      status = reapChild(pid_);
      reaped_ = true;
      reason = stop_reason_;
    }
    std::unordered_map<uint64_t, std::shared_ptr<Pending>> orphans;
    {
      std::lock_guard lock(pending_mutex_);
      dead_.store(true, std::memory_order_release);
      orphans.swap(pending_);
    }
    std::string tail = stderr_tail_.lastLines(kCrashLines);
    if (tail.empty()) {
      tail = "(nothing on stderr)";
    }
    for (auto& [id, pending] : orphans) {
      std::string message = reason ? "Tool \"" + pending->node_id + "\" was interrupted: " + *reason
                                   : "Tool worker (node) exited unexpectedly with " +
                                         describeWaitStatus(status) + " while running tool \"" +
                                         pending->node_id + "\": " + tail;
      std::lock_guard lock(pending->mutex);
      pending->failure = Failure{OE_UNAVAILABLE, std::move(message)};
      pending->done = true;
      pending->done_cv.notify_all();
    }
  }

  std::function<void(std::string_view)> log_line_;
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd requests_;
  UniqueFd replies_;
  UniqueFd log_;
  std::thread reader_;
  std::mutex write_mutex_;
  std::atomic<bool> dead_{false};
  std::atomic<bool> stopping_{false};
  std::mutex pending_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::mutex life_mutex_;  // guards reaped_ and stop_reason_ (no signal after the reap)
  bool reaped_ = false;
  std::optional<std::string> stop_reason_;
  TailBuffer stderr_tail_{kWorkerStderrKeep};  // reader thread only
};

NodeWorker::NodeWorker(std::function<void(std::string_view)> log_line,
                       std::optional<SandboxSpec> sandbox, std::string cwd)
    : log_line_(std::move(log_line)), sandbox_(std::move(sandbox)), cwd_(std::move(cwd)) {}

NodeWorker::~NodeWorker() {
  std::lock_guard lock(mutex_);
  current_.reset();
}

Expected<std::string> NodeWorker::locateNode(const ToolIdentity& who) {
  const char* configured = std::getenv("OE_NODE");  // NOLINT(concurrency-mt-unsafe): read only
  if (configured != nullptr && *configured != '\0') {
    if (isExecutableFile(configured)) {
      return std::string(configured);
    }
    return fail(
        OE_FAILED_PRECONDITION,
        "Tool \"" + who.id + "\" needs Node.js to run " + who.impl + ", but OE_NODE=" + configured +
            " is not an executable file; fix OE_NODE or unset it to use \"node\" from PATH");
  }
  if (auto found = findOnPath("node")) {
    return std::move(*found);
  }
  return fail(OE_FAILED_PRECONDITION,
              "Tool \"" + who.id + "\" needs Node.js to run " + who.impl +
                  ", but \"node\" was not found on PATH; install nodejs (apt-get install nodejs) "
                  "or set OE_NODE");
}

Expected<std::shared_ptr<NodeWorker::Process>> NodeWorker::running(const ToolIdentity& who) {
  std::shared_ptr<Process> retired;  // destroyed (joined) after the lock is released
  std::lock_guard lock(mutex_);
  if (current_ && current_->usable()) {
    return current_;
  }
  auto binary = locateNode(who);
  if (!binary) {
    return std::move(binary).failure();
  }
  retired = std::move(current_);
  auto started = Process::start(*binary, log_line_, sandbox_, cwd_);
  if (!started) {
    return fail(started.failure().status, "Tool \"" + who.id +
                                              "\": could not start the Node.js tool worker (" +
                                              *binary + "): " + started.failure().message);
  }
  current_ = *started;
  return current_;
}

bool NodeWorker::responsive(Process& process) {
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  auto pending = std::make_shared<Pending>();
  if (!process.expect(id, pending)) {
    return true;  // already gone: nothing to stop
  }
  const auto deadline = Clock::now() + kResponsiveGrace;
  const std::string line = "{\"ping\":" + std::to_string(id) + "}\n";
  const SendResult sent = process.send(line, nullptr, deadline);
  if (sent == SendResult::kBroken) {
    return true;
  }
  if (sent != SendResult::kSent) {
    process.forget(id);
    return false;
  }
  std::unique_lock lock(pending->mutex);
  const bool answered = pending->done_cv.wait_until(lock, deadline, [&] { return pending->done; });
  lock.unlock();
  if (!answered) {
    process.forget(id);
  }
  return answered;
}

Expected<std::string> NodeWorker::call(const ToolIdentity& who, std::string_view input,
                                       CancelToken& token) {
  if (token.requested()) {
    return fail(OE_CANCELLED, "cancelled");
  }
  auto pending = std::make_shared<Pending>();
  pending->node_id = who.id;
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<Process> process;
  // A worker that died between the lookup and the registration is replaced once.
  for (int round = 0; round < 2 && !process; ++round) {
    auto found = running(who);
    if (!found) {
      return std::move(found).failure();
    }
    if ((*found)->expect(id, pending)) {
      process = std::move(*found);
    }
  }
  if (!process) {
    return fail(OE_UNAVAILABLE, "Tool \"" + who.id +
                                    "\": the Node.js tool worker stopped right after it started; "
                                    "see the log for its output");
  }

  std::string line;
  line.reserve(input.size() + who.path.size() + 48);
  line += "{\"id\":";
  line += std::to_string(id);
  line += ",\"path\":";
  line += Json(who.path).dump();
  line += ",\"input\":";
  line += input;
  line += "}\n";
  const std::string stop_reason = "the shared Node.js tool worker was stopped to cancel tool \"" +
                                  who.id + "\", which kept it busy; run the node again";
  switch (process->send(line, &token, std::nullopt)) {
    case SendResult::kCancelledBeforeSending:
      process->forget(id);
      return fail(OE_CANCELLED, "cancelled");
    case SendResult::kTorn:
      process->forget(id);
      process->stop(stop_reason);  // half a request line: the protocol cannot recover
      return fail(OE_CANCELLED, "cancelled");
    default:
      break;  // sent, or broken: then the reader fails the call with the worker's exit status
  }

  token.setWaker([pending] {
    std::lock_guard lock(pending->mutex);
    pending->done_cv.notify_all();
  });
  std::unique_lock lock(pending->mutex);
  while (!pending->done && !token.requested()) {
    pending->done_cv.wait_for(lock, kPollSlice);
  }
  const bool done = pending->done;
  lock.unlock();
  token.clearWaker();

  if (!done) {
    // Abandon the call; its reply will be dropped. Only a worker that cannot even answer a
    // ping (a tool blocking the event loop) is killed, so other calls on it go on.
    process->forget(id);
    if (!responsive(*process)) {
      process->stop(stop_reason);
    }
    return fail(OE_CANCELLED, "cancelled");
  }
  if (pending->failure) {
    return std::move(*pending->failure);
  }
  return interpretReply(pending->reply, who);
}

}  // namespace oe::tool
