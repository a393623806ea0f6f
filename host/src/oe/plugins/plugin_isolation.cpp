// The host's side of process isolation: the helper's life (start, death, restart), the kind
// tables that forward to it, and the plugin's calls back to the host, served by the thread that
// waits for the request they belong to.
#include "oe/plugins/plugin_isolation.hpp"

#include <fcntl.h>
#include <oe/ext/draft/cli_replay.h>
#include <oe/ext/draft/limits.h>
#include <oe/ext/draft/subrun.h>
#include <oe/ext/llm.h>
#include <oe/ext/prompt.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/plugins/kind_schema.hpp"
#include "oe/plugins/plugin_wire.hpp"

extern char** environ;  // NOLINT: POSIX declares it nowhere

namespace oe::plugins {
namespace {

constexpr int kHelperFd = 3;  // where the helper finds its end of the socket
constexpr uint32_t kIsolatedKindFlags = OE_NODE_KIND_REENTRANT | OE_NODE_KIND_NOT_CACHEABLE;

struct HostExecutable {
  std::mutex mutex;
  std::filesystem::path path;
};

HostExecutable& hostExecutable() {
  static HostExecutable executable;
  return executable;
}

std::filesystem::path pluginHostExecutable() {
  HostExecutable& executable = hostExecutable();
  std::lock_guard lock(executable.mutex);
  if (!executable.path.empty()) {
    return executable.path;
  }
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("oe") : self;
}

// Labels of contexts and kind tables must outlive whatever holds them (host_context.hpp): the
// strings an isolated plugin gave are kept for the life of the process, once each.
const char* intern(std::string_view text) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> strings;
  std::lock_guard lock(mutex);
  auto it = strings.find(text);
  if (it == strings.end()) {
    it = strings.emplace(text).first;
  }
  return it->c_str();
}

std::string describeEnd(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (const char* abbrev = sigabbrev_np(sig)) {
      return std::string("SIG") + abbrev;
    }
    return "signal " + std::to_string(sig);
  }
  if (WIFEXITED(status)) {
    return "exited with code " + std::to_string(WEXITSTATUS(status));
  }
  return "ended";
}

// The helper's end once its socket closed. It normally is gone by then; one that closed the
// socket and lingers is killed, as it can serve nothing any more.
std::string reap(pid_t pid) {
  int status = 0;
  for (int i = 0; i < 2000; ++i) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      return describeEnd(status);
    }
    if (done < 0 && errno != EINTR) {
      return "ended";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return "closed its socket and was killed";
}

oe_host_ctx* asHandle(const nlohmann::json& value) {
  return reinterpret_cast<oe_host_ctx*>(static_cast<uintptr_t>(value.get<uint64_t>()));
}

uint64_t fromHandle(oe_host_ctx* handle) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
}

oe_str asStr(const std::string& text) { return oe_str{text.data(), text.size()}; }

std::string take(oe_host_buf& buf) {
  std::string text = buf.ptr != nullptr ? std::string(buf.ptr, buf.len) : std::string();
  hostApi()->release(nullptr, &buf);
  return text;
}

void append(oe_writer* writer, std::string_view text) {
  if (writer != nullptr) {
    (void)hostApi()->write(writer, oe_str{text.data(), text.size()});
  }
}

class RemotePlugin;

oe_status OE_ABI remoteComplete(oe_plugin* self, oe_host_ctx* call, oe_str config_json,
                                oe_str request_json, oe_writer* response, oe_writer* err);

// The host's table of one kind, with what the forwarding functions need to find their way: the
// descriptor create is handed back is this struct's first member.
struct RemoteKind {
  oe_node_kind table{};
  RemotePlugin* plugin = nullptr;
  uint32_t index = 0;
};

// A node as the run holds it. Its instance in the helper is made again, from the same config,
// when the helper it lived in has died (its next call, a retry, meets a new helper).
struct RemoteNode {
  const RemoteKind* kind = nullptr;
  std::string config;
  oe_host_ctx* node_ctx = nullptr;
  std::mutex mutex;  // placing it in a new helper (a reentrant kind's calls may race to)
  uint64_t id = 0;
  uint64_t generation = 0;  // of the helper holding `id`; 0 = none
};

