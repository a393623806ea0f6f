// What a coding CLI prints, read as pure functions (unit-tested and fuzzed): upstream's JSON
// candidate extraction (Claude's result envelope, fenced blocks) and parseOutput, Claude's
// result envelope and stream-json events, Codex's --json and Gemini's stream-json events, a
// line splitter for streamed output, and the recognition of rate-limit and overload failures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <oe/cpp/expected.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oe::llmkit {
class OutputSchema;
}

namespace oe::cliagent {

using Json = nlohmann::ordered_json;
using sdk::Expected;
using sdk::fail;

// Upstream's extractJsonCandidate: the trimmed text; if it parses as an object whose `result` is
// a string (Claude's envelope), that string, recursively; else the inside of the first ```json or
// ``` fence when not empty; else the trimmed text.
std::string extractJsonCandidate(std::string_view raw);

// How the node maps the CLI's answer into its state delta.
struct OutputSpec {
  bool json = false;                             // output_format: json
  std::vector<std::string> writes;               // the node's writes
  const llmkit::OutputSchema* schema = nullptr;  // the node's schema, when it has one
  std::string node_id;
};

// Upstream's parseOutput: text → {} / {field: stdout} (raw, untrimmed); json → the candidate
// parsed, checked against the schema, and required to be a plain object. Failures carry
// upstream's messages with OE_INVALID_ARGUMENT.
Expected<Json> parseOutput(std::string_view stdout_text, const OutputSpec& spec);

// Claude Code's result object: the whole stdout with --output-format json, the last event with
// stream-json. `subtype` is not trusted (an API error still says "success"): is_error is.
struct ResultEnvelope {
  bool is_error = false;
  std::optional<std::string> result;
  std::string subtype;
  std::string terminal_reason;
  std::optional<int64_t> api_error_status;
  bool has_usage = false;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::optional<double> cost_usd;
  std::string model;  // the first modelUsage key, when there is one
};

// The envelope in `value` when it is an object with "type":"result".
std::optional<ResultEnvelope> readResultEnvelope(const Json& value);
// The envelope when the whole (trimmed) text is one.
std::optional<ResultEnvelope> parseResultEnvelope(std::string_view text);

// One line of Claude Code's stream-json: what it says for node.activity (tool uses, messages,
// the session start) and, on the last line, the result.
struct StreamEvent {
  std::vector<std::string> activities;
  std::optional<ResultEnvelope> result;
};
StreamEvent parseStreamLine(std::string_view line);

// One line of `codex exec --json` (JSONL: thread.started, turn.started, item.started/updated/
// completed with agent_message, reasoning, command_execution, file_change, mcp_tool_call,
// web_search, todo_list or error items, turn.completed with usage, turn.failed, error).
struct CodexEvent {
  std::vector<std::string> activities;
  std::string item_id;                 // the item an item.* event is about, when it has an id
  std::optional<std::string> message;  // a completed agent_message's text
  bool turn_completed = false;         // turn.completed: `usage` holds its usage
  std::optional<std::string> failed;   // turn.failed: its error message
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};
CodexEvent parseCodexLine(std::string_view line);

// One line of `gemini --output-format stream-json` (init, message with role and content, a
// chunk when delta, tool_use, tool_result, error, result with status and stats).
struct GeminiEvent {
  std::vector<std::string> activities;
  std::optional<std::string> assistant_text;  // a chunk (or all) of the assistant's answer
  std::string model;                          // from init
  bool result = false;                        // the result event: fields below
  bool failed = false;
  std::string error;
  bool has_usage = false;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};
GeminiEvent parseGeminiLine(std::string_view line);

// Which JSON event stream a reader reads: Claude's stream-json, Codex's --json JSONL or
// Gemini's stream-json.
enum class StreamFormat { kClaude, kCodex, kGemini };

// Reads a CLI's event stream line by line into live activities, and at the end into the
// answer as one envelope: Claude's result event as it is; Codex's last agent message with the
// usage of its turn.completed events (is_error with the message of a turn.failed); Gemini's
// assistant text with the result event's stats (is_error when its status is not success). No
// result: the stream ended before the CLI said it was done.
class StreamReader {
 public:
  explicit StreamReader(StreamFormat format = StreamFormat::kClaude) : format_(format) {}

  std::vector<std::string> line(std::string_view line);
  [[nodiscard]] std::optional<ResultEnvelope> result() const;

 private:
  std::vector<std::string> codexLine(std::string_view line);
  std::vector<std::string> geminiLine(std::string_view line);
  // Gemini streams the answer in chunks: one activity per run of chunks, when it ends.
  void flushGeminiMessage(std::vector<std::string>& activities);

  StreamFormat format_;
  std::optional<ResultEnvelope> result_;
  // Codex and Gemini: what the envelope is built from.
  std::vector<std::string> reported_items_;  // codex items already shown as activity
  std::optional<std::string> last_message_;
  bool done_ = false;
  bool failed_ = false;
  std::string error_;
  bool has_usage_ = false;
  int64_t input_tokens_ = 0;
  int64_t output_tokens_ = 0;
  std::string model_;
  std::string answer_;   // gemini: the assistant text so far
  std::string pending_;  // gemini: the run of chunks not shown yet
};

// Splits streamed bytes into lines ('\n', a trailing '\r' dropped), however the reads cut them.
// A line longer than `max_line` bytes is dropped whole (counted in dropped()).
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line) : max_line_(max_line) {}

  // Appends `chunk`; returns the lines it completed.
  std::vector<std::string> feed(std::string_view chunk);
  // The unterminated last line, if any (at the end of the stream).
  std::optional<std::string> finish();
  [[nodiscard]] size_t dropped() const noexcept { return dropped_; }

 private:
  size_t max_line_;
  std::string pending_;
  bool skipping_ = false;  // inside a line that is being dropped
  size_t dropped_ = 0;
};

// What kind of failure a CLI run was, from its exit code, what it printed and its envelope.
enum class FailureKind { kOther, kRateLimited, kOverloaded };
FailureKind classifyFailure(int exit_code, std::string_view stdout_text,
                            std::string_view stderr_text, const ResultEnvelope* envelope);

// `text` cut to at most `max_bytes` without splitting a UTF-8 sequence.
std::string utf8Prefix(std::string_view text, size_t max_bytes);

}  // namespace oe::cliagent
