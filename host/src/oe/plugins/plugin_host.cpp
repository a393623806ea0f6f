// The helper's side of process isolation (`oe plugin-host`): loads one plugin library with the
// same loader as oe, runs each create, invoke and destroy oe sends on a thread of its own, and
// gives the plugin contexts that forward its calls to the host back over the socket.
#include <oe/ext/draft/cli_replay.h>
#include <oe/ext/draft/limits.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "oe/common/host_buffer.hpp"
#include "oe/plugins/plugin_isolation.hpp"
#include "oe/plugins/plugin_wire.hpp"

namespace oe::plugins {
namespace {

class PluginHost;

// A context the plugin is given here stands for one in oe: `remote_` is that context's handle
// there, which oe checks as it checks any handle a plugin passes.
class ForwardedContext : public oe_host_ctx {
 public:
  ForwardedContext(PluginHost& host, uint64_t remote) : host_(host), remote_(remote) {}
  void log(oe_log_level level, std::string_view message) override;

 protected:
  PluginHost& host_;
  uint64_t remote_;
};

class ForwardedNodeContext final : public ForwardedContext {
 public:
  using ForwardedContext::ForwardedContext;
  ~ForwardedNodeContext() override { closeHandle(); }
};

// The call context of one invoke: what needs the run (events, state, LLM, prompts, sub-runs,
// CLI replay) is asked of oe, on the thread that waits there for this invoke.
class ForwardedCallContext final : public ForwardedContext {
 public:
  ForwardedCallContext(PluginHost& host, uint64_t remote, uint64_t request)
      : ForwardedContext(host, remote), request_(request) {}
  ~ForwardedCallContext() override { closeHandle(); }

  oe_status emitEvent(std::string_view type, std::string_view fields_json) override;
  oe_status stateGet(std::string_view field, std::string& out_json) override;
  // An invoke's cancellation is sent to the helper (the `cancel` op); a provider call's is the
  // calling agent's, which only oe knows: asked there (`ask_host`).
  [[nodiscard]] bool isCancelled() const override;
  void askHostWhetherCancelled() { ask_host_ = true; }
  oe_status llmComplete(std::string_view request_json, std::string& out) override;
  oe_status renderPrompt(std::string_view template_text, std::string& out) override;
  oe_status promptValues(uint32_t indent, std::string& out) override;
  oe_status runSubExperience(std::string_view request_json, std::string& out) override;
  oe_status cliReplayBegin(std::string_view request_json, std::string& out) override;
  oe_status cliReplayFinish(std::string_view request_json, std::string_view outcome_json,
                            std::string& out_error) override;
  oe_status acquireLimit(std::string_view name, oe_host_buf* out_slot) override;

  void cancel() { cancelled_.store(true); }

  // What a runtime.limits slot handed out in this invoke needs to give itself back: alive while
  // the invoke is. oe takes back the slots still held when the invoke returns, so a slot
  // released after that (or at the helper's exit) has nothing to send.
  struct SlotLink {
    PluginHost& host;
    uint64_t request;
    uint64_t remote;
  };

 private:
  uint64_t request_;
  std::atomic<bool> cancelled_{false};
  bool ask_host_ = false;
  std::shared_ptr<SlotLink> slot_link_ = std::make_shared<SlotLink>(SlotLink{host_, request_, remote_});
};

// A runtime.limits slot held in oe for this helper's plugin: the buffer the plugin releases.
class ForwardedSlot final : public HostBuffer {
 public:
  ForwardedSlot(std::string text, std::weak_ptr<ForwardedCallContext::SlotLink> link, uint64_t id)
      : HostBuffer(std::move(text)), link_(std::move(link)), id_(id) {}
  ~ForwardedSlot() override;

 private:
  std::weak_ptr<ForwardedCallContext::SlotLink> link_;
  uint64_t id_;
};

class PluginHost {
 public:
  explicit PluginHost(int fd) : channel_(fd) {}

  int run(const std::filesystem::path& path);

  void send(const nlohmann::json& head, std::string_view a = {}, std::string_view b = {}) {
    (void)channel_.send(head, a, b);
  }
  // Asks oe to run `fn` for the invoke `request`, with the plugin's context `remote`; waits.
  wire::Frame call(uint64_t request, uint64_t remote, const char* fn, std::string_view a,
                   std::string_view b = {}, nlohmann::json extra = nlohmann::json::object());

