// Host-side definitions of the ABI's opaque handles (oe_writer, oe_host_ctx) and the service
// table handed to every plugin. A plugin only ever sees pointers to these.
#pragma once

#include <oe/oe.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>

// A host-owned append-only buffer (oe_writer in the ABI). The size limit protects the host from a
// plugin that writes without end.
struct oe_writer {
  std::string data;
  size_t limit = size_t{256} << 20;
};

// Every context the host hands out derives from this. The default answers mean "not available
// in this context" (e.g. emit_event outside a call).
struct oe_host_ctx {
  oe_host_ctx() = default;
  oe_host_ctx(const oe_host_ctx&) = delete;
  oe_host_ctx& operator=(const oe_host_ctx&) = delete;
  virtual ~oe_host_ctx() = default;

  virtual void log(oe_log_level level, std::string_view message) = 0;
  virtual oe_status emitEvent(std::string_view /*type*/, std::string_view /*fields_json*/) {
    return OE_FAILED_PRECONDITION;
  }
  virtual oe_status stateGet(std::string_view /*field*/, std::string& /*out_json*/) {
    return OE_FAILED_PRECONDITION;
  }
  [[nodiscard]] virtual bool isCancelled() const { return false; }
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
};

namespace oe::plugins {

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

// The context of a plugin library between init and deinit.
class PluginContext final : public oe_host_ctx {
 public:
  PluginContext(std::string plugin_id, LogSink* sink) : id_(std::move(plugin_id)), sink_(sink) {}
  void log(oe_log_level level, std::string_view message) override;

 private:
  std::string id_;
  LogSink* sink_;
};

}  // namespace oe::plugins
