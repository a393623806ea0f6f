// libFuzzer target: `oe mcp`'s message parser and dispatcher. Input: the bytes a client writes
// on stdin, one message a line, fed to a server with a tool that echoes, one that reports
// progress and one that fails. Any line must be answered or ignored, never crash or hang.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "oe/mcp/framing.hpp"
#include "oe/mcp/server.hpp"

namespace {

using oe::Json;
using oe::Result;
using oe::mcp::ToolCall;

std::vector<oe::mcp::Tool> fuzzTools() {
  std::vector<oe::mcp::Tool> tools;
  tools.push_back({"echo", "", "", Json{{"type", "object"}}, nullptr,
                   [](ToolCall& call) -> Result<Json> { return call.args(); }});
  tools.push_back(
      {"steps", "", "", Json{{"type", "object"}}, nullptr, [](ToolCall& call) -> Result<Json> {
         auto name = call.stringArg("name", false);
         call.progress(1, 2, name ? *name : "");
         call.progress(2, 2, "done");
         return Json::object();
       }});
  tools.push_back({"fail", "", "", Json{{"type", "object"}}, nullptr,
                   [](ToolCall&) -> Result<Json> { return oe::makeError("no"); }});
  return tools;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int sink = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  oe::mcp::LineWriter out(sink);
  oe::mcp::ServerInfo info;
  info.version = "0";
  info.progress_interval = std::chrono::milliseconds(0);
  oe::mcp::Resources resources{
      [] {
        return std::vector<oe::mcp::Resource>{{"oe://x", "x", "", "text/plain"}};
      },
      [](const std::string& uri) -> Result<oe::mcp::ResourceText> {
        if (uri == "oe://x") {
          return oe::mcp::ResourceText{"text/plain", "x"};
        }
        return oe::makeError("not found");
      }};
  oe::mcp::Server server(info, fuzzTools(), resources, out);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start <= input.size()) {
    const size_t end = std::min(input.find('\n', start), input.size());
    server.handleLine(input.substr(start, end - start));
    start = end + 1;
  }
  server.shutdown();
  return 0;
}
