// The CLI output readers: see cli_output.hpp. Wording follows upstream's parse.ts so messages
// read the same in both runtimes.
#include "cli_output.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include "llm_kit/output_schema.hpp"

namespace oe::cliagent {
namespace {

constexpr std::string_view kSpace = " \t\n\r\f\v";
constexpr size_t kActivityText = 120;  // how much of a message or tool input an activity shows

std::string_view trim(std::string_view text) {
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) {
    return {};
  }
  const size_t last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

std::string tagOf(const OutputSpec& spec) {
  return spec.node_id.empty() ? std::string() : " for node \"" + spec.node_id + "\"";
}

// What JavaScript's `typeof` says of a parsed value (upstream's plain-object message).
const char* typeOf(const Json& value) {
  if (value.is_number()) {
    return "number";
  }
  if (value.is_string()) {
    return "string";
  }
  if (value.is_boolean()) {
    return "boolean";
  }
  return "object";  // null and arrays too, as in JavaScript
}

std::string joined(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) {
      out += separator;
    }
    out += item;
  }
  return out;
}

std::string oneLine(std::string_view text) {
  std::string out = utf8Prefix(trim(text), kActivityText);
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  if (out.size() < trim(text).size()) {
    out += "...";
  }
  return out;
}

// The detail a tool use shows after its name: the command, file or pattern it works on.
std::string toolDetail(const Json& input) {
  if (!input.is_object()) {
    return {};
  }
  for (const char* key :
       {"command", "file_path", "path", "pattern", "url", "query", "description"}) {
    if (auto it = input.find(key); it != input.end() && it->is_string()) {
      return oneLine(it->get_ref<const std::string&>());
    }
  }
  return {};
}

std::optional<int64_t> integerAt(const Json& object, const char* key) {
  if (auto it = object.find(key); it != object.end() && it->is_number()) {
    return it->is_number_float() ? static_cast<int64_t>(it->get<double>()) : it->get<int64_t>();
  }
  return std::nullopt;
}

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// True when `number` appears in `text` as a number of its own (not inside a longer one).
bool hasNumber(std::string_view text, std::string_view number) {
  for (size_t at = text.find(number); at != std::string_view::npos;
       at = text.find(number, at + 1)) {
    const bool left = at == 0 || std::isdigit(static_cast<unsigned char>(text[at - 1])) == 0;
    const size_t end = at + number.size();
    const bool right =
        end >= text.size() || std::isdigit(static_cast<unsigned char>(text[end])) == 0;
    if (left && right) {
      return true;
    }
  }
  return false;
}

bool containsAny(std::string_view text, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return text.find(n) != std::string_view::npos; });
}

}  // namespace

std::string utf8Prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return std::string(text);
  }
  size_t end = max_bytes;
  // Back off continuation bytes (10xxxxxx) so the cut falls before a sequence's lead byte.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) {
    --end;
  }
  return std::string(text.substr(0, end));
}

std::string extractJsonCandidate(std::string_view raw) {
  const std::string_view trimmed = trim(raw);
  const Json envelope = Json::parse(trimmed, nullptr, /*allow_exceptions=*/false);
  if (envelope.is_object()) {
    if (auto result = envelope.find("result"); result != envelope.end() && result->is_string()) {
      return extractJsonCandidate(result->get_ref<const std::string&>());
    }
  }
  // /```(?:json)?\s*([\s\S]*?)\s*```/: the first fence; an empty inside does not count.
  if (const size_t open = trimmed.find("```"); open != std::string_view::npos) {
    size_t inside = open + 3;
    if (trimmed.substr(inside, 4) == "json") {
      inside += 4;
    }
    if (const size_t close = trimmed.find("```", inside); close != std::string_view::npos) {
      const std::string_view content = trim(trimmed.substr(inside, close - inside));
      if (!content.empty()) {
        return std::string(content);
      }
    }
  }
  return std::string(trimmed);
}

