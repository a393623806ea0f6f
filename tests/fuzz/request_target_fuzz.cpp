// libFuzzer target: what the server reads from a request line and headers before routing: the
// percent-decoder of a request target (path and query), the Host check and the --listen parser.
// Invariants: a decoded path starts with '/' and holds no NUL, nor does any query key or value;
// the path percent-encoded again decodes to itself; an accepted listen address prints back to
// one that parses the same; a Host the check accepts has no '@', '/' or blank.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "oe/httpd/target.hpp"

namespace {

std::string encode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
        (byte >= '0' && byte <= '9') || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = oe::httpd::decodeTarget(text);
  if (decoded) {
    if (decoded->path.empty() || decoded->path.front() != '/' ||
        decoded->path.find('\0') != std::string::npos) {
      std::abort();
    }
    for (const auto& [key, value] : decoded->query) {
      if (key.find('\0') != std::string::npos || value.find('\0') != std::string::npos) {
        std::abort();
      }
    }
    auto again = oe::httpd::decodeTarget(encode(decoded->path));
    if (!again || again->path != decoded->path || !again->query.empty()) {
      std::abort();
    }
  }

  if (oe::httpd::isLoopbackHost(text) &&
      text.find_first_of(std::string_view("@/ \t\r\n\0", 8)) != std::string_view::npos) {
    std::abort();
  }

  auto address = oe::httpd::parseListenAddress(text);
  if (address) {
    if (address->host.empty()) {
      std::abort();
    }
    const bool v6 = address->host.find(':') != std::string::npos;
    const std::string printed =
        (v6 ? "[" + address->host + "]" : address->host) + ":" + std::to_string(address->port);
    auto reparsed = oe::httpd::parseListenAddress(printed);
    if (!reparsed || reparsed->host != address->host || reparsed->port != address->port ||
        reparsed->loopback != address->loopback) {
      std::abort();
    }
  }
  return 0;
}
