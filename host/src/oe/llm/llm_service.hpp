// The host's LLM service (oe.llm/1, docs/llm.md): one per run. Between a node kind's request and
// a provider plugin it resolves the provider and model (lazily: a run of tools needs no key),
// applies runtime.limits, checks runtime.budget before the call, accounts tokens and cost to
// the node, and records or replays the exchange.
#pragma once

#include <oe/ext/llm.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/llm/ledger.hpp"
#include "oe/llm/rate_limiter.hpp"
#include "oe/llm/recording.hpp"
#include "oe/llm/settings.hpp"
#include "oe/llm/shared_limits.hpp"
#include "oe/plugins/registry.hpp"

namespace oe::llm {

// What one node invocation spent, and whether the budget stopped it.
struct CallUsage {
  Usage usage;
  bool budget_refused = false;
};

// Where a request comes from: the invocation's context (cancellation, events) and node.
struct Site {
  oe_host_ctx* ctx = nullptr;
  std::string_view node_id;
  CallUsage* usage = nullptr;  // accumulates this invocation's calls; may be null
};

struct Answer {
  oe_status status = OE_OK;
  std::string body;  // the response JSON on OE_OK, else the message
};

// One oe.llm/1 call as the service saw it, for telemetry (docs/telemetry.md).
struct CallRecord {
  std::string node_id;
  std::string provider;        // "openai", "anthropic"; empty when none could be chosen
  std::string request_model;   // the model asked for (the provider's default when none was)
  std::string response_model;  // the model that answered (empty when none did)
  Usage usage;                 // tokens; cost_usd when `priced`
  bool priced = false;
  std::string finish_reason;  // the response's stop_reason
  bool replayed = false;      // answered from --llm-replay's recording
  oe_status status = OE_OK;
  std::string error;  // the node's error message when status is not OE_OK
  std::chrono::system_clock::time_point start;
  std::chrono::system_clock::time_point end;
};

// Told about every completion after it ended. [any worker thread, concurrently] Must not block:
// it runs on the node's thread, inside its attempt.
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  virtual void onLlmCall(const CallRecord& call) = 0;
};

// Provider and default model as reference §7 picks them.
struct ProviderChoice {
  std::string provider;       // "anthropic" or "openai"
  std::string default_model;  // OE_*_MODEL or the provider's default
};
[[nodiscard]] Result<ProviderChoice> chooseProvider(const Settings& settings);

class LlmService {
 public:
  // Opens the recording or loads the replay file (errors name the file). `prior`: the usage of
  // the runs this one resumes, so the budget covers the whole chain.
  static Result<std::unique_ptr<LlmService>> create(Settings settings,
                                                    const plugins::PluginRegistry& registry,
                                                    Usage prior);
  // The run's secrets (docs/policy.md, "Secrets"): the recording redacts them, and a recorded
  // exchange is keyed by its request with them redacted (the key does not depend on a value,
  // so a replay needs none set). Before the first call.
  void setSecrets(std::shared_ptr<const secrets::SecretSet> secrets);

  // [thread-safe, blocking] One completion for the node at `site`.
  Answer complete(const Site& site, std::string_view request_json);

  // oe.cli-replay/1-draft (a coding CLI run, docs/kinds-cli-agent.md). beginCli, before the CLI
  // would start: OE_RESOURCE_EXHAUSTED when runtime.budget is already spent; under --llm-replay
  // the recorded outcome or OE_FAILED_PRECONDITION naming the node, the provider and the file;
  // otherwise OE_OK with an empty body (run it live). Then finishCli with the outcome.
  Answer beginCli(const Site& site, std::string_view request_json);
  // After a live or replayed run: accounts the outcome's usage; records it under --llm-record.
  Answer finishCli(const Site& site, std::string_view request_json, std::string_view outcome_json);

  // [thread-safe, blocking] A share of every runtime.limits entry that applies to (name, model),
  // as complete() takes one before each call: waits on the calling thread, the first wait emits
  // node.activity ("waiting for room under runtime.limits.<name>"), and a call cancelled while
  // waiting gets nullopt. With no limit for `name`, a ticket that holds nothing, at once. Also
  // the slots of oe.limits/1-draft (a CLI run under runtime.limits.claude-code).
  std::optional<RateLimiter::Ticket> waitForRoom(const Site& site, std::string_view name,
                                                 std::string_view model, int64_t tokens);
  // Gives back what waitForRoom granted; `actual_tokens` replaces the estimate.
  void giveBack(const RateLimiter::Ticket& ticket, int64_t actual_tokens);

  // Counts the LLM usage of an attempt an `oe worker` ran for this run (Ledger::count).
  void countRemoteUsage(const Usage& used) { ledger_.count(used); }

  [[nodiscard]] Usage runUsage() const;                               // this run's calls
  [[nodiscard]] Usage totalUsage() const { return ledger_.spent(); }  // prior + this run
  [[nodiscard]] const Settings& settings() const { return settings_; }

 private:
  struct Provider {
    std::string name;
    std::string default_model;
    const oe_llm_provider* table = nullptr;
    oe_plugin* self = nullptr;
    std::string config_json;
  };
  LlmService(Settings settings, const plugins::PluginRegistry& registry, Usage prior,
             std::unique_ptr<SharedLimits> shared);
  Result<const Provider*> provider();  // resolved on the first live call, then cached
  // complete() without the observer; `record` (may be null) receives what the call was.
  Answer completeCall(const Site& site, std::string_view request_json, CallRecord* record);
  void account(const Site& site, std::string_view provider, const std::string& model,
               const Json& response, const Ledger::Reservation& reserved, CallRecord* record);
  // A CLI run's usage ({input_tokens, output_tokens, model, cost_usd}), known only afterwards:
  // settled without a reservation, priced from the CLI's own cost, else runtime.prices.
  void accountCli(const Site& site, std::string_view provider, const Json& usage);
  [[nodiscard]] Json redactedCopy(const Json& request) const;  // secrets_ set

  Settings settings_;
  const plugins::PluginRegistry& registry_;
  std::unique_ptr<SharedLimits> shared_;  // before ledger_ and limiter_: they use it
  Ledger ledger_;
  RateLimiter limiter_;
  std::unique_ptr<Recorder> recorder_;
  std::unique_ptr<Replayer> replayer_;
  std::shared_ptr<const secrets::SecretSet> secrets_;  // null: none (the usual run)
  Usage prior_;

  std::mutex provider_mutex_;
  std::optional<Result<Provider>> provider_;
};

}  // namespace oe::llm
