// Host-side definitions of the ABI's opaque handles (oe_writer, oe_host_ctx) and the service
// table handed to every plugin. A plugin only ever sees pointers to these.
#pragma once

#include <oe/oe.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace oe::plugins {
class EventBudget;
}  // namespace oe::plugins

// A host-owned append-only buffer (oe_writer in the ABI). The size limit protects the host from a
// plugin that writes without end.
struct oe_writer {
  std::string data;
  size_t limit = size_t{256} << 20;
};

// Every context the host hands out derives from this. The default answers mean "not available
// in this context" (e.g. emit_event outside a call).
//
// A plugin never gets the object's address: it gets handle(), a slot and a generation in a
// process-wide table, which every function of the host table checks before it touches the
// context. A handle that has ended (closeHandle, renewHandle, or the context's end) is refused
// with a log line instead of reaching freed memory or, worse, the next context at the same
// address (docs/abi.md, "Host functions").
struct oe_host_ctx {
  oe_host_ctx();  // opens the first handle
  oe_host_ctx(const oe_host_ctx&) = delete;
  oe_host_ctx& operator=(const oe_host_ctx&) = delete;
  virtual ~oe_host_ctx();  // closes it, if the derived class did not

  // What a plugin is given for this context; nullptr once closed.
  [[nodiscard]] oe_host_ctx* handle() const noexcept {
    return handle_.load(std::memory_order_acquire);
  }
  // Ends the current handle and opens a new one (a call context, once per invocation).
  void renewHandle();
  // Ends the handle: later uses through it are refused, and a host function running with it
  // (on another thread) finishes first. Idempotent. A derived class calls it in its destructor,
  // before its own members go.
  void closeHandle() noexcept;
  // Names the context in the log line of a refused use: static strings only (a plugin's id and
  // kind name live as long as the process, plugins are never unloaded); nullptr = unknown.
  void setOwner(const char* role, const char* plugin_id, const char* kind) noexcept;

  virtual void log(oe_log_level level, std::string_view message) = 0;
  virtual oe_status emitEvent(std::string_view /*type*/, std::string_view /*fields_json*/) {
    return OE_FAILED_PRECONDITION;
  }
  virtual oe_status stateGet(std::string_view /*field*/, std::string& /*out_json*/) {
    return OE_FAILED_PRECONDITION;
  }
  [[nodiscard]] virtual bool isCancelled() const { return false; }
  // The caps on what the plugin writes to the run's log through this context (emit_event, log);
  // nullptr for a context whose lines do not go there.
  virtual oe::plugins::EventBudget* eventBudget() { return nullptr; }
  [[nodiscard]] virtual const void* extension(const char* /*id*/) { return nullptr; }
  // oe.llm/1 complete: `out` receives the response JSON on OE_OK, else the message.
  virtual oe_status llmComplete(std::string_view /*request_json*/, std::string& out) {
    out = "oe.llm/1 is only available inside a node invocation";
    return OE_FAILED_PRECONDITION;
  }
  // oe.limits/1-draft acquire: fills `out_slot` (a host buffer) on OE_OK.
  virtual oe_status acquireLimit(std::string_view /*name*/, oe_host_buf* /*out_slot*/) {
    return OE_FAILED_PRECONDITION;
  }
  // oe.cli-replay/1-draft begin: on OE_OK `out` is the recorded outcome (empty: run the CLI
  // live); otherwise the message.
  virtual oe_status cliReplayBegin(std::string_view /*request_json*/, std::string& out) {
    out = "oe.cli-replay/1-draft is only available inside a node invocation";
    return OE_FAILED_PRECONDITION;
  }
  // oe.cli-replay/1-draft finish: `out_error` is the message when the status is not OE_OK.
  virtual oe_status cliReplayFinish(std::string_view /*request_json*/,
                                    std::string_view /*outcome_json*/, std::string& out_error) {
    out_error = "oe.cli-replay/1-draft is only available inside a node invocation";
    return OE_FAILED_PRECONDITION;
  }
  // oe.prompt/1 render and values_json.
  virtual oe_status renderPrompt(std::string_view /*template_text*/, std::string& /*out*/) {
    return OE_FAILED_PRECONDITION;
  }
  virtual oe_status promptValues(uint32_t /*indent*/, std::string& /*out*/) {
    return OE_FAILED_PRECONDITION;
  }
  // oe.subrun/1-draft run: `out` receives the child's result JSON on OE_OK, else the message.
  virtual oe_status runSubExperience(std::string_view /*request_json*/, std::string& out) {
    out = "oe.subrun/1-draft is only available inside a node invocation";
    return OE_FAILED_PRECONDITION;
  }

 private:
  std::atomic<oe_host_ctx*> handle_{nullptr};
  const char* role_ = nullptr;
  const char* plugin_id_ = nullptr;
  const char* kind_ = nullptr;
};

namespace oe::plugins {

struct ContextSlot;

// A context a plugin's handle resolved to, held in use until the pin goes: closing the handle
// waits for it. Empty when the handle was not valid (the refusal is already logged).
class ContextPin {
 public:
  ContextPin() = default;
  ContextPin(ContextSlot* slot, oe_host_ctx* ctx) noexcept : slot_(slot), ctx_(ctx) {}
  ContextPin(const ContextPin&) = delete;
  ContextPin& operator=(const ContextPin&) = delete;
  ~ContextPin();

  explicit operator bool() const noexcept { return ctx_ != nullptr; }
  oe_host_ctx* operator->() const noexcept { return ctx_; }
  oe_host_ctx& operator*() const noexcept { return *ctx_; }

 private:
  ContextSlot* slot_ = nullptr;
  oe_host_ctx* ctx_ = nullptr;
};

// The context behind `handle`, as a plugin passed it to `function` (named in the log line of a
// refusal). A NULL handle is refused without a line: the functions answer it as before.
[[nodiscard]] ContextPin pinContext(oe_host_ctx* handle, const char* function) noexcept;

// The table given to every plugin's init. Constant-initialised; lives for the whole process.
const oe_host_api* hostApi() noexcept;

// Once at start-up, before any plugin is loaded or thread started: libcurl's global init and the
// host services that need the table (oe.http/1).
void initHostServices();

// Where plugin log lines go. Implemented by the CLI (stderr) and by tests.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(oe_log_level level, std::string_view source, std::string_view message) = 0;
};

// The context of a plugin library between init and deinit. A library is shared by everything in
// the process that loads it (PluginLibrary::open), each with a sink of its own: the plugin's
// lines go to the oldest sink still attached.
class PluginContext final : public oe_host_ctx {
 public:
  explicit PluginContext(std::string plugin_id) : id_(std::move(plugin_id)) {}
  ~PluginContext() override { closeHandle(); }
  PluginContext(const PluginContext&) = delete;
  PluginContext& operator=(const PluginContext&) = delete;
  void log(oe_log_level level, std::string_view message) override;

  void attachSink(LogSink* sink);
  void detachSink(LogSink* sink);

 private:
  std::string id_;
  std::mutex sinks_mutex_;
  std::vector<LogSink*> sinks_;
};

}  // namespace oe::plugins
