// The two wire protocols: the oe.llm request (sdk/include/oe/ext/llm.h) as an OpenAI
// chat-completions or Anthropic Messages body, and each provider's answer back as the oe.llm
// response {"text", "tool_calls"?, "usage"?, "stop_reason"?, "model"}.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "expected.hpp"

namespace oe::llm {

using Json = nlohmann::json;

struct LlmRequest {
  std::string model;
  std::optional<std::string> system;
  Json messages = Json::array();  // [{"role", "content"}], passed through
  Json tools = Json::array();     // [{"name", "description"?, "input_schema"?}]
  int max_tokens = 4096;
};

// Validates the oe.llm request; `default_model` when it names none.
Expected<LlmRequest> parseLlmRequest(std::string_view request_json, std::string_view default_model);

// OpenAI: system first; function tools; tool_choice forces the one tool, or "required" for
// several.
std::string openAiBody(const LlmRequest& request);
// Anthropic: system only when given; tools as they are; no tool_choice.
std::string anthropicBody(const LlmRequest& request);

// A 2xx body mapped to the oe.llm response. A body that is not the provider's JSON shape is a
// failure whose message starts with what is wrong (the caller adds where it came from).
Expected<Json> openAiResult(std::string_view body, const LlmRequest& request);
Expected<Json> anthropicResult(std::string_view body, const LlmRequest& request);

// A function call's arguments: "" -> {}; one leading <think>...</think> block (and the space
// around it) is dropped, then JSON-parsed; on failure {"_raw": <the original string>}.
Json parseToolArguments(std::string_view raw);

// At most `max` bytes of `text`, cut on a UTF-8 boundary, "..." appended when cut.
std::string excerpt(std::string_view text, size_t max = 300);

}  // namespace oe::llm
