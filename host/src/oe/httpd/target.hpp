// What the server reads from a request line and a Host header before any handler sees them: the
// percent-decoded path and query of a request target, and the listen address and Host names
// that count as loopback (docs/serve.md, "Tokens").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "oe/common/result.hpp"

namespace oe::httpd {

struct DecodedTarget {
  std::string path;                               // percent-decoded, starts with '/'
  std::multimap<std::string, std::string> query;  // percent-decoded, '+' as a space
};

// Decodes an origin-form target ("/path?query"). Refused (the server answers 400): a target
// that does not start with '/', a '%' not followed by two hex digits, a decoded NUL byte.
Result<DecodedTarget> decodeTarget(std::string_view target);

// Decodes %XX escapes (and, when `plus_is_space`, '+'); nullopt-like error as above.
Result<std::string> percentDecode(std::string_view text, bool plus_is_space);

struct ListenAddress {
  std::string host;  // an IP literal, without brackets ("127.0.0.1", "::1", "0.0.0.0")
  uint16_t port = 0;
  bool loopback = false;  // 127.0.0.0/8 or ::1
};

// Parses --listen: "IPv4:port", "[IPv6]:port" or "localhost:port" (taken as 127.0.0.1). Other
// host names are refused: the server binds the address it is given, not what a name resolves to.
Result<ListenAddress> parseListenAddress(std::string_view text);

// Whether a Host header names this machine's loopback: "localhost", a loopback IPv4 literal or
// "[::1]", each with or without a port, case-insensitive. A page served from another name that
// resolves to 127.0.0.1 (DNS rebinding) sends that name, and is refused.
bool isLoopbackHost(std::string_view host_header);

}  // namespace oe::httpd
