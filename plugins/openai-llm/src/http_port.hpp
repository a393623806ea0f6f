// The plugin's only way to the network: the host's oe.http/1 service (fetch + release), so the
// plugin ships no TLS stack and links no libcurl.
#pragma once

#include <oe/cpp/http.hpp>
#include <oe/host.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "expected.hpp"
#include "retry.hpp"

namespace oe::llm {

struct HttpPost {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  Millis timeout{600000};
  Millis stall_timeout{60000};
};

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// POSTs through oe.http/1. Any HTTP status is a reply; a failure carries oe.http/1's status
// (OE_UNAVAILABLE, OE_DEADLINE_EXCEEDED, OE_CANCELLED, ...) and its message.
Expected<HttpReply> post(const sdk::Http& http, oe_host_ctx* call, const HttpPost& request);

}  // namespace oe::llm
