// libFuzzer target: what the openai-llm plugin reads back from a provider. The first byte picks
// the protocol (even: OpenAI chat completions, odd: Anthropic Messages); the rest is the 2xx
// body. Whatever the body, the mapping returns either a failure or an oe.llm response whose
// "text" is a string and whose tool calls each have a non-empty string name; it never throws.
// parseToolArguments gets the body as one call's arguments too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol.hpp"

namespace {

void checkResponse(const oe::llm::Json& response) {
  if (!response.is_object() || !response.contains("text") || !response["text"].is_string() ||
      !response.contains("model") || !response["model"].is_string()) {
    std::abort();
  }
  if (auto calls = response.find("tool_calls"); calls != response.end()) {
    if (!calls->is_array()) {
      std::abort();
    }
    for (const auto& call : *calls) {
      if (!call.contains("name") || !call["name"].is_string() ||
          call["name"].get_ref<const std::string&>().empty() || !call.contains("input")) {
        std::abort();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const bool anthropic = (data[0] & 1) != 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  oe::llm::LlmRequest request;
  request.model = "fuzz-model";
  auto result = anthropic ? oe::llm::anthropicResult(body, request)
                          : oe::llm::openAiResult(body, request);
  if (result) {
    checkResponse(*result);
  }
  const oe::llm::Json args = oe::llm::parseToolArguments(body);
  if (args.is_discarded()) {
    std::abort();
  }
  (void)oe::llm::excerpt(body, 40);
  return 0;
}
