// One LLM node invocation over the host's services: oe.prompt/1 to render, oe.llm/1 to complete,
// then the answer as a state delta (text, or structured output validated against the node's
// schema and, when it does not match, repaired by sending the model its errors).
#pragma once

#include <oe/cpp/llm.hpp>
#include <oe/cpp/plugin.hpp>
#include <oe/cpp/prompt.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "llm_kit/options.hpp"

namespace oe::llmkit {

// The host services of one invocation (the SDK's typed wrappers, bound to the call).
struct LlmServices {
  sdk::Llm llm;
  sdk::Prompt prompt;
};

// Looks both services up for `call`; a missing one fails naming the node (`who`) and the id.
Expected<LlmServices> findServices(const sdk::Call& call, std::string_view who);

// `{{placeholder}}` rendering with the host's semantics (oe.prompt/1 render).
Expected<std::string> renderPrompt(const LlmServices& services, std::string_view template_text,
                                   std::string_view who);

// The merged {...state_view, ...edge_inputs, ...args} as JSON.stringify(values, null, indent).
Expected<std::string> valuesJson(const LlmServices& services, uint32_t indent,
                                 std::string_view who);

struct AskSpec {
  std::optional<std::string> system;  // omitted from the request when unset or empty
  std::string user;                   // the first user message
  std::string calling_activity;       // the node.activity sent before the first call
};

// Asks the model and turns the answer into the invocation's response JSON
// ({"state_delta", "metrics"?}). Text mode needs exactly one entry in options.writes (callers
// check first, with their kind's message). Structured mode (options.schema set) makes up to
// 1 + options.repair_attempts calls. An oe.llm/1 failure (budget, provider, cancellation) is
// returned with its status and message, never retried here.
Expected<std::string> ask(const LlmServices& services, const sdk::Call& call,
                          const LlmNodeOptions& options, const AskSpec& spec);

}  // namespace oe::llmkit