 private:
  struct Node {
    const KindTable* kind = nullptr;
    oe_node* node = nullptr;
    std::unique_ptr<ForwardedNodeContext> context;
  };
  struct Running {
    ForwardedCallContext* context;
    const KindTable* kind;
    oe_node* node;
  };
  struct Waiter {
    std::condition_variable answered;
    std::optional<wire::Frame> reply;
  };

  void follow();
  void dispatch(wire::Frame frame);
  void create(const wire::Frame& frame);
  void invoke(const wire::Frame& frame);
  void complete(const wire::Frame& frame);
  void destroy(const wire::Frame& frame);
  void cancel(const wire::Frame& frame);
  void reply(wire::Frame frame);
  bool finish();

  wire::Channel channel_;
  std::shared_ptr<PluginLibrary> library_;

  std::mutex mutex_;  // nodes_ and running_; a cancel holds it across the plugin's cancel
  std::map<uint64_t, Node> nodes_;
  std::map<uint64_t, Running> running_;  // by oe's call handle
  uint64_t next_node_ = 1;

  std::mutex reply_mutex_;
  std::map<uint64_t, Waiter*> waiting_;
  uint64_t next_call_ = 1;
  bool host_gone_ = false;

  // Leader/follower: the threads of this pool take turns reading the socket; the one that reads
  // a create, invoke or destroy hands the reading to another (waking an idle one, or starting
  // one) and runs it itself, so a request reaches the plugin without a hand-off between
  // threads, and the pool grows to the number of requests at once (the run's parallelism).
  std::mutex pool_mutex_;
  std::condition_variable pool_changed_;  // the reading was handed over, or the stream ended
  std::condition_variable drained_;       // nothing runs any more
  std::condition_variable finished_;      // the stream ended (run() waits for it)
  bool reading_ = false;                  // a thread is in receive()
  bool ended_ = false;                    // the stream ended
  size_t idle_ = 0;                       // threads waiting for their turn to read
  size_t busy_ = 0;                       // requests running
  std::vector<std::thread> threads_;
};

// The plugin-level log lines (init's context) go to oe, which writes them as it would its own.
class ForwardingSink final : public LogSink {
 public:
  explicit ForwardingSink(PluginHost& host) : host_(host) {}
  void write(oe_log_level level, std::string_view /*source*/, std::string_view message) override {
    host_.send({{"op", "plog"}, {"level", level}}, message);
  }