Expected<Json> parseOutput(std::string_view stdout_text, const OutputSpec& spec) {
  const std::string tag = tagOf(spec);
  if (!spec.json) {
    if (spec.writes.empty()) {
      return Json::object();
    }
    if (spec.writes.size() > 1) {
      return fail(OE_INVALID_ARGUMENT,
                  "cli-agent" + tag + ": text mode requires zero or one writes field; got " +
                      std::to_string(spec.writes.size()) +
                      ". Use output_format: json with a schema for multi-field output.");
    }
    return Json{{spec.writes.front(), std::string(stdout_text)}};
  }

  const std::string candidate = extractJsonCandidate(stdout_text);
  Json parsed;
  try {
    parsed = Json::parse(candidate);
  } catch (const Json::exception& error) {
    return fail(OE_INVALID_ARGUMENT,
                "cli-agent" + tag +
                    " was configured with `output_format: json` but stdout is not valid JSON (" +
                    error.what() + "). First 200 chars: '" + utf8Prefix(stdout_text, 200) +
                    "'. Common causes: the prompt didn't include a JSON contract; the CLI wrapped "
                    "JSON in markdown fences (add 'output JSON only, no markdown' to the "
                    "prompt).");
  }
  if (spec.schema != nullptr) {
    const std::vector<std::string> problems = spec.schema->check(nlohmann::json(parsed));
    if (!problems.empty()) {
      return fail(OE_INVALID_ARGUMENT,
                  "cli-agent" + tag +
                      ": parsed JSON output failed schema validation: " + joined(problems, ", ") +
                      ". Check the `schema:` field on the node in experience.yaml and ensure the "
                      "prompt instructs the model to produce JSON that matches that schema.");
    }
  }
  if (!parsed.is_object()) {
    return fail(OE_INVALID_ARGUMENT,
                "cli-agent" + tag + ": JSON output must be a plain object (got " + typeOf(parsed) +
                    "); the dispatcher needs key-value pairs to map into "
                    "state_delta.");
  }
  return parsed;
}

std::optional<ResultEnvelope> readResultEnvelope(const Json& value) {
  if (!value.is_object() || value.value("type", Json()) != "result") {
    return std::nullopt;
  }
  ResultEnvelope envelope;
  if (auto it = value.find("is_error"); it != value.end() && it->is_boolean()) {
    envelope.is_error = it->get<bool>();
  }
  if (auto it = value.find("result"); it != value.end() && it->is_string()) {
    envelope.result = it->get<std::string>();
  }
  if (auto it = value.find("subtype"); it != value.end() && it->is_string()) {
    envelope.subtype = it->get<std::string>();
  }
  if (auto it = value.find("terminal_reason"); it != value.end() && it->is_string()) {
    envelope.terminal_reason = it->get<std::string>();
  }
  envelope.api_error_status = integerAt(value, "api_error_status");
  if (auto usage = value.find("usage"); usage != value.end() && usage->is_object()) {
    envelope.has_usage = true;
    envelope.input_tokens = integerAt(*usage, "input_tokens").value_or(0);
    envelope.output_tokens = integerAt(*usage, "output_tokens").value_or(0);
  }
  if (auto it = value.find("total_cost_usd"); it != value.end() && it->is_number()) {
    envelope.cost_usd = it->get<double>();
  }
  if (auto models = value.find("modelUsage");
      models != value.end() && models->is_object() && !models->empty()) {
    envelope.model = models->begin().key();
  }
  return envelope;
}

std::optional<ResultEnvelope> parseResultEnvelope(std::string_view text) {
  return readResultEnvelope(Json::parse(trim(text), nullptr, /*allow_exceptions=*/false));
}

