// libFuzzer target: `oe serve`'s token file parser (`<scope> <name> <token>` lines) and the
// lookup of a presented token. Invariants: an accepted file's entries have a read or admin scope
// and unique printable names, and every token line's own token finds its own entry; a refused
// file's error names the file and a line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "oe/httpd/tokens.hpp"

namespace {

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) {
      ++pos;
    }
    const size_t start = pos;
    while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t') {
      ++pos;
    }
    if (pos > start) {
      out.push_back(line.substr(start, pos - start));
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto table = oe::httpd::TokenTable::parse(text, "fuzz.tokens");
  if (!table) {
    if (table.error().message.rfind("fuzz.tokens:", 0) != 0) {
      std::abort();
    }
    return 0;
  }
  std::set<std::string> names;
  for (const auto& token : table->tokens()) {
    if ((token.scope != oe::httpd::Scope::kRead && token.scope != oe::httpd::Scope::kAdmin) ||
        token.name.empty() || !names.insert(token.name).second) {
      std::abort();
    }
    for (const char c : token.name) {
      if (c <= ' ' || static_cast<unsigned char>(c) >= 0x7f) {
        std::abort();
      }
    }
  }
  size_t lines_with_tokens = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end;
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    const auto parts = fields(line);
    if (parts.empty() || parts[0].front() == '#') {
      continue;
    }
    ++lines_with_tokens;
    const oe::httpd::Token* found = parts.size() == 3 ? table->find(parts[2]) : nullptr;
    if (found == nullptr || found->name != parts[1]) {
      std::abort();
    }
  }
  if (lines_with_tokens != table->tokens().size()) {
    std::abort();
  }
  return 0;
}
