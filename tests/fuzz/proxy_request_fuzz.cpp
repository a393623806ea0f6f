// libFuzzer target: the sandbox proxy's reading of what a confined program sends it
// (docs/policy.md, "network"). Input: a network.allow entry on the first line, then a request
// head as a client writes it (CRLF lines, without the blank line that ends it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "oe/sandbox/connect_proxy.hpp"

namespace {

// CRLF is the only line end the origin may see: a bare CR or LF would split a header in two.
bool onlyCrlfLineEnds(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) {
      return false;
    }
    if (text[i] == '\n' && (i == 0 || text[i - 1] != '\r')) {
      return false;
    }
  }
  return true;
}

bool normalizedHost(std::string_view host) {
  if (host.empty() || host.back() == '.') {
    return false;
  }
  for (const char c : host) {
    if ((c >= 'A' && c <= 'Z') || c == ' ' || c == '\r' || c == '\n' || c == '@' || c == '/') {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view rule_text = input.substr(0, newline);
  const std::string_view head =
      newline == std::string_view::npos ? std::string_view{} : input.substr(newline + 1);

  auto rule = oe::sandbox::parseProxyRule(rule_text);
  if (rule && !normalizedHost(rule->wildcard() ? rule->host.substr(2) : rule->host)) {
    std::abort();  // rules are kept normalized: lower case, no trailing dot
  }

  auto request = oe::sandbox::parseProxyRequest(head);
  if (!request) {
    return 0;
  }
  if (!normalizedHost(request->host) || request->port == 0) {
    std::abort();
  }
  if (request->tunnel != request->origin_head.empty()) {
    std::abort();  // a tunnel forwards bytes, a plain request a rewritten head
  }
  if (!request->tunnel) {
    const std::string& out = request->origin_head;
    if (!out.ends_with("\r\nConnection: close\r\n\r\n") || !onlyCrlfLineEnds(out)) {
      std::abort();
    }
    // Exactly one Host header, the one the proxy wrote from the target.
    size_t hosts = 0;
    for (size_t at = out.find("\r\n"); at != std::string::npos; at = out.find("\r\n", at + 2)) {
      std::string name(out.substr(at + 2, 5));
      for (char& c : name) {
        c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      }
      hosts += name == "host:" ? 1 : 0;
    }
    if (hosts != 1) {
      std::abort();
    }
  }
  if (rule) {
    (void)oe::sandbox::ruleAllows(*rule, request->host, request->port);
  }
  return 0;
}
