// What a run's LLM service is told: rate limits, budget and prices from `runtime:` in the YAML,
// overridden by `oe run` flags, and the environment that picks the provider (reference §7).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::llm {

class CallObserver;  // llm_service.hpp

// One `runtime.limits` entry. Absent members do not limit.
struct Limit {
  std::optional<int> max_in_flight;
  std::optional<int> requests_per_minute;
  std::optional<int64_t> tokens_per_minute;
};

struct ProviderLimits {
  Limit limit;                                            // every call to the provider
  std::map<std::string, Limit, std::less<>> models;       // calls to one model of it
};

// USD per million tokens.
struct Price {
  double input = 0;
  double output = 0;
};

struct Budget {
  std::optional<int64_t> max_tokens{};  // input + output tokens of every call of the run
  std::optional<double> max_cost_usd{};
};

// The provider-selection environment (reference §7), read once per run so a run sees one view.
struct Environment {
  std::string anthropic_api_key{};
  std::string openai_api_key{};
  std::string openai_base_url{};
  std::string anthropic_model{};  // OE_ANTHROPIC_MODEL
  std::string openai_model{};     // OE_OPENAI_MODEL
  static Environment fromProcess();
};

struct Settings {
  std::string provider_flag;  // --llm: "anthropic", "openai" or empty
  std::map<std::string, ProviderLimits, std::less<>> limits;  // provider -> limits
  Budget budget;
  std::map<std::string, Price, std::less<>> prices;  // model -> price; shipped defaults + YAML
  std::optional<std::filesystem::path> record_file;  // --llm-record
  std::optional<std::filesystem::path> replay_file;  // --llm-replay
  // Every call answered by a schema-shaped stand-in (stand_in.hpp), with no provider: `oe
  // ultra`'s smoke run of a draft. Wins over replay; nothing is recorded.
  bool stand_in = false;
  // With stand_in: what the stand-in coding CLI prints for a cli-agent node (by node id), so a
  // node with `output_format: json` and a schema gets an object that passes it; "{}" otherwise.
  std::map<std::string, std::string, std::less<>> stand_in_cli_stdout;
  Environment env;
  // Sees every oe.llm/1 call when set (oe run --otel, docs/telemetry.md); not owned, outlives
  // the run. Null costs a completion one branch.
  CallObserver* observer = nullptr;
  // Limits and budget shared by every process that serves one run (`oe worker`s, the
  // coordinator; docs/llm.md "Limits and budget across workers"): a PostgreSQL URL, and the
  // run's chain id as the scope they are counted in. Both empty: counted in this process.
  std::string shared_store_url{};
  std::string shared_scope{};
};

// The shipped list prices (USD per million tokens, as published by the providers).
[[nodiscard]] std::map<std::string, Price, std::less<>> defaultPrices();

// Reads `runtime.limits`, `runtime.budget` and `runtime.prices` (the `runtime` object of the
// experience; null when absent) into `settings`, on top of the default prices. The shapes are
// checked by the experience schema at validation time; what reaches here is well-formed, so an
// error means a value the schema cannot express (a negative price).
[[nodiscard]] Result<void> applyRuntime(const Json& runtime, Settings& settings);

// The price of `model`: an exact entry, else the longest entry that is a prefix of it (a dated
// snapshot such as claude-sonnet-4-5-20250929 costs what claude-sonnet-4-5 costs).
[[nodiscard]] const Price* findPrice(const Settings& settings, std::string_view model);

}  // namespace oe::llm
