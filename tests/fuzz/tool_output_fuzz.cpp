// libFuzzer target: what a tool sends back, read as the tool plugin reads it: an executable's
// stdout or a native tool's output (parseToolOutput + toResponse), a Node.js worker reply
// (interpretReply); and what the host sends it: an invocation request (buildToolInput) and a
// node's configuration (scanNodeConfig), whose text-scanning fast paths must agree with parsing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// interpretReply lives in node_worker.cpp's anonymous namespace: compiling that file into this
// target is the only way to reach it without widening the plugin's interface for a test.
#include "node_worker.cpp"  // NOLINT(bugprone-suspicious-include)
#include "tool_io.hpp"

namespace {

void require(bool condition, const char* what, std::string_view input) {
  if (!condition) {
    std::fprintf(stderr, "tool_output_fuzz: %s for input %.*s\n", what,
                 static_cast<int>(input.size()), input.data());
    std::abort();
  }
}

// The text as the host writes it: compact, member order kept (ordered_json), no duplicate key.
// The fast paths promise to match the parser on exactly such text.
bool isHostCanonical(std::string_view text, oe::tool::Json& parsed) {
  parsed = oe::tool::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return !parsed.is_discarded() &&
         parsed.dump(-1, ' ', false, oe::tool::Json::error_handler_t::replace) == text;
}

std::string stringAt(const oe::tool::Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using oe::tool::Flavour;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const oe::tool::ToolIdentity who{"fuzzed", "./tools/fuzzed", "/nonexistent/tools/fuzzed"};

  for (const Flavour flavour : {Flavour::kExecutable, Flavour::kNative}) {
    auto parsed = oe::tool::parseToolOutput(text, who, flavour);
    if (parsed.ok()) {
      (void)oe::tool::toResponse(std::move(*parsed), who, flavour);
    }
  }
  (void)oe::tool::interpretReply(text, who);
  auto spliced = oe::tool::buildToolInput(text, who);
  oe::tool::Json canonical;
  if (isHostCanonical(text, canonical)) {
    auto parsed = oe::tool::buildToolInputParsed(text, who);
    require(spliced.ok() == parsed.ok(), "buildToolInput and buildToolInputParsed disagree", text);
    require(!spliced.ok() || *spliced == *parsed, "buildToolInput text differs from parsing", text);
    if (auto config = oe::tool::scanNodeConfig(text)) {
      const auto node = canonical.find("node");
      require(node != canonical.end() && node->is_object(), "scanNodeConfig without a node", text);
      require(config->impl == stringAt(*node, "impl") && config->id == stringAt(*node, "id") &&
                  config->experience_dir == stringAt(canonical, "experience_dir"),
              "scanNodeConfig differs from parsing", text);
    }
  } else {
    (void)oe::tool::scanNodeConfig(text);
  }
  (void)oe::tool::preview(text, size / 2);
  return 0;
}
