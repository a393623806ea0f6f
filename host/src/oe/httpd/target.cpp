#include "oe/httpd/target.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "oe/common/hex.hpp"

namespace oe::httpd {

namespace {

// Only what an IP literal can hold: inet_pton reads a C string, so a NUL would end it early.
bool literalChars(std::string_view host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](unsigned char c) {
    return std::isxdigit(c) || c == '.' || c == ':';
  });
}

bool isLoopbackLiteral(std::string_view host) {
  if (!literalChars(host)) {
    return false;
  }
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    static const in6_addr kLoopback = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr), std::begin(kLoopback.s6_addr));
  }
  return false;
}

bool isIpLiteral(std::string_view host) {
  if (!literalChars(host)) {
    return false;
  }
  const std::string text(host);
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, text.c_str(), &v4) == 1 || inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}

}  // namespace

Result<std::string> percentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      const int high = i + 2 < text.size() ? hexDigitValue(text[i + 1]) : -1;
      const int low = i + 2 < text.size() ? hexDigitValue(text[i + 2]) : -1;
      if (high < 0 || low < 0) {
        return makeError("a '%' not followed by two hex digits");
      }
      c = static_cast<char>(high * 16 + low);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    if (c == '\0') {
      return makeError("a NUL byte (%00)");
    }
    out.push_back(c);
  }
  return out;
}

Result<DecodedTarget> decodeTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return makeError("the request target must be a path starting with '/'");
  }
  const size_t question = target.find('?');
  DecodedTarget decoded;
  auto path = percentDecode(target.substr(0, question), false);
  if (!path) {
    return makeError("the path holds " + path.error().message);
  }
  decoded.path = std::move(*path);
  if (question == std::string_view::npos) {
    return decoded;
  }
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    const size_t eq = pair.find('=');
    auto key = percentDecode(pair.substr(0, eq), true);
    auto value = percentDecode(
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!key || !value) {
      return makeError("the query holds " + (key ? value : key).error().message);
    }
    decoded.query.emplace(std::move(*key), std::move(*value));
  }
  return decoded;
}

Result<ListenAddress> parseListenAddress(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return makeError("--listen " + std::string(text) + ": " + std::string(why) +
                     " (e.g. 127.0.0.1:8420, [::1]:8420, 0.0.0.0:8420)");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == text.size()) {
    return bad("expected host:port");
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return bad("the port must be a number from 0 to 65535");
  }
  ListenAddress address;
  address.port = static_cast<uint16_t>(port);
  if (host.find('\0') != std::string_view::npos) {
    return bad("the host holds a NUL byte");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr v6{};
    if (inet_pton(AF_INET6, std::string(host).c_str(), &v6) != 1) {
      return bad("the address in brackets is not an IPv6 address");
    }
  } else if (host == "localhost") {
    host = "127.0.0.1";
  } else {
    in_addr v4{};
    if (inet_pton(AF_INET, std::string(host).c_str(), &v4) != 1) {
      return bad("the host must be an IP address (IPv6 in brackets) or localhost");
    }
  }
  address.host = std::string(host);
  address.loopback = isLoopbackLiteral(host);
  return address;
}

namespace {

bool allDigits(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

bool isLoopbackHost(std::string_view host_header) {
  std::string host(host_header);
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view name = host;
  if (!name.empty() && name.front() == '[') {
    const size_t close = name.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    const std::string_view rest = name.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !allDigits(rest.substr(1)))) {
      return false;
    }
    return isLoopbackLiteral(name.substr(1, close - 1));
  }
  const size_t colon = name.find(':');
  if (colon != std::string_view::npos) {
    if (!allDigits(name.substr(colon + 1))) {
      return false;
    }
    name = name.substr(0, colon);
  }
  if (name == "localhost") {
    return true;
  }
  return isIpLiteral(name) && isLoopbackLiteral(name);
}

}  // namespace oe::httpd
