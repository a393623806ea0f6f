// The provider's configuration (oe_llm_provider.complete's config_json) with the documented
// fallbacks: config, then environment, then the built-in default.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "expected.hpp"
#include "retry.hpp"

namespace oe::llm {

enum class ProviderKind { kOpenAi, kAnthropic };

struct ProviderConfig {
  ProviderKind kind = ProviderKind::kOpenAi;
  std::string name;      // "openai" | "anthropic", for messages
  std::string key_env;   // the env var that holds the key, for messages
  std::string base_url;  // no trailing slash
  std::string api_key;   // may be empty for an OpenAI-compatible server at a custom base_url
  std::string default_model;
  Millis timeout{600000};
  // A non-streaming completion sends nothing until the model is done, so the stall timeout
  // bounds the time to the whole answer's first byte: generous by default.
  Millis stall_timeout{300000};
  RetryPolicy retry;
};

constexpr const char* kOpenAiDefaultBaseUrl = "https://api.openai.com/v1";
constexpr const char* kAnthropicDefaultBaseUrl = "https://api.anthropic.com";
constexpr const char* kOpenAiDefaultModel = "gpt-4o-2024-11-20";
constexpr const char* kAnthropicDefaultModel = "claude-sonnet-4-6";

// Reads an environment variable; nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
std::optional<std::string> processEnv(const char* name);

// {"provider", "base_url"?, "api_key"?, "timeout_ms"?, "stall_timeout_ms"?, "max_attempts"?,
//  "base_ms"?, "max_delay_ms"?}. base_url falls back to OPENAI_BASE_URL / ANTHROPIC_BASE_URL,
// api_key to OPENAI_API_KEY / ANTHROPIC_API_KEY. A missing key is OE_FAILED_PRECONDITION
// naming the variable (OpenAI only asks for one at its default base URL: local
// OpenAI-compatible servers usually need none).
Expected<ProviderConfig> parseProviderConfig(std::string_view config_json, const EnvLookup& env);

}  // namespace oe::llm