 private:
  PluginHost& host_;
};

void ForwardedContext::log(oe_log_level level, std::string_view message) {
  host_.send({{"op", "log"}, {"h", remote_}, {"level", level}}, message);
}

oe_status statusOf(const wire::Frame& frame) { return frame.head.value("status", OE_INTERNAL); }

// A forwarded call's answer into `out`: the reply's first string, or with `error_in_b` its second
// when the call failed (the host's error text).
oe_status takeReply(wire::Frame reply, std::string& out, bool error_in_b = false) {
  const oe_status status = statusOf(reply);
  out = error_in_b && status != OE_OK ? std::move(reply.b) : std::move(reply.a);
  return status;
}

oe_status ForwardedCallContext::emitEvent(std::string_view type, std::string_view fields_json) {
  return statusOf(host_.call(request_, remote_, "emit_event", type, fields_json));
}

oe_status ForwardedCallContext::stateGet(std::string_view field, std::string& out_json) {
  return takeReply(host_.call(request_, remote_, "state_get", field), out_json);
}

oe_status ForwardedCallContext::llmComplete(std::string_view request_json, std::string& out) {
  return takeReply(host_.call(request_, remote_, "llm", request_json), out, /*error_in_b=*/true);
}

oe_status ForwardedCallContext::renderPrompt(std::string_view template_text, std::string& out) {
  return takeReply(host_.call(request_, remote_, "prompt.render", template_text), out);
}

oe_status ForwardedCallContext::promptValues(uint32_t indent, std::string& out) {
  return takeReply(host_.call(request_, remote_, "prompt.values", {}, {}, {{"indent", indent}}),
                   out);
}

oe_status ForwardedCallContext::runSubExperience(std::string_view request_json, std::string& out) {
  return takeReply(host_.call(request_, remote_, "subrun", request_json), out);
}

oe_status ForwardedCallContext::cliReplayBegin(std::string_view request_json, std::string& out) {
  return takeReply(host_.call(request_, remote_, "cli_replay.begin", request_json), out,
                   /*error_in_b=*/true);
}

oe_status ForwardedCallContext::cliReplayFinish(std::string_view request_json,
                                                std::string_view outcome_json,
                                                std::string& out_error) {
  wire::Frame reply =
      host_.call(request_, remote_, "cli_replay.finish", request_json, outcome_json);
  out_error = std::move(reply.b);
  return statusOf(reply);
}

bool ForwardedCallContext::isCancelled() const {
  if (cancelled_.load()) {
    return true;
  }
  if (!ask_host_) {
    return false;
  }
  const wire::Frame reply = host_.call(request_, remote_, "is_cancelled", {});
  return statusOf(reply) == OE_OK && reply.a == "1";
}

// oe acquires the slot with the invoke's own context (the same wait, the same node.activity)
// and keeps it under an id; the buffer given here sends that id back when it is released.
oe_status ForwardedCallContext::acquireLimit(std::string_view name, oe_host_buf* out_slot) {
  wire::Frame reply = host_.call(request_, remote_, "limits.acquire", name);
  const oe_status status = statusOf(reply);
  if (status == OE_OK) {
    giveBuffer(std::make_unique<ForwardedSlot>(std::move(reply.a), slot_link_,
                                               reply.head.value("slot", uint64_t{0})),
               out_slot);
  }
  return status;
}

ForwardedSlot::~ForwardedSlot() {
  if (auto link = link_.lock(); link && id_ != 0) {
    (void)link->host.call(link->request, link->remote, "limits.release", {}, {},
                          {{"slot", id_}});
  }
}

wire::Frame PluginHost::call(uint64_t request, uint64_t remote, const char* fn, std::string_view a,
                             std::string_view b, nlohmann::json extra) {
  Waiter waiter;
  uint64_t id = 0;
  {
    std::lock_guard lock(reply_mutex_);
    if (host_gone_) {
      wire::Frame gone;
      gone.head = {{"status", OE_UNAVAILABLE}};
      gone.b = "oe went away";
      return gone;
    }
    id = next_call_++;
    waiting_[id] = &waiter;
  }
  extra["op"] = "call";
  extra["id"] = request;
  extra["cid"] = id;
  extra["fn"] = fn;
  extra["h"] = remote;
  send(extra, a, b);
  std::unique_lock lock(reply_mutex_);
  waiter.answered.wait(lock, [&] { return waiter.reply.has_value() || host_gone_; });
  waiting_.erase(id);
  if (!waiter.reply) {
    wire::Frame gone;
    gone.head = {{"status", OE_UNAVAILABLE}};
    gone.b = "oe went away";
    return gone;
  }
  return std::move(*waiter.reply);
}

void PluginHost::reply(wire::Frame frame) {
  std::lock_guard lock(reply_mutex_);
  if (auto it = waiting_.find(frame.head.value("cid", uint64_t{0})); it != waiting_.end()) {
    it->second->reply = std::move(frame);
    it->second->answered.notify_one();
  }
}

void PluginHost::follow() {
  std::unique_lock lock(pool_mutex_);
  while (true) {
    ++idle_;
    pool_changed_.wait(lock, [this] { return !reading_ || ended_; });
    --idle_;
    if (ended_) {
      return;
    }
    reading_ = true;
    lock.unlock();
    std::optional<wire::Frame> frame = channel_.receive();
    lock.lock();
    reading_ = false;
    if (!frame) {
      ended_ = true;
      pool_changed_.notify_all();  // the followers end
      finished_.notify_all();      // run() finishes
      return;
    }
    const std::string op = frame->head.value("op", "");
    if (op != "invoke" && op != "create" && op != "destroy") {
      lock.unlock();
      dispatch(std::move(*frame));  // cancel, reply: quick, done by the reader
      lock.lock();
      continue;
    }
    // A request to run: someone else reads meanwhile.
    if (idle_ == 0) {
      threads_.emplace_back([this] { follow(); });
    } else {
      pool_changed_.notify_one();
    }
    ++busy_;
    lock.unlock();
    dispatch(std::move(*frame));
    lock.lock();
    if (--busy_ == 0) {
      drained_.notify_all();
    }
  }
}

void PluginHost::dispatch(wire::Frame frame) {
  const std::string op = frame.head.value("op", "");
  if (op == "invoke") {
    invoke(frame);
  } else if (op == "complete") {
    complete(frame);
  } else if (op == "create") {
    create(frame);
  } else if (op == "destroy") {
    destroy(frame);
  } else if (op == "cancel") {
    cancel(frame);
  } else if (op == "reply") {
    reply(std::move(frame));
  }
}

void PluginHost::create(const wire::Frame& frame) {
  const uint64_t id = frame.head.value("id", uint64_t{0});
  const uint32_t index = frame.head.value("kind", 0u);
  if (index >= library_->kinds().size()) {
    send({{"op", "result"}, {"id", id}, {"status", OE_INVALID_ARGUMENT}}, {},
         "no such node kind in the plugin");
    return;
  }
  const KindTable& kind = library_->kinds()[index];
  auto context =
      std::make_unique<ForwardedNodeContext>(*this, frame.head.value("nctx", uint64_t{0}));
  context->setOwner("a node context", library_->staticId(), kind.table.kind);
  oe_writer err;
  oe_node* node = nullptr;
  const oe_status status =
      kind.table.create(library_->self(), kind.descriptor, oe_str{frame.a.data(), frame.a.size()},
                        context->handle(), &node, &err);
  if (status != OE_OK || node == nullptr) {
    send({{"op", "result"}, {"id", id}, {"status", status != OE_OK ? status : OE_INTERNAL}}, {},
         err.data);
    return;
  }
  uint64_t node_id = 0;
  {
    std::lock_guard lock(mutex_);
    node_id = next_node_++;
    nodes_.emplace(node_id, Node{&kind, node, std::move(context)});
  }
  send({{"op", "result"}, {"id", id}, {"status", OE_OK}, {"node", node_id}});
}

void PluginHost::invoke(const wire::Frame& frame) {
  const uint64_t id = frame.head.value("id", uint64_t{0});
  const uint64_t call = frame.head.value("call", uint64_t{0});
  const KindTable* kind = nullptr;
  oe_node* node = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (auto it = nodes_.find(frame.head.value("node", uint64_t{0})); it != nodes_.end()) {
      kind = it->second.kind;
      node = it->second.node;
    }
  }
  if (kind == nullptr) {
    send({{"op", "result"}, {"id", id}, {"status", OE_FAILED_PRECONDITION}}, {},
         "the plugin's helper process holds no such node");
    return;
  }
  ForwardedCallContext context(*this, call, id);
  context.setOwner("a call context", library_->staticId(), kind->table.kind);
  oe_writer response;
  oe_writer error;
  if (const size_t limit = frame.head.value("rl", size_t{0}); limit > 0) {
    response.limit = limit;
  }
  if (const size_t limit = frame.head.value("el", size_t{0}); limit > 0) {
    error.limit = limit;
  }
  {
    std::lock_guard lock(mutex_);
    running_[call] = Running{&context, kind, node};
  }
  const oe_invocation inv{sizeof(oe_invocation),
                          frame.head.value("attempt", 1u),
                          oe_str{frame.a.data(), frame.a.size()},
                          context.handle(),
                          &response,
                          &error};
  const oe_status status = kind->table.invoke(node, &inv);
  {
    std::lock_guard lock(mutex_);  // a cancel racing the return finishes first
    running_.erase(call);
  }
  context.closeHandle();
  send({{"op", "result"}, {"id", id}, {"status", status}}, response.data, error.data);
}

// One call of the plugin's oe.llm-provider/1 table, made in oe by an agent of any plugin: the
// agent's call context (when there is one) stands for it here, so the provider's node.activity
// and log lines reach that call in oe.
void PluginHost::complete(const wire::Frame& frame) {
  const uint64_t id = frame.head.value("id", uint64_t{0});
  const uint64_t call = frame.head.value("call", uint64_t{0});
  const oe_llm_provider* table = library_->llmProvider();
  if (table == nullptr) {
    send({{"op", "result"}, {"id", id}, {"status", OE_FAILED_PRECONDITION}}, {},
         "the plugin offers no oe.llm-provider/1 table");
    return;
  }
  std::optional<ForwardedCallContext> context;
  if (call != 0) {
    context.emplace(*this, call, id);
    context->setOwner("a call context", library_->staticId(), "oe.llm-provider/1");
    context->askHostWhetherCancelled();
  }
  oe_writer response;
  oe_writer error;
  if (const size_t limit = frame.head.value("rl", size_t{0}); limit > 0) {
    response.limit = limit;
  }
  if (const size_t limit = frame.head.value("el", size_t{0}); limit > 0) {
    error.limit = limit;
  }
  const std::string config = frame.head.value("config", "");
  const oe_status status =
      table->complete(library_->self(), context ? context->handle() : nullptr,
                      oe_str{config.data(), config.size()}, oe_str{frame.a.data(), frame.a.size()},
                      &response, &error);
  if (context) {
    context->closeHandle();
  }
  send({{"op", "result"}, {"id", id}, {"status", status}}, response.data, error.data);
}

void PluginHost::destroy(const wire::Frame& frame) {
  Node node;
  {
    std::lock_guard lock(mutex_);
    auto it = nodes_.find(frame.head.value("node", uint64_t{0}));
    if (it == nodes_.end()) {
      return;
    }
    node = std::move(it->second);
    nodes_.erase(it);
  }
  node.kind->table.destroy(node.node);
}

void PluginHost::cancel(const wire::Frame& frame) {
  std::lock_guard lock(mutex_);
  auto it = running_.find(frame.head.value("call", uint64_t{0}));
  if (it == running_.end()) {
    return;  // it returned meanwhile
  }
  it->second.context->cancel();
  if (it->second.kind->table.cancel != nullptr) {
    it->second.kind->table.cancel(it->second.node, it->second.context->handle());
  }
}

// oe closed the socket (it let the library go, or died): what runs is told oe is gone, what is
// left is destroyed, and the library deinitialised, as an in-process library would be.
bool PluginHost::finish() {
  {
    std::lock_guard lock(reply_mutex_);
    host_gone_ = true;
    for (auto& [id, waiter] : waiting_) {
      waiter->answered.notify_one();
    }
  }
  std::unique_lock lock(pool_mutex_);
  const bool quiet =
      drained_.wait_for(lock, std::chrono::seconds(5), [this] { return busy_ == 0; });
  lock.unlock();
  if (!quiet) {
    return false;  // a call still in the plugin: deinit would free what it uses
  }
  std::lock_guard nodes_lock(mutex_);
  for (auto& [id, node] : nodes_) {
    node.kind->table.destroy(node.node);
  }
  nodes_.clear();
  library_.reset();
  return true;
}

int PluginHost::run(const std::filesystem::path& path) {
  ForwardingSink sink(*this);
  auto opened = PluginLibrary::open(path, &sink);
  if (!opened) {
    send({{"op", "hello"}, {"error", opened.error().message}});
    return 1;
  }
  library_ = std::move(opened).value();
  nlohmann::json kinds = nlohmann::json::array();
  for (const KindTable& kind : library_->kinds()) {
    kinds.push_back(
        {{"kind", kind.table.kind},
         {"description", kind.table.description != nullptr ? kind.table.description : ""},
         {"flags", kind.table.flags},
         {"schema", kind.table.spec_schema_json != nullptr
                        ? nlohmann::json(kind.table.spec_schema_json)
                        : nlohmann::json()}});
  }
  send({{"op", "hello"},
        {"id", library_->id()},
        {"version", library_->version()},
        {"description", library_->description()},
        {"abi", library_->abiVersion()},
        {"min_host", library_->minHostAbi()},
        {"kinds", kinds},
        {"llm_providers", library_->llmProviders()}});
  {
    std::unique_lock lock(pool_mutex_);
    threads_.emplace_back([this] { follow(); });
    finished_.wait(lock, [this] { return ended_; });
  }
  if (finish()) {
    // Every thread of the pool has seen the end of the stream and returned (or is about to):
    // joined, so the process ends with none of its own left behind.
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(pool_mutex_);
      threads.swap(threads_);
    }
    for (std::thread& thread : threads) {
      thread.join();
    }
  }
  return 0;
}

}  // namespace

int runPluginHost(int fd, const std::filesystem::path& library) {
  // Ctrl-C reaches the whole process group: oe cancels the calls it concerns (which reaches the
  // plugin through cancel and is_cancelled) and lets the library go; the helper dying of it
  // would turn a cancellation into a crash.
  std::signal(SIGINT, SIG_IGN);
  PluginHost host(fd);
  const int code = host.run(library);
  // Threads of the pool (and any the plugin started) are still there: end without running
  // static destructors under them.
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace oe::plugins