StreamEvent parseStreamLine(std::string_view line) {
  StreamEvent event;
  const Json value = Json::parse(trim(line), nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) {
    return event;
  }
  const Json type = value.value("type", Json());
  if (type == "result") {
    event.result = readResultEnvelope(value);
    return event;
  }
  if (type == "system" && value.value("subtype", Json()) == "init") {
    const Json model = value.value("model", Json());
    event.activities.push_back(model.is_string()
                                   ? "session started (model " + model.get<std::string>() + ")"
                                   : std::string("session started"));
    return event;
  }
  if (type != "assistant") {
    return event;  // user events carry tool results: the tool use was already reported
  }
  auto message = value.find("message");
  if (message == value.end() || !message->is_object()) {
    return event;
  }
  auto content = message->find("content");
  if (content == message->end() || !content->is_array()) {
    return event;
  }
  for (const Json& block : *content) {
    if (!block.is_object()) {
      continue;
    }
    const Json block_type = block.value("type", Json());
    if (block_type == "tool_use") {
      const Json name = block.value("name", Json());
      std::string text = "tool: " + (name.is_string() ? name.get<std::string>() : "?");
      if (auto input = block.find("input"); input != block.end()) {
        if (const std::string detail = toolDetail(*input); !detail.empty()) {
          text += " " + detail;
        }
      }
      event.activities.push_back(std::move(text));
    } else if (block_type == "text") {
      if (auto text = block.find("text"); text != block.end() && text->is_string() &&
                                          !trim(text->get_ref<const std::string&>()).empty()) {
        event.activities.push_back("message: " + oneLine(text->get_ref<const std::string&>()));
      }
    }
  }
  return event;
}

namespace {

std::string stringAt(const Json& object, const char* key) {
  if (auto it = object.find(key); it != object.end() && it->is_string()) {
    return it->get<std::string>();
  }
  return {};
}

// "tool: <name>[ <detail>]" as Claude's tool uses read.
std::string toolActivity(std::string_view name, std::string_view detail) {
  std::string text = "tool: " + std::string(name.empty() ? "?" : name);
  if (!detail.empty()) {
    text += " ";
    text += detail;
  }
  return text;
}

// What a Codex item shows as activity; empty for items that show nothing (reasoning, a
// message before it is complete).
std::string codexItemActivity(const Json& item, bool completed) {
  const std::string type = stringAt(item, "type");
  if (type == "command_execution") {
    return toolActivity("shell", oneLine(stringAt(item, "command")));
  }
  if (type == "file_change") {
    std::string paths;
    if (auto changes = item.find("changes"); changes != item.end() && changes->is_array()) {
      for (const Json& change : *changes) {
        if (change.is_object()) {
          const std::string path = stringAt(change, "path");
          if (!path.empty()) {
            paths += (paths.empty() ? "" : ", ") + path;
          }
        }
      }
    }
    return toolActivity("edit", oneLine(paths));
  }
  if (type == "mcp_tool_call") {
    const std::string server = stringAt(item, "server");
    const std::string tool = stringAt(item, "tool");
    return toolActivity(server.empty() ? tool : server + "." + tool, "");
  }
  if (type == "web_search") {
    return toolActivity("web_search", oneLine(stringAt(item, "query")));
  }
  if (type == "todo_list") {
    auto items = item.find("items");
    const size_t count = items != item.end() && items->is_array() ? items->size() : 0;
    return "plan: " + std::to_string(count) + (count == 1 ? " step" : " steps");
  }
  if (completed && type == "agent_message") {
    const std::string text = stringAt(item, "text");
    return trim(text).empty() ? std::string() : "message: " + oneLine(text);
  }
  if (completed && type == "error") {
    // Codex reports warnings this way ("model metadata not found"); the turn goes on.
    return "warning: " + oneLine(stringAt(item, "message"));
  }
  return {};
}

}  // namespace

CodexEvent parseCodexLine(std::string_view line) {
  CodexEvent event;
  const Json value = Json::parse(trim(line), nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) {
    return event;
  }
  const std::string type = stringAt(value, "type");
  if (type == "thread.started") {
    event.activities.emplace_back("session started");
  } else if (type == "item.started" || type == "item.updated" || type == "item.completed") {
    auto item = value.find("item");
    if (item == value.end() || !item->is_object()) {
      return event;
    }
    event.item_id = stringAt(*item, "id");
    const bool completed = type == "item.completed";
    if (completed && stringAt(*item, "type") == "agent_message") {
      if (auto text = item->find("text"); text != item->end() && text->is_string()) {
        event.message = text->get<std::string>();
      }
    }
    if (std::string text = codexItemActivity(*item, completed); !text.empty()) {
      event.activities.push_back(std::move(text));
    }
  } else if (type == "turn.completed") {
    event.turn_completed = true;
    if (auto usage = value.find("usage"); usage != value.end() && usage->is_object()) {
      event.input_tokens = integerAt(*usage, "input_tokens").value_or(0);
      event.output_tokens = integerAt(*usage, "output_tokens").value_or(0);
    }
  } else if (type == "turn.failed") {
    std::string message;
    if (auto error = value.find("error"); error != value.end() && error->is_object()) {
      message = stringAt(*error, "message");
    }
    event.failed = message.empty() ? std::string("the turn failed") : message;
  } else if (type == "error") {
    // Retries ("Reconnecting... 1/5 (...)") and fatal errors alike; turn.failed decides.
    event.activities.push_back("error: " + oneLine(stringAt(value, "message")));
  }
  return event;
}