// One helper process. Its socket closes with the last holder, never while a thread may still
// send on it (a cancel, a reply after the helper died): a descriptor number closed early could be
// reused by another file, which that send would then write into.
struct Helper {
  Helper() = default;
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
  ~Helper() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  pid_t pid = -1;
  int fd = -1;
  uint64_t generation = 0;
  std::unique_ptr<wire::Channel> channel;
};

// One request to the helper (create, invoke): its result, and meanwhile the plugin's calls back.
struct Pending {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<wire::Frame> inbox;
  std::optional<std::string> ended;  // how the helper ended, if it did first
};

struct Outcome {
  std::optional<std::string> ended;
  wire::Frame result;
};

class RemotePlugin final : public PluginLibrary::Server {
 public:
  RemotePlugin(std::filesystem::path path, std::string sha256)
      : path_(std::move(path)), sha256_(std::move(sha256)) {}
  ~RemotePlugin() override;
  RemotePlugin(const RemotePlugin&) = delete;
  RemotePlugin& operator=(const RemotePlugin&) = delete;

  // Starts the first helper; its hello describes the library.
  Result<wire::Frame> begin() {
    std::lock_guard lock(mutex_);
    return start();
  }
  void adopt(PluginLibrary& library, const std::string& id) {
    id_ = id;
    std::lock_guard lock(mutex_);
    plugin_ctx_ = library.contextHandle();
    for (const auto& [level, line] : early_lines_) {
      hostApi()->log(plugin_ctx_, level, asStr(line));
    }
    early_lines_.clear();
  }
  std::deque<RemoteKind>& kinds() { return kinds_; }

  oe_status create(const RemoteKind& kind, oe_str config, oe_host_ctx* node_ctx, oe_node** out,
                   oe_writer* err);
  oe_status invoke(RemoteNode& node, const oe_invocation& inv);
  // The plugin's oe.llm-provider/1 complete, run in the helper.
  oe_status complete(oe_host_ctx* call, oe_str config_json, oe_str request_json,
                     oe_writer* response, oe_writer* err);
  // The table oe's LLM service calls, for the provider names the helper said it serves.
  const oe_llm_provider* providerTable(const nlohmann::json& names);
  void cancel(RemoteNode& node, oe_host_ctx* call);
  void destroy(std::unique_ptr<RemoteNode> node);

 private:
  Result<wire::Frame> start();  // under mutex_
  Result<std::shared_ptr<Helper>> current();
  void read(std::shared_ptr<Helper> helper);
  Outcome exchange(const std::shared_ptr<Helper>& helper, nlohmann::json head, std::string_view a);
  void serve(Helper& helper, const wire::Frame& call);
  oe_status place(RemoteNode& node, const std::shared_ptr<Helper>& helper, std::string& error);
  std::string crashed(std::string_view phase, const std::string& how) const {
    return "plugin `" + id_ + "` crashed in " + std::string(phase) + " (" + how +
           ") in its helper process (isolation: process); oe goes on, and the plugin's next "
           "call starts a new helper";
  }

  std::filesystem::path path_;
  std::string sha256_;
  std::string id_;
  std::deque<RemoteKind> kinds_;
  std::string first_hello_;  // the kinds the first helper offered, to compare a restart's with
  std::atomic<uint64_t> next_id_{1};

  std::mutex mutex_;
  std::condition_variable ended_;  // helper_ went
  std::shared_ptr<Helper> helper_;
  uint64_t generations_ = 0;
  bool closing_ = false;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::vector<std::thread> readers_;
  std::atomic<oe_host_ctx*> plugin_ctx_{nullptr};  // the library's plugin context, once adopted
  std::vector<std::pair<oe_log_level, std::string>> early_lines_;
  // runtime.limits slots the helper's plugin holds (oe.limits/1-draft), by the id it was given,
  // with the call they were taken in: given back on its release, or when that invoke ends.
  struct HeldSlot {
    oe_host_ctx* call;
    oe_host_buf slot;
  };
  oe_llm_provider provider_{};
  std::vector<const char*> provider_names_;  // interned, NULL-terminated
  std::mutex slots_mutex_;
  std::map<uint64_t, HeldSlot> slots_;
  uint64_t next_slot_ = 1;
};

RemotePlugin::~RemotePlugin() {
  std::shared_ptr<Helper> helper;
  {
    std::unique_lock lock(mutex_);
    closing_ = true;
    helper = helper_;
    if (helper) {
      // The helper ends once it sees the end of the stream (after its deinit).
      ::shutdown(helper->fd, SHUT_WR);
      if (!ended_.wait_for(lock, std::chrono::seconds(10), [this] { return !helper_; })) {
        ::kill(helper->pid, SIGKILL);
      }
    }
  }
  for (std::thread& reader : readers_) {
    reader.join();
  }
}

