// libFuzzer target: the live view's handling of what plugins and experiences write (node ids,
// activity and error texts, in any bytes). Input: a first byte choosing the screen size, then
// lines: the first is a node id, each further line an activity or error of that node. Aborts
// when a frame line has a control character or is wider than the screen allows, or when a frame
// is taller than the screen: either would corrupt the terminal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "oe/view/dashboard.hpp"
#include "oe/view/frame.hpp"
#include "oe/view/text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const oe::view::FrameSize screen{static_cast<size_t>(data[0] % 64) + 1,
                                   static_cast<size_t>(data[0] / 64) * 3 + 1};
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string> lines;
  for (size_t start = 0; start <= input.size();) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) {
      end = input.size();
    }
    lines.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }
  const std::string id = lines.front();
  oe::view::Dashboard dashboard({{id, "tool", id, id, true}, {"other", id, "", "", false}});
  dashboard.apply({{"type", "run.started"}, {"run_id", id}});
  dashboard.apply({{"type", "node.started"}, {"node_id", id}});
  for (size_t i = 1; i < lines.size(); ++i) {
    // nlohmann refuses invalid UTF-8 only when dumping; the view must cope with any bytes.
    const char* type = i % 3 == 0 ? "node.failed" : i % 3 == 1 ? "node.activity" : "node.log";
    dashboard.apply({{"type", type},
                     {"node_id", id},
                     {"activity", lines[i]},
                     {"error", lines[i]},
                     {"message", lines[i]}});
  }
  const auto frame = oe::view::renderFrame(dashboard, screen, static_cast<int64_t>(size) * 997);
  if (frame.size() > (screen.rows > 1 ? screen.rows - 1 : 1)) {
    std::abort();
  }
  for (const auto& line : frame) {
    if (oe::view::displayWidth(line) > (screen.columns > 1 ? screen.columns - 1 : 1)) {
      std::abort();
    }
    for (unsigned char c : line) {
      if (c < 0x20 || c == 0x7F) {
        std::abort();
      }
    }
  }
  for (const auto& text : lines) {
    const std::string safe = oe::view::safeLine(text, 40);
    if (safe.size() > 44 || oe::view::displayWidth(oe::view::fitWidth(safe, 7)) > 7) {
      std::abort();
    }
  }
  return 0;
}