GeminiEvent parseGeminiLine(std::string_view line) {
  GeminiEvent event;
  const Json value = Json::parse(trim(line), nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) {
    return event;
  }
  const std::string type = stringAt(value, "type");
  if (type == "init") {
    event.model = stringAt(value, "model");
    event.activities.push_back(event.model.empty() ? std::string("session started")
                                                   : "session started (model " + event.model + ")");
  } else if (type == "message") {
    if (stringAt(value, "role") == "assistant") {
      if (auto content = value.find("content"); content != value.end() && content->is_string()) {
        event.assistant_text = content->get<std::string>();
      }
    }
  } else if (type == "tool_use") {
    std::string name = stringAt(value, "tool_name");
    if (name.empty()) {
      name = stringAt(value, "name");
    }
    auto parameters = value.find("parameters");
    if (parameters == value.end()) {
      parameters = value.find("args");
    }
    event.activities.push_back(
        toolActivity(name, parameters == value.end() ? std::string() : toolDetail(*parameters)));
  } else if (type == "error") {
    event.activities.push_back("warning: " + oneLine(stringAt(value, "message")));
  } else if (type == "result") {
    event.result = true;
    const std::string status = stringAt(value, "status");
    event.failed = !status.empty() && status != "success";
    if (auto error = value.find("error"); error != value.end()) {
      event.failed = true;
      event.error = error->is_object() ? stringAt(*error, "message") : std::string();
    }
    if (auto stats = value.find("stats"); stats != value.end() && stats->is_object()) {
      event.has_usage = true;
      event.input_tokens = integerAt(*stats, "input_tokens").value_or(0);
      event.output_tokens = integerAt(*stats, "output_tokens").value_or(0);
      if (auto models = stats->find("models");
          models != stats->end() && models->is_object() && !models->empty()) {
        event.model = models->begin().key();
      }
    }
  }
  return event;
}

std::vector<std::string> StreamReader::line(std::string_view line) {
  switch (format_) {
    case StreamFormat::kCodex:
      return codexLine(line);
    case StreamFormat::kGemini:
      return geminiLine(line);
    default: {
      StreamEvent event = parseStreamLine(line);
      if (event.result) {
        result_ = std::move(event.result);
      }
      return std::move(event.activities);
    }
  }
}

std::vector<std::string> StreamReader::codexLine(std::string_view line) {
  CodexEvent event = parseCodexLine(line);
  if (event.message) {
    last_message_ = std::move(event.message);
  }
  if (event.turn_completed) {
    done_ = true;
    has_usage_ = true;
    input_tokens_ += event.input_tokens;
    output_tokens_ += event.output_tokens;
  }
  if (event.failed) {
    failed_ = true;
    error_ = std::move(*event.failed);
  }
  // An item shows once, at whichever of its events comes first with something to show.
  if (!event.item_id.empty() && !event.activities.empty()) {
    if (std::find(reported_items_.begin(), reported_items_.end(), event.item_id) !=
        reported_items_.end()) {
      return {};
    }
    reported_items_.push_back(event.item_id);
  }
  return std::move(event.activities);
}

void StreamReader::flushGeminiMessage(std::vector<std::string>& activities) {
  if (!trim(pending_).empty()) {
    activities.push_back("message: " + oneLine(pending_));
  }
  pending_.clear();
}