Result<wire::Frame> RemotePlugin::start() {
  if (!sha256_.empty() && generations_ > 0) {
    // A restart loads the file again: it must still be the library that was trusted.
    auto digest = cache::fileDigest(path_);
    if (!digest || *digest != sha256_) {
      return makeError(path_.string() +
                       ": changed since it was trusted and loaded; not "
                       "starting its helper again (review it, then run: oe "
                       "trust " +
                       path_.string() + ")");
    }
  }
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return makeError(path_.string() +
                     ": cannot make a socket for its helper process: " + std::strerror(errno));
  }
  int child_end = fds[1];
  if (child_end == kHelperFd) {  // dup2 onto itself would keep FD_CLOEXEC
    child_end = ::fcntl(fds[1], F_DUPFD_CLOEXEC, kHelperFd + 1);
    ::close(fds[1]);
  }
  const std::string exe = pluginHostExecutable().string();
  const std::string fd_text = std::to_string(kHelperFd);
  const std::string library = path_.string();
  std::vector<char*> argv{const_cast<char*>(exe.c_str()),     const_cast<char*>("plugin-host"),
                          const_cast<char*>("--fd"),          const_cast<char*>(fd_text.c_str()),
                          const_cast<char*>(library.c_str()), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, kHelperFd);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(child_end);
  if (spawned != 0) {
    ::close(fds[0]);
    return makeError(path_.string() + ": cannot start its helper process " + exe + ": " +
                     std::strerror(spawned));
  }
  auto helper = std::make_shared<Helper>();
  helper->pid = pid;
  helper->fd = fds[0];
  helper->generation = ++generations_;
  helper->channel = std::make_unique<wire::Channel>(fds[0]);
  std::optional<wire::Frame> hello;
  for (hello = helper->channel->receive(); hello && hello->head.value("op", "") == "plog";
       hello = helper->channel->receive()) {
    const auto level = hello->head.value("level", OE_LOG_INFO);
    if (plugin_ctx_ != nullptr) {
      hostApi()->log(plugin_ctx_, level, asStr(hello->a));
    } else {
      early_lines_.emplace_back(level, std::move(hello->a));
    }
  }
  if (!hello || hello->head.value("op", "") != "hello" || hello->head.contains("error")) {
    ::close(std::exchange(helper->fd, -1));  // a helper waiting for requests ends
    const std::string how = reap(pid);
    if (hello && hello->head.contains("error")) {
      return makeError(hello->head.value("error", std::string()));
    }
    return makeError(path_.string() + ": its helper process (" + exe + " plugin-host) " + how +
                     " before it loaded the library");
  }
  const std::string offered = hello->head.value("kinds", nlohmann::json::array()).dump();
  if (generations_ > 1 && offered != first_hello_) {
    ::close(std::exchange(helper->fd, -1));
    reap(pid);
    return makeError(path_.string() +
                     ": its new helper process offers other kinds than the "
                     "first one did; the library changed while oe ran");
  }
  first_hello_ = offered;
  helper_ = helper;
  readers_.emplace_back([this, helper] { read(helper); });
  return std::move(*hello);
}

Result<std::shared_ptr<Helper>> RemotePlugin::current() {
  std::lock_guard lock(mutex_);
  if (helper_) {
    return helper_;
  }
  if (closing_) {
    return makeError("plugin `" + id_ + "` is being unloaded");
  }
  auto started = start();
  if (!started) {
    return std::move(started).error();
  }
  return helper_;
}

