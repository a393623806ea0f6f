// The ask-validate-repair loop of agent and skill nodes; see ask.hpp.
#include "llm_kit/ask.hpp"

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace oe::llmkit {

namespace {

constexpr const char* kToolName = "structured_output";
constexpr const char* kToolDescription =
    "Return the agent result as a structured object matching the schema";
constexpr size_t kRawPreview = 200;

std::string missingService(std::string_view who, const char* id, const char* what) {
  return std::string(who) + " needs the host service " + id + " (" + what +
         "), which this host does not offer; run it with the oe host it was built for";
}

void activity(const sdk::Call& call, const std::string& text) {
  call.emitEvent("node.activity",
                 Json{{"activity", text}}.dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::string preview(const std::string& text) {
  return text.size() > kRawPreview ? text.substr(0, kRawPreview) + "..." : text;
}

// The arguments the provider could not parse arrive as {"_raw": "<text>"} (docs/llm.md).
const std::string* rawArguments(const Json& input, const OutputSchema& schema) {
  if (input.is_object() && input.size() == 1 && input.contains("_raw") &&
      input["_raw"].is_string() && !schema.declaresProperty("_raw")) {
    return &input["_raw"].get_ref<const std::string&>();
  }
  return nullptr;
}

// JavaScript has one number type: 3.0 is the integer 3 there, so it must satisfy "integer".
void normaliseNumbers(Json& value) {
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9007199254740992.0) {
      value = static_cast<int64_t>(d);
    }
  } else if (value.is_structured()) {
    for (auto& child : value) {
      normaliseNumbers(child);
    }
  }
}

std::string joined(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : std::string(separator)) + item;
  }
  return out;
}

// The model's answer as the text of an assistant message, so a repair request shows it what it
// said (oe.llm/1 messages carry text only).
std::string describeAnswer(const Json& answer) {
  std::vector<std::string> parts;
  if (auto text = answer.find("text");
      text != answer.end() && text->is_string() &&
      text->get_ref<const std::string&>().find_first_not_of(" \t\r\n") != std::string::npos) {
    parts.push_back(text->get<std::string>());
  }
  if (auto calls = answer.find("tool_calls"); calls != answer.end() && calls->is_array()) {
    for (const auto& tool_call : *calls) {
      const std::string name = tool_call.value("name", std::string("?"));
      const Json input = tool_call.value("input", Json());
      if (input.is_object() && input.size() == 1 && input.contains("_raw") &&
          input["_raw"].is_string()) {
        parts.push_back("[called " + name + " with arguments that are not valid JSON: " +
                        input["_raw"].get<std::string>() + "]");
      } else {
        parts.push_back("[called " + name + " with " +
                        input.dump(-1, ' ', false, Json::error_handler_t::replace) + "]");
      }
    }
  }
  return parts.empty() ? std::string("(no answer)") : joined(parts, "\n");
}

// What one answer means in structured mode.
struct Verdict {
  std::optional<Json> delta;  // set when the answer is usable
  std::string problem;        // short, for node.activity
  std::string failure;        // the node's error if no repair is left (upstream's wording)
  std::string repair_prompt;  // the user message that asks for a corrected call
};

Verdict judge(Json& answer, const LlmNodeOptions& options) {
  Verdict verdict;
  Json* input = nullptr;
  if (auto calls = answer.find("tool_calls"); calls != answer.end() && calls->is_array()) {
    for (auto& tool_call : *calls) {
      if (tool_call.is_object() && tool_call.value("name", std::string()) == kToolName) {
        input = &tool_call["input"];
        break;
      }
    }
  }
  if (input == nullptr) {
    verdict.problem = "no structured_output tool call";
    verdict.failure = options.who + " expected a structured_output tool call but got none";
    verdict.repair_prompt =
        "You did not call the structured_output tool. Call structured_output exactly once, with "
        "an object that matches its input schema, to give your result.";
    return verdict;
  }
  std::vector<std::string> issues;
  if (const std::string* raw = rawArguments(*input, *options.schema)) {
    issues.push_back("(root): the arguments are not valid JSON: " + preview(*raw));
  } else {
    normaliseNumbers(*input);
    issues = options.schema->check(nlohmann::json(*input));
    if (issues.empty() && !input->is_object()) {
      issues.emplace_back("(root): must be object");  // it becomes the node's state delta
    }
  }
  if (issues.empty()) {
    verdict.delta = std::move(*input);
    return verdict;
  }
  verdict.problem = "structured output failed schema (" + std::to_string(issues.size()) +
                    (issues.size() == 1 ? " problem)" : " problems)");
  verdict.failure = options.who + " structured output failed schema: " + joined(issues, ", ");
  verdict.repair_prompt = "Your structured_output call does not match its input schema:\n- " +
                          joined(issues, "\n- ") +
                          "\nCall structured_output again with a corrected object that matches "
                          "the schema.";
  return verdict;
}

struct Usage {
  bool seen = false;
  int64_t in = 0;
  int64_t out = 0;

