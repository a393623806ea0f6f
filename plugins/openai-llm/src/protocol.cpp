// Request bodies and response mapping for OpenAI chat completions and Anthropic Messages
// (reference section 7: the upstream clients' exact mapping).
#include "protocol.hpp"

#include <utility>

namespace oe::llm {
namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view skipSpace(std::string_view text) {
  while (!text.empty() && isSpace(text.front())) {
    text.remove_prefix(1);
  }
  return text;
}

// The string member `key` of `object`, or "" (a provider's answer is not trusted to be shaped
// right; nlohmann's value() would throw on a member of another type).
std::string textOf(const Json& object, const char* key) {
  if (object.is_object()) {
    if (auto it = object.find(key); it != object.end() && it->is_string()) {
      return it->get<std::string>();
    }
  }
  return {};
}

Json usageOf(const Json& usage, const char* in_key, const char* out_key) {
  auto number = [&](const char* key) {
    auto it = usage.find(key);
    return it != usage.end() && it->is_number_integer() ? it->get<long long>() : 0LL;
  };
  return Json{{"input_tokens", number(in_key)}, {"output_tokens", number(out_key)}};
}

std::string modelOf(const Json& doc, const LlmRequest& request) {
  auto it = doc.find("model");
  return it != doc.end() && it->is_string() ? it->get<std::string>() : request.model;
}

}  // namespace

std::string excerpt(std::string_view text, size_t max) {
  if (text.size() <= max) {
    return std::string(text);
  }
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) {
    --cut;  // do not split a UTF-8 sequence
  }
  return std::string(text.substr(0, cut)) + "...";
}

Expected<LlmRequest> parseLlmRequest(std::string_view request_json,
                                     std::string_view default_model) {
  const Json doc = Json::parse(request_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return fail(OE_INVALID_ARGUMENT, "LLM request is not a JSON object");
  }
  LlmRequest request;
  request.model = std::string(default_model);
  if (auto it = doc.find("model"); it != doc.end() && !it->is_null()) {
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
      return fail(OE_INVALID_ARGUMENT, "LLM request: \"model\" must be a non-empty string");
    }
    request.model = it->get<std::string>();
  }
  if (auto it = doc.find("system"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) {
      return fail(OE_INVALID_ARGUMENT, "LLM request: \"system\" must be a string");
    }
    request.system = it->get<std::string>();
  }
  auto messages = doc.find("messages");
  if (messages == doc.end() || !messages->is_array() || messages->empty()) {
    return fail(OE_INVALID_ARGUMENT, "LLM request: \"messages\" must be a non-empty array");
  }
  for (const Json& message : *messages) {
    if (!message.is_object() || !message.contains("content") || !message.contains("role") ||
        !message["role"].is_string()) {
      return fail(OE_INVALID_ARGUMENT,
                  "LLM request: every message needs a \"role\" and a \"content\", got " +
                      excerpt(message.dump(), 200));
    }
  }
  request.messages = *messages;
  if (auto it = doc.find("tools"); it != doc.end() && !it->is_null()) {
    if (!it->is_array()) {
      return fail(OE_INVALID_ARGUMENT, "LLM request: \"tools\" must be an array");
    }
    for (const Json& tool : *it) {
      if (!tool.is_object() || !tool.contains("name") || !tool["name"].is_string()) {
        return fail(OE_INVALID_ARGUMENT, "LLM request: every tool needs a string \"name\", got " +
                                             excerpt(tool.dump(), 200));
      }
    }
    request.tools = *it;
  }
  if (auto it = doc.find("max_tokens"); it != doc.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > 10000000) {
      return fail(OE_INVALID_ARGUMENT, "LLM request: \"max_tokens\" must be a positive integer");
    }
    request.max_tokens = it->get<int>();
  }
  return request;
}

std::string openAiBody(const LlmRequest& request) {
  Json messages = Json::array();
  if (request.system) {
    messages.push_back({{"role", "system"}, {"content", *request.system}});
  }
  for (const Json& message : request.messages) {
    messages.push_back(message);
  }
  Json body{{"model", request.model},
            {"messages", std::move(messages)},
            {"max_tokens", request.max_tokens}};
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const Json& tool : request.tools) {
      Json function{{"name", tool["name"]}};
      if (auto it = tool.find("description"); it != tool.end()) {
        function["description"] = *it;
      }
      if (auto it = tool.find("input_schema"); it != tool.end()) {
        function["parameters"] = *it;
      }
      tools.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    body["tools"] = std::move(tools);
    if (request.tools.size() == 1) {
      body["tool_choice"] = {{"type", "function"},
                             {"function", {{"name", request.tools[0]["name"]}}}};
    } else {
      body["tool_choice"] = "required";
    }
  }
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string anthropicBody(const LlmRequest& request) {
  Json body{
      {"model", request.model}, {"max_tokens", request.max_tokens}, {"messages", request.messages}};
  if (request.system) {
    body["system"] = *request.system;
  }
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const Json& tool : request.tools) {
      Json out{{"name", tool["name"]}};
      if (auto it = tool.find("description"); it != tool.end()) {
        out["description"] = *it;
      }
      // Anthropic requires an input_schema; an object with any members is the neutral one.
      out["input_schema"] = tool.value("input_schema", Json{{"type", "object"}});
      tools.push_back(std::move(out));
    }
    body["tools"] = std::move(tools);
  }
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json parseToolArguments(std::string_view raw) {
  if (raw.empty()) {
    return Json::object();
  }
  std::string_view text = skipSpace(raw);
  constexpr std::string_view kOpen = "<think>";
  constexpr std::string_view kClose = "</think>";
  if (text.starts_with(kOpen)) {
    const size_t close = text.find(kClose);  // non-greedy: the first closing tag
    if (close != std::string_view::npos) {
      text = skipSpace(text.substr(close + kClose.size()));
    }
  }
  Json parsed = Json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    return Json{{"_raw", std::string(raw)}};
  }
  return parsed;
}