// The helper's messages, until its socket closes: results and calls back go to the thread that
// waits for the request they belong to; log lines are written here.
void RemotePlugin::read(std::shared_ptr<Helper> helper) {
  while (std::optional<wire::Frame> frame = helper->channel->receive()) {
    const std::string op = frame->head.value("op", "");
    if (op == "log" || op == "plog") {
      oe_host_ctx* handle = op == "log" ? asHandle(frame->head.at("h")) : plugin_ctx_.load();
      hostApi()->log(handle, frame->head.value("level", OE_LOG_INFO), asStr(frame->a));
      continue;
    }
    const uint64_t id = frame->head.value("id", uint64_t{0});
    std::shared_ptr<Pending> pending;
    {
      std::lock_guard lock(mutex_);
      if (auto it = pending_.find(id); it != pending_.end()) {
        pending = it->second;
      }
    }
    if (pending) {
      std::lock_guard lock(pending->mutex);
      pending->inbox.push_back(std::move(*frame));
      pending->changed.notify_one();
    } else if (op == "call") {
      helper->channel->send({{"op", "reply"},
                             {"cid", frame->head.value("cid", uint64_t{0})},
                             {"status", OE_FAILED_PRECONDITION}},
                            {}, "the call this belongs to has ended");
    }
  }
  const std::string how = reap(helper->pid);
  std::lock_guard lock(mutex_);
  if (helper_ == helper) {
    helper_.reset();
  }
  for (auto& [id, pending] : pending_) {
    std::lock_guard pending_lock(pending->mutex);
    pending->ended = how;
    pending->changed.notify_one();
  }
  pending_.clear();
  ended_.notify_all();
}

Outcome RemotePlugin::exchange(const std::shared_ptr<Helper>& helper, nlohmann::json head,
                               std::string_view a) {
  const uint64_t id = next_id_.fetch_add(1);
  auto pending = std::make_shared<Pending>();
  {
    std::lock_guard lock(mutex_);
    if (helper_ != helper) {
      return Outcome{"ended before the call reached it", {}};
    }
    pending_.emplace(id, pending);
  }
  head["id"] = id;
  // A failed send means the helper is gone: its reader fails this request in a moment.
  (void)helper->channel->send(head, a);
  while (true) {
    std::unique_lock lock(pending->mutex);
    pending->changed.wait(lock, [&] { return !pending->inbox.empty() || pending->ended; });
    if (pending->inbox.empty()) {
      return Outcome{pending->ended, {}};
    }
    wire::Frame frame = std::move(pending->inbox.front());
    pending->inbox.pop_front();
    lock.unlock();
    if (frame.head.value("op", "") == "result") {
      std::lock_guard map_lock(mutex_);
      pending_.erase(id);
      return Outcome{std::nullopt, std::move(frame)};
    }
    serve(*helper, frame);
  }
}

// One call of the plugin back to the host, made through the host's own table with the handle
// the plugin was given for it: the same checks, caps and answers as in-process.
void RemotePlugin::serve(Helper& helper, const wire::Frame& call) {
  const std::string fn = call.head.value("fn", "");
  oe_host_ctx* handle = asHandle(call.head.at("h"));
  const oe_host_api& api = *hostApi();
  oe_status status = OE_UNIMPLEMENTED;
  std::string a;
  std::string b;
  oe_host_buf first{nullptr, 0, nullptr};
  oe_host_buf second{nullptr, 0, nullptr};
  if (fn == "emit_event") {
    status = api.emit_event(handle, asStr(call.a), asStr(call.b));
  } else if (fn == "state_get") {
    status = api.state_get(handle, asStr(call.a), &first);
  } else if (fn == "llm") {
    const auto* llm = static_cast<const oe_llm_api*>(api.get_extension(handle, OE_EXT_LLM));
    status = llm != nullptr ? llm->complete(handle, asStr(call.a), &first, &second)
                            : OE_FAILED_PRECONDITION;
  } else if (fn == "prompt.render" || fn == "prompt.values") {
    const auto* prompt =
        static_cast<const oe_prompt_api*>(api.get_extension(handle, OE_EXT_PROMPT));
    if (prompt == nullptr) {
      status = OE_FAILED_PRECONDITION;
    } else if (fn == "prompt.render") {
      status = prompt->render(handle, asStr(call.a), &first);
    } else {
      status = prompt->values_json(handle, call.head.value("indent", 0u), &first);
    }
  } else if (fn == "subrun") {
    const auto* subrun =
        static_cast<const oe_subrun_api*>(api.get_extension(handle, OE_EXT_SUBRUN));
    status =
        subrun != nullptr ? subrun->run(handle, asStr(call.a), &first) : OE_FAILED_PRECONDITION;
  } else if (fn == "is_cancelled") {
    status = OE_OK;
    a = api.is_cancelled(handle) ? "1" : "0";
  } else if (fn == "limits.acquire") {
    const auto* limits =
        static_cast<const oe_limits_api*>(api.get_extension(handle, OE_EXT_LIMITS));
    status = limits != nullptr ? limits->acquire(handle, asStr(call.a), &first)
                               : OE_FAILED_PRECONDITION;
    if (status == OE_OK) {
      a.assign(first.ptr != nullptr ? first.ptr : "", first.len);
      std::lock_guard lock(slots_mutex_);
      const uint64_t slot = next_slot_++;
      slots_.emplace(slot, HeldSlot{handle, first});
      first = oe_host_buf{nullptr, 0, nullptr};  // held until released
      helper.channel->send({{"op", "reply"},
                            {"cid", call.head.value("cid", uint64_t{0})},
                            {"status", status},
                            {"slot", slot}},
                           a, {});
      return;
    }
  } else if (fn == "limits.release") {
    std::optional<HeldSlot> held;
    {
      std::lock_guard lock(slots_mutex_);
      if (auto it = slots_.find(call.head.value("slot", uint64_t{0})); it != slots_.end()) {
        held = it->second;
        slots_.erase(it);
      }
    }
    if (held) {
      api.release(held->call, &held->slot);
    }
    status = OE_OK;
  } else if (fn == "cli_replay.begin" || fn == "cli_replay.finish") {
    const auto* replay =
        static_cast<const oe_cli_replay_api*>(api.get_extension(handle, OE_EXT_CLI_REPLAY));
    if (replay == nullptr) {
      status = OE_FAILED_PRECONDITION;
    } else if (fn == "cli_replay.begin") {
      status = replay->begin(handle, asStr(call.a), &first, &second);
    } else {
      status = replay->finish(handle, asStr(call.a), asStr(call.b), &second);
    }
  }
  a = take(first);
  b = take(second);
  helper.channel->send(
      {{"op", "reply"}, {"cid", call.head.value("cid", uint64_t{0})}, {"status", status}}, a, b);
}

