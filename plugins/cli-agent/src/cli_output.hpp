// What a coding CLI prints, read as pure functions (unit-tested and fuzzed): upstream's JSON
// candidate extraction (Claude's result envelope, fenced blocks) and parseOutput, Claude's
// result envelope and stream-json events, a line splitter for streamed output, and the
// recognition of rate-limit and overload failures.
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
  bool json = false;                            // output_format: json
  std::vector<std::string> writes;              // the node's writes
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
