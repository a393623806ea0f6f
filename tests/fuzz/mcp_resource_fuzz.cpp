// libFuzzer target: what an MCP server prints on stdout, read as the dataset plugin's
// mcp-resource client reads it: each line classified (noise, notification, request, response),
// the answer to a server's request, and upstream's normalisation of a resources/read result's
// contents into rows, whose text must always parse back as a JSON array.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mcp_protocol.hpp"

namespace {

void require(bool condition, const char* what, std::string_view input) {
  if (!condition) {
    std::fprintf(stderr, "mcp_resource_fuzz: %s for input %.*s\n", what,
                 static_cast<int>(input.size()), input.data());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ds = oe::dataset;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) {
      end = input.size();
    }
    const std::string_view line = input.substr(start, end - start);
    start = end + 1;

    ds::McpIncoming in = ds::parseMcpLine(line);
    switch (in.kind) {
      case ds::McpIncoming::Kind::kRequest: {
        const std::string answer = ds::mcpAnswerToServer(in);
        require(answer.find('\n') == answer.size() - 1, "an answer that is not one line", input);
        require(ds::parseMcpLine(answer).kind == ds::McpIncoming::Kind::kResponse,
                "an answer that does not read back as a response", input);
        break;
      }
      case ds::McpIncoming::Kind::kResponse:
        if (in.is_error) {
          require(in.error.starts_with("MCP error "), "an error without its prefix", input);
        } else if (in.result.is_object() && in.result.contains("contents") &&
                   in.result["contents"].is_array()) {
          const ds::OrderedJson rows = ds::mcpContentsToRows(in.result["contents"]);
          require(rows.is_array(), "rows that are not an array", input);
          const std::string text =
              rows.dump(-1, ' ', false, ds::OrderedJson::error_handler_t::replace);
          require(ds::OrderedJson::parse(text, nullptr, false).is_array(),
                  "rows whose text does not parse back", input);
        }
        break;
      default:
        break;
    }
  }
  return 0;
}
