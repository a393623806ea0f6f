// The host context of an oe.llm/1 call the host makes itself, outside a run: `oe evolve`'s one
// advisor call and `oe ultra`'s phases. Logs and node.activity go to a LogSink under the
// caller's name, completions to the given LlmService (so limits, budget, record and replay
// apply as in a run), and an optional flag cancels a call in flight.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "oe/llm/llm_service.hpp"
#include "oe/plugins/host_context.hpp"

namespace oe::llm {

class HostCall final : public oe_host_ctx {
 public:
  // `cancel` (may be null) is read from the calling thread and the provider's wait loops.
  HostCall(LlmService& llm, std::string node_id, plugins::LogSink& sink,
           const std::atomic<bool>* cancel = nullptr)
      : llm_(llm), node_id_(std::move(node_id)), sink_(sink), cancel_(cancel) {}
  ~HostCall() override { closeHandle(); }
  HostCall(const HostCall&) = delete;
  HostCall& operator=(const HostCall&) = delete;

  void log(oe_log_level level, std::string_view message) override;
  // node.activity becomes a log line; node.tokens is accounted by the service (usage()).
  oe_status emitEvent(std::string_view type, std::string_view fields_json) override;
  oe_status llmComplete(std::string_view request_json, std::string& out) override;
  [[nodiscard]] bool isCancelled() const override {
    return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed);
  }

  // What every completion through this context spent.
  [[nodiscard]] const Usage& usage() const { return usage_.usage; }

 private:
  LlmService& llm_;
  std::string node_id_;
  plugins::LogSink& sink_;
  const std::atomic<bool>* cancel_;
  CallUsage usage_;
};

}  // namespace oe::llm
