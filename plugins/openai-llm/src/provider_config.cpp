// Parsing and validation of the provider configuration.
#include "provider_config.hpp"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace oe::llm {
namespace {

using Json = nlohmann::json;

// An optional integer member >= `min`; `out` keeps its default when the member is absent.
std::optional<Failure> readInt(const Json& doc, const char* key, long long min, long long& out) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) {
    return std::nullopt;
  }
  if (!it->is_number_integer() || it->get<long long>() < min) {
    return fail(OE_INVALID_ARGUMENT, std::string("LLM provider config: \"") + key +
                                         "\" must be an integer >= " + std::to_string(min) +
                                         ", got " + it->dump());
  }
  out = it->get<long long>();
  return std::nullopt;
}

std::optional<std::string> readString(const Json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

}  // namespace

std::optional<std::string> processEnv(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read-only use
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

Expected<ProviderConfig> parseProviderConfig(std::string_view config_json, const EnvLookup& env) {
  const Json doc = Json::parse(config_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return fail(OE_INVALID_ARGUMENT, "LLM provider config is not a JSON object");
  }
  for (const char* key : {"base_url", "api_key"}) {
    auto it = doc.find(key);
    if (it != doc.end() && !it->is_null() && !it->is_string()) {
      return fail(OE_INVALID_ARGUMENT,
                  std::string("LLM provider config: \"") + key + "\" must be a string");
    }
  }
  ProviderConfig config;
  const std::string provider = readString(doc, "provider").value_or("");
  const char* base_env = nullptr;
  const char* default_base = nullptr;
  if (provider == "openai") {
    config.kind = ProviderKind::kOpenAi;
    config.key_env = "OPENAI_API_KEY";
    base_env = "OPENAI_BASE_URL";
    default_base = kOpenAiDefaultBaseUrl;
    config.default_model = kOpenAiDefaultModel;
  } else if (provider == "anthropic") {
    config.kind = ProviderKind::kAnthropic;
    config.key_env = "ANTHROPIC_API_KEY";
    base_env = "ANTHROPIC_BASE_URL";
    default_base = kAnthropicDefaultBaseUrl;
    config.default_model = kAnthropicDefaultModel;
  } else {
    return fail(OE_INVALID_ARGUMENT,
                "unknown LLM provider \"" + provider +
                    "\": the openai-llm plugin serves \"openai\" and \"anthropic\"");
  }
  config.name = provider;

  config.base_url = readString(doc, "base_url").value_or(env(base_env).value_or(default_base));
  while (config.base_url.ends_with('/')) {
    config.base_url.pop_back();
  }
  if (!config.base_url.starts_with("http://") && !config.base_url.starts_with("https://")) {
    return fail(OE_INVALID_ARGUMENT,
                provider + " base URL \"" + config.base_url +
                    "\" must start with http:// or https:// (set base_url or " + base_env + ")");
  }
  config.api_key = readString(doc, "api_key").value_or(env(config.key_env.c_str()).value_or(""));
  const bool needs_key = config.kind == ProviderKind::kAnthropic || config.base_url == default_base;
  if (config.api_key.empty() && needs_key) {
    return fail(OE_FAILED_PRECONDITION, provider + " provider requires " + config.key_env +
                                            ": set it in the environment (or api_key in the "
                                            "provider configuration)");
  }

  long long timeout = config.timeout.count();
  long long stall = config.stall_timeout.count();
  long long attempts = config.retry.max_attempts;
  long long base = config.retry.base.count();
  long long max_delay = config.retry.max_delay.count();
  for (auto failure :
       {readInt(doc, "timeout_ms", 1, timeout), readInt(doc, "stall_timeout_ms", 1, stall),
        readInt(doc, "max_attempts", 1, attempts), readInt(doc, "base_ms", 0, base),
        readInt(doc, "max_delay_ms", 0, max_delay)}) {
    if (failure) {
      return std::move(*failure);
    }
  }
  config.timeout = Millis{timeout};
  config.stall_timeout = Millis{stall};
  config.retry.max_attempts = static_cast<int>(std::min<long long>(attempts, 100));
  config.retry.base = Millis{base};
  config.retry.max_delay = Millis{max_delay};
  return config;
}

}  // namespace oe::llm