std::vector<std::string> StreamReader::geminiLine(std::string_view line) {
  GeminiEvent event = parseGeminiLine(line);
  std::vector<std::string> activities;
  if (event.assistant_text) {
    answer_ += *event.assistant_text;
    pending_ += *event.assistant_text;
    return activities;
  }
  if (!event.activities.empty() || event.result) {
    flushGeminiMessage(activities);
  }
  if (!event.model.empty()) {
    model_ = event.model;
  }
  if (event.result) {
    done_ = true;
    failed_ = event.failed;
    error_ = event.error;
    has_usage_ = event.has_usage;
    input_tokens_ = event.input_tokens;
    output_tokens_ = event.output_tokens;
  }
  activities.insert(activities.end(), std::make_move_iterator(event.activities.begin()),
                    std::make_move_iterator(event.activities.end()));
  return activities;
}

std::optional<ResultEnvelope> StreamReader::result() const {
  if (format_ == StreamFormat::kClaude) {
    return result_;
  }
  if (!done_ && !failed_) {
    return std::nullopt;
  }
  ResultEnvelope envelope;
  envelope.is_error = failed_;
  if (failed_) {
    envelope.result = error_.empty() ? std::string("the CLI reported a failure") : error_;
  } else {
    envelope.result = format_ == StreamFormat::kCodex ? last_message_.value_or("") : answer_;
  }
  envelope.has_usage = has_usage_;
  envelope.input_tokens = input_tokens_;
  envelope.output_tokens = output_tokens_;
  envelope.model = model_;
  return envelope;
}

std::vector<std::string> LineSplitter::feed(std::string_view chunk) {
  std::vector<std::string> lines;
  while (!chunk.empty()) {
    const size_t newline = chunk.find('\n');
    const std::string_view piece = chunk.substr(0, newline);
    if (!skipping_) {
      if (pending_.size() + piece.size() > max_line_) {
        pending_.clear();
        skipping_ = true;
        ++dropped_;
      } else {
        pending_.append(piece);
      }
    }
    if (newline == std::string_view::npos) {
      break;
    }
    if (!skipping_) {
      if (!pending_.empty() && pending_.back() == '\r') {
        pending_.pop_back();
      }
      lines.push_back(std::move(pending_));
    }
    pending_.clear();
    skipping_ = false;
    chunk.remove_prefix(newline + 1);
  }
  return lines;
}

std::optional<std::string> LineSplitter::finish() {
  if (skipping_ || pending_.empty()) {
    pending_.clear();
    skipping_ = false;
    return std::nullopt;
  }
  std::string last = std::move(pending_);
  pending_.clear();
  return last;
}

FailureKind classifyFailure(int exit_code, std::string_view stdout_text,
                            std::string_view stderr_text, const ResultEnvelope* envelope) {
  if (envelope != nullptr && envelope->api_error_status) {
    const int64_t status = *envelope->api_error_status;
    if (status == 429) {
      return FailureKind::kRateLimited;
    }
    if (status == 529 || status == 500 || status == 502 || status == 503 || status == 504) {
      return FailureKind::kOverloaded;
    }
  }
  // Gemini leaks the HTTP status modulo 256 into its exit code: 429 -> 173.
  if (exit_code == 173) {
    return FailureKind::kRateLimited;
  }
  // What the CLIs print is not a contract: look at a bounded amount of both streams.
  const std::string text = lowered(std::string(stdout_text.substr(0, 64 * 1024)) + "\n" +
                                   std::string(stderr_text.substr(0, 64 * 1024)));
  if (containsAny(text, {"rate limit", "rate_limit", "ratelimit", "too many requests",
                         "resource_exhausted", "resource exhausted", "quota exceeded",
                         "exceeded your current quota", "usage limit"}) ||
      hasNumber(text, "429")) {
    return FailureKind::kRateLimited;
  }
  if (containsAny(text, {"overloaded", "service unavailable", "temporarily unavailable",
                         "server is busy"}) ||
      hasNumber(text, "529") || hasNumber(text, "503")) {
    return FailureKind::kOverloaded;
  }
  return FailureKind::kOther;
}

}  // namespace oe::cliagent