Expected<Json> openAiResult(std::string_view body, const LlmRequest& request) {
  const Json doc = Json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return fail(OE_UNKNOWN, "the response is not valid JSON: " + excerpt(body));
  }
  auto choices = doc.find("choices");
  if (choices == doc.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object()) {
    return fail(OE_UNKNOWN, "the response has no choices: " + excerpt(body));
  }
  const Json& choice = (*choices)[0];
  const Json message = choice.is_object() ? choice.value("message", Json::object()) : Json::object();
  std::string text;
  if (auto content = message.find("content"); content != message.end()) {
    if (content->is_string()) {
      text = content->get<std::string>();
    } else if (content->is_array()) {  // some compatible servers answer with content parts
      for (const Json& part : *content) {
        if (textOf(part, "type") == "text" && part.contains("text") &&
            part["text"].is_string()) {
          text += part["text"].get<std::string>();
        }
      }
    }
  }
  Json result{{"text", std::move(text)}};
  Json calls = Json::array();
  if (auto tool_calls = message.find("tool_calls");
      tool_calls != message.end() && tool_calls->is_array()) {
    for (const Json& call : *tool_calls) {
      if (!call.is_object() || (call.contains("type") && textOf(call, "type") != "function")) {
        continue;
      }
      auto function = call.find("function");
      if (function == call.end() || !function->is_object() || !function->contains("name") ||
          !(*function)["name"].is_string() ||
          (*function)["name"].get_ref<const std::string&>().empty()) {
        continue;
      }
      Json input = Json::object();
      if (auto args = function->find("arguments"); args != function->end()) {
        if (args->is_string()) {
          input = parseToolArguments(args->get_ref<const std::string&>());
        } else if (!args->is_null()) {
          input = *args;  // a server that already decoded them
        }
      }
      calls.push_back({{"name", (*function)["name"]}, {"input", std::move(input)}});
    }
  }
  if (!calls.empty()) {
    result["tool_calls"] = std::move(calls);
  }
  if (auto usage = doc.find("usage"); usage != doc.end() && usage->is_object()) {
    result["usage"] = usageOf(*usage, "prompt_tokens", "completion_tokens");
  }
  if (auto finish = choice.find("finish_reason"); finish != choice.end() && finish->is_string()) {
    result["stop_reason"] = *finish;
  }
  result["model"] = modelOf(doc, request);
  return result;
}

Expected<Json> anthropicResult(std::string_view body, const LlmRequest& request) {
  const Json doc = Json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return fail(OE_UNKNOWN, "the response is not valid JSON: " + excerpt(body));
  }
  auto content = doc.find("content");
  if (content == doc.end() || !content->is_array()) {
    return fail(OE_UNKNOWN, "the response has no content blocks: " + excerpt(body));
  }
  std::string text;
  Json calls = Json::array();
  for (const Json& block : *content) {
    if (!block.is_object()) {
      continue;
    }
    const std::string type = textOf(block, "type");
    if (type == "text" && block.contains("text") && block["text"].is_string()) {
      text += block["text"].get<std::string>();
    } else if (type == "tool_use" && block.contains("name") && block["name"].is_string()) {
      calls.push_back({{"name", block["name"]}, {"input", block.value("input", Json::object())}});
    }
  }
  Json result{{"text", std::move(text)}};
  if (!calls.empty()) {
    result["tool_calls"] = std::move(calls);
  }
  if (auto usage = doc.find("usage"); usage != doc.end() && usage->is_object()) {
    result["usage"] = usageOf(*usage, "input_tokens", "output_tokens");
  }
  if (auto stop = doc.find("stop_reason"); stop != doc.end() && stop->is_string()) {
    result["stop_reason"] = *stop;
  }
  result["model"] = modelOf(doc, request);
  return result;
}

}  // namespace oe::llm
