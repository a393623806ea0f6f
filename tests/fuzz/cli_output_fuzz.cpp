// libFuzzer target: what a coding CLI prints, read as the cli-agent plugin reads it: upstream's
// JSON candidate extraction and parseOutput, Claude's result envelope and stream-json lines,
// Codex's --json and Gemini's stream-json lines and the readers that build an answer from them,
// the line splitter under any chunking, the failure classifier and the UTF-8-safe cut.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cli_output.hpp"

namespace {

void require(bool condition, const char* what, std::string_view input) {
  if (!condition) {
    std::fprintf(stderr, "cli_output_fuzz: %s for input %.*s\n", what,
                 static_cast<int>(input.size()), input.data());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ca = oe::cliagent;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  (void)ca::extractJsonCandidate(input);
  ca::OutputSpec json_spec{true, {}, nullptr, "n"};
  auto delta = ca::parseOutput(input, json_spec);
  require(!delta.ok() || delta.value().is_object(), "a JSON delta that is not an object", input);
  ca::OutputSpec text_spec{false, {"out"}, nullptr, "n"};
  auto text = ca::parseOutput(input, text_spec);
  require(text.ok() && text.value()["out"] == std::string(input), "text mode changed stdout",
          input);

  auto envelope = ca::parseResultEnvelope(input);
  (void)ca::classifyFailure(1, input, input, envelope ? &*envelope : nullptr);

  // The same bytes split into lines whole and in chunks of a size the input picks: the lines
  // must not depend on how reads cut the stream.
  const size_t chunk = size == 0 ? 1 : 1 + data[0] % 7;
  ca::LineSplitter whole(64);
  ca::LineSplitter pieces(64);
  auto all = whole.feed(input);
  std::vector<std::string> chunked;
  for (size_t at = 0; at < input.size(); at += chunk) {
    auto got = pieces.feed(input.substr(at, chunk));
    chunked.insert(chunked.end(), got.begin(), got.end());
  }
  require(all == chunked, "lines depend on chunking", input);
  require(whole.finish() == pieces.finish(), "last line depends on chunking", input);
  require(whole.dropped() == pieces.dropped(), "drops depend on chunking", input);
  ca::StreamReader readers[] = {ca::StreamReader(ca::StreamFormat::kClaude),
                                ca::StreamReader(ca::StreamFormat::kCodex),
                                ca::StreamReader(ca::StreamFormat::kGemini)};
  for (const std::string& line : all) {
    (void)ca::parseStreamLine(line);
    (void)ca::parseCodexLine(line);
    (void)ca::parseGeminiLine(line);
    for (ca::StreamReader& reader : readers) {
      for (const std::string& activity : reader.line(line)) {
        require(!activity.empty(), "an empty activity", input);
      }
    }
  }
  for (const ca::StreamReader& reader : readers) {
    if (auto result = reader.result()) {
      require(!result->is_error || result->result.has_value(), "a failure without a reason", input);
    }
  }

  const size_t cut = size == 0 ? 0 : data[size - 1] % (size + 1);
  require(ca::utf8Prefix(input, cut).size() <= cut, "utf8Prefix grew", input);
  return 0;
}