oe_status RemotePlugin::place(RemoteNode& node, const std::shared_ptr<Helper>& helper,
                              std::string& error) {
  if (node.generation == helper->generation) {
    return OE_OK;
  }
  Outcome outcome = exchange(
      helper, {{"op", "create"}, {"kind", node.kind->index}, {"nctx", fromHandle(node.node_ctx)}},
      node.config);
  if (outcome.ended) {
    error = crashed("create", *outcome.ended);
    return OE_UNAVAILABLE;
  }
  const oe_status status = outcome.result.head.value("status", OE_INTERNAL);
  if (status != OE_OK) {
    error = std::move(outcome.result.b);
    return status;
  }
  node.id = outcome.result.head.value("node", uint64_t{0});
  node.generation = helper->generation;
  return OE_OK;
}

oe_status RemotePlugin::create(const RemoteKind& kind, oe_str config, oe_host_ctx* node_ctx,
                               oe_node** out, oe_writer* err) {
  auto node = std::make_unique<RemoteNode>();
  node->kind = &kind;
  node->config.assign(config.ptr != nullptr ? config.ptr : "", config.len);
  node->node_ctx = node_ctx;
  auto helper = current();
  if (!helper) {
    append(err, helper.error().message);
    return OE_UNAVAILABLE;
  }
  std::string error;
  const oe_status status = place(*node, *helper, error);
  if (status != OE_OK) {
    append(err, error);
    return status;
  }
  *out = reinterpret_cast<oe_node*>(node.release());  // owned by the run until destroy
  return OE_OK;
}