  void add(const Json& answer) {
    auto usage = answer.find("usage");
    if (usage == answer.end() || !usage->is_object()) {
      return;
    }
    seen = true;
    if (auto n = usage->find("input_tokens"); n != usage->end() && n->is_number()) {
      in += n->get<int64_t>();
    }
    if (auto n = usage->find("output_tokens"); n != usage->end() && n->is_number()) {
      out += n->get<int64_t>();
    }
  }
};

Expected<Json> complete(const LlmServices& services, const Json& request, std::string_view who) {
  const sdk::LlmReply reply =
      services.llm.complete(request.dump(-1, ' ', false, Json::error_handler_t::replace));
  if (!reply.ok()) {
    std::string message(reply.hostError());
    if (message.empty()) {
      message = std::string(who) + ": the LLM call failed (status " +
                std::to_string(reply.status()) + ")";
    }
    return fail(reply.status(), std::move(message));
  }
  Json answer = Json::parse(reply.response(), nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) {
    return fail(OE_INTERNAL, std::string(who) +
                                 ": the host's LLM service answered with something that is not "
                                 "a JSON object: " +
                                 preview(std::string(reply.response())));
  }
  return answer;
}

}  // namespace

Expected<LlmServices> findServices(const sdk::Call& call, std::string_view who) {
  LlmServices services{call.llm(), call.prompt()};
  if (!services.llm) {
    return fail(OE_FAILED_PRECONDITION, missingService(who, OE_EXT_LLM, "LLM completion"));
  }
  if (!services.prompt || !services.prompt.offersValuesJson()) {
    return fail(OE_FAILED_PRECONDITION, missingService(who, OE_EXT_PROMPT, "prompt rendering"));
  }
  return services;
}

Expected<std::string> renderPrompt(const LlmServices& services, std::string_view template_text,
                                   std::string_view who) {
  auto text = services.prompt.render(template_text);
  if (!text) {
    const oe_status status = text.failure().status;
    return fail(status, std::string(who) + ": the host could not render the prompt (status " +
                            std::to_string(status) + ")");
  }
  return std::move(text).value();
}

Expected<std::string> valuesJson(const LlmServices& services, uint32_t indent,
                                 std::string_view who) {
  auto values = services.prompt.valuesJson(indent);
  if (!values) {
    const oe_status status = values.failure().status;
    return fail(status, std::string(who) +
                            ": the host could not serialise the node's inputs "
                            "(status " +
                            std::to_string(status) + ")");
  }
  return std::move(values).value();
}

Expected<std::string> ask(const LlmServices& services, const sdk::Call& call,
                          const LlmNodeOptions& options, const AskSpec& spec) {
  const bool structured = options.schema != nullptr;
  if (!structured && options.writes.size() != 1) {
    return fail(OE_INTERNAL, options.who + ": text mode needs exactly one writes field");
  }
  Json request = Json::object();
  if (options.model) {
    request["model"] = *options.model;  // absent: the host picks the run's default model
  }
  if (spec.system && !spec.system->empty()) {
    request["system"] = *spec.system;
  }
  request["max_tokens"] = options.max_tokens;
  request["messages"] = Json::array({Json{{"role", "user"}, {"content", spec.user}}});
  if (structured) {
    request["tools"] = Json::array({Json{{"name", kToolName},
                                         {"description", kToolDescription},
                                         {"input_schema", options.schema_json}}});
  }

  Usage usage;
  Json delta;
  activity(call, spec.calling_activity);
  for (uint32_t repair = 0;; ++repair) {
    auto answer = complete(services, request, options.who);
    if (!answer) {
      return std::move(answer).failure();
    }
    usage.add(*answer);
    if (!structured) {
      activity(call, "parsing text output");
      auto text = answer->find("text");
      delta = Json{
          {options.writes.front(), text != answer->end() && text->is_string() ? *text : Json("")}};
      break;
    }
    activity(call, "validating structured output");
    Verdict verdict = judge(*answer, options);
    if (verdict.delta) {
      delta = std::move(*verdict.delta);
      break;
    }
    if (repair >= options.repair_attempts) {
      return fail(OE_INVALID_ARGUMENT, std::move(verdict.failure));
    }
    if (call.cancelled()) {
      const std::string reason = " was cancelled before repairing its structured output (";
      return fail(OE_CANCELLED, options.who + reason + verdict.problem + ")");
    }
    Json& messages = request["messages"];
    messages.push_back(Json{{"role", "assistant"}, {"content", describeAnswer(*answer)}});
    messages.push_back(Json{{"role", "user"}, {"content", std::move(verdict.repair_prompt)}});
    activity(call, verdict.problem + "; asking " + options.modelLabel() +
                       " to correct it (repair " + std::to_string(repair + 1) + " of " +
                       std::to_string(options.repair_attempts) + ")");
  }

  Json response{{"state_delta", std::move(delta)}};
  if (usage.seen) {
    response["metrics"] = Json{{"tokens_in", usage.in}, {"tokens_out", usage.out}};
  }
  return response.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace oe::llmkit