oe_status RemotePlugin::invoke(RemoteNode& node, const oe_invocation& inv) {
  auto helper = current();
  if (!helper) {
    append(inv.error, helper.error().message);
    return OE_UNAVAILABLE;
  }
  {
    std::lock_guard lock(node.mutex);
    std::string error;
    if (const oe_status placed = place(node, *helper, error); placed != OE_OK) {
      append(inv.error, error);
      return placed;
    }
  }
  Outcome outcome = exchange(*helper,
                             {{"op", "invoke"},
                              {"node", node.id},
                              {"attempt", inv.attempt},
                              {"call", fromHandle(inv.call)},
                              {"rl", inv.response != nullptr ? inv.response->limit : 0},
                              {"el", inv.error != nullptr ? inv.error->limit : 0}},
                             std::string_view(inv.request_json.ptr, inv.request_json.len));
  // Slots the plugin did not give back (or could not: its helper died) go back now.
  std::vector<oe_host_buf> left;
  {
    std::lock_guard lock(slots_mutex_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      if (it->second.call == inv.call) {
        left.push_back(it->second.slot);
        it = slots_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (oe_host_buf& slot : left) {
    hostApi()->release(inv.call, &slot);
  }
  if (outcome.ended) {
    append(inv.error, crashed("invoke", *outcome.ended));
    return OE_UNAVAILABLE;
  }
  append(inv.response, outcome.result.a);
  append(inv.error, outcome.result.b);
  return outcome.result.head.value("status", OE_INTERNAL);
}

oe_status RemotePlugin::complete(oe_host_ctx* call, oe_str config_json, oe_str request_json,
                                oe_writer* response, oe_writer* err) {
  auto helper = current();
  if (!helper) {
    append(err, helper.error().message);
    return OE_UNAVAILABLE;
  }
  Outcome outcome = exchange(*helper,
                             {{"op", "complete"},
                              {"call", fromHandle(call)},
                              {"config", std::string(config_json.ptr != nullptr ? config_json.ptr : "",
                                                     config_json.len)},
                              {"rl", response != nullptr ? response->limit : 0},
                              {"el", err != nullptr ? err->limit : 0}},
                             std::string_view(request_json.ptr, request_json.len));
  if (outcome.ended) {
    append(err, crashed("its LLM provider's complete", *outcome.ended));
    return OE_UNAVAILABLE;
  }
  append(response, outcome.result.a);
  append(err, outcome.result.b);
  return outcome.result.head.value("status", OE_INTERNAL);
}

const oe_llm_provider* RemotePlugin::providerTable(const nlohmann::json& names) {
  for (const nlohmann::json& name : names) {
    if (name.is_string() && !name.get<std::string>().empty()) {
      provider_names_.push_back(intern(name.get<std::string>()));
    }
  }
  if (provider_names_.empty()) {
    return nullptr;
  }
  provider_names_.push_back(nullptr);
  provider_.struct_size = sizeof(oe_llm_provider);
  provider_.providers = provider_names_.data();
  provider_.complete = &remoteComplete;
  return &provider_;
}

void RemotePlugin::cancel(RemoteNode& node, oe_host_ctx* call) {
  std::shared_ptr<Helper> helper;
  {
    std::lock_guard lock(mutex_);
    helper = helper_;
  }
  if (helper && node.generation == helper->generation) {
    (void)helper->channel->send({{"op", "cancel"}, {"call", fromHandle(call)}});
  }
}

void RemotePlugin::destroy(std::unique_ptr<RemoteNode> node) {
  std::shared_ptr<Helper> helper;
  {
    std::lock_guard lock(mutex_);
    helper = helper_;
  }
  // A node of a helper that died went with it.
  if (helper && node->generation == helper->generation) {
    (void)helper->channel->send({{"op", "destroy"}, {"node", node->id}});
  }
}

const RemoteKind& remoteKind(const oe_node_kind* kind) {
  return *reinterpret_cast<const RemoteKind*>(kind);  // the table is RemoteKind's first member
}

oe_status OE_ABI remoteCreate(oe_plugin* /*self*/, const oe_node_kind* kind, oe_str config_json,
                              oe_host_ctx* node_ctx, oe_node** out_node, oe_writer* err) {
  try {
    const RemoteKind& remote = remoteKind(kind);
    return remote.plugin->create(remote, config_json, node_ctx, out_node, err);
  } catch (const std::exception& e) {
    append(err, std::string("forwarding create to the plugin's helper process: ") + e.what());
    return OE_INTERNAL;
  }
}

// An isolated library's `self` is its RemotePlugin (setIsolatedProvider): nothing of the
// plugin's own is in this process.
oe_status OE_ABI remoteComplete(oe_plugin* self, oe_host_ctx* call, oe_str config_json,
                                oe_str request_json, oe_writer* response, oe_writer* err) {
  try {
    return reinterpret_cast<RemotePlugin*>(self)->complete(call, config_json, request_json,
                                                           response, err);
  } catch (const std::exception& e) {
    append(err, std::string("forwarding an LLM call to the plugin's helper process: ") + e.what());
    return OE_INTERNAL;
  }
}

oe_status OE_ABI remoteInvoke(oe_node* node, const oe_invocation* invocation) {
  auto& remote = *reinterpret_cast<RemoteNode*>(node);
  try {
    return remote.kind->plugin->invoke(remote, *invocation);
  } catch (const std::exception& e) {
    append(invocation->error,
           std::string("forwarding invoke to the plugin's helper process: ") + e.what());
    return OE_INTERNAL;
  }
}

void OE_ABI remoteCancel(oe_node* node, oe_host_ctx* call) {
  auto& remote = *reinterpret_cast<RemoteNode*>(node);
  try {
    remote.kind->plugin->cancel(remote, call);
  } catch (...) {  // cancel must not throw into the run; the call still ends on its own
  }
}

void OE_ABI remoteDestroy(oe_node* node) {
  std::unique_ptr<RemoteNode> remote(reinterpret_cast<RemoteNode*>(node));
  try {
    remote->kind->plugin->destroy(std::move(remote));
  } catch (...) {  // the helper frees it when it ends
  }
}

}  // namespace

Result<Isolation> parseIsolation(std::string_view text, std::string_view where) {
  if (text == "process") {
    return Isolation::kProcess;
  }
  if (text == "in-process") {
    return Isolation::kInProcess;
  }
  return makeError(std::string(where) + ": plugin isolation \"" + std::string(text) +
                   "\" is not one oe knows; write process or in-process");
}

Result<std::optional<Isolation>> isolationFromEnvironment() {
  const char* value = std::getenv("OE_PLUGIN_ISOLATION");
  if (value == nullptr || *value == '\0') {
    return std::optional<Isolation>();
  }
  auto parsed = parseIsolation(value, "OE_PLUGIN_ISOLATION");
  if (!parsed) {
    return std::move(parsed).error();
  }
  return std::optional<Isolation>(*parsed);
}

void setPluginHostExecutable(std::filesystem::path oe_binary) {
  HostExecutable& executable = hostExecutable();
  std::lock_guard lock(executable.mutex);
  executable.path = std::move(oe_binary);
}

Result<std::shared_ptr<PluginLibrary>> openIsolated(const std::filesystem::path& path,
                                                    LogSink* log_sink, std::string sha256) {
  auto server = std::make_unique<RemotePlugin>(path, std::move(sha256));
  auto hello = server->begin();
  if (!hello) {
    return std::move(hello).error();
  }
  const nlohmann::json& head = hello->head;
  const std::string where = path.string() + ": ";
  PluginLibrary::Described described;
  described.id = head.value("id", "");
  described.version = head.value("version", "");
  described.description = head.value("description", "");
  described.abi_version = head.value("abi", 0u);
  described.min_host_abi = head.value("min_host", 0u);
  const char* static_id = intern(described.id);
  std::deque<KindTable> tables;
  uint32_t index = 0;
  for (const nlohmann::json& kind : head.value("kinds", nlohmann::json::array())) {
    RemoteKind& remote = server->kinds().emplace_back();
    remote.plugin = server.get();
    remote.index = index++;
    oe_node_kind& table = remote.table;
    table.struct_size = sizeof(oe_node_kind);
    table.flags = kind.value("flags", 0u);
    table.kind = intern(kind.value("kind", ""));
    table.description = intern(kind.value("description", ""));
    // The helper checked them as the loader does; checked again here, since what crosses the
    // socket comes from a process running the plugin's code.
    if ((table.flags & ~kIsolatedKindFlags) != 0) {
      return makeError(where + "node kind \"" + table.kind + "\" sets flags this oe does not know");
    }
    if (const auto schema = kind.find("schema"); schema != kind.end() && schema->is_string()) {
      if (auto checked = checkKindSchema(schema->get<std::string>()); !checked) {
        return makeError(where + "node kind \"" + table.kind + "\": its spec_schema_json " +
                         checked.error().message);
      }
      table.spec_schema_json = intern(schema->get<std::string>());
    }
    table.create = &remoteCreate;
    table.destroy = &remoteDestroy;
    table.invoke = &remoteInvoke;
    table.cancel = &remoteCancel;
    tables.push_back(KindTable{table, &remote.table});
  }
  RemotePlugin& remote = *server;
  auto library = PluginLibrary::isolated(path, log_sink, described, std::move(tables),
                                         std::move(server), static_id);
  remote.adopt(*library, described.id);
  if (const oe_llm_provider* provider =
          remote.providerTable(head.value("llm_providers", nlohmann::json::array()))) {
    library->setIsolatedProvider(provider, reinterpret_cast<oe_plugin*>(&remote));
  }
  return library;
}

}  // namespace oe::plugins
