#include "oe/httpd/http.hpp"

namespace oe::httpd {

std::string_view scopeName(Scope scope) {
  switch (scope) {
    case Scope::kPublic:
      return "public";
    case Scope::kRead:
      return "read";
    case Scope::kAdmin:
      return "admin";
    default:
      return "unknown";
  }
}

std::optional<std::string_view> Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) {
      return std::string_view(value);
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> Request::queryParam(std::string_view name) const {
  const auto it = query.find(std::string(name));
  if (it == query.end()) {
    return std::nullopt;
  }
  return std::string_view(it->second);
}

std::string sseFrame(std::string_view id, std::string_view event, std::string_view data) {
  std::string frame;
  frame.reserve(data.size() + id.size() + event.size() + 24);
  if (!id.empty()) {
    frame.append("id: ").append(id).push_back('\n');
  }
  if (!event.empty()) {
    frame.append("event: ").append(event).push_back('\n');
  }
  // A line break inside the data would end the field: each line travels as its own data: line,
  // and the client joins them with "\n" again. CR LF and a lone CR count as breaks too.
  size_t start = 0;
  while (true) {
    const size_t end = data.find_first_of("\r\n", start);
    frame.append("data: ").append(data.substr(start, end - start)).push_back('\n');
    if (end == std::string_view::npos) {
      break;
    }
    start = end + (data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n' ? 2 : 1);
  }
  frame.push_back('\n');
  return frame;
}

Response jsonResponse(int status, const Json& body) {
  Response response;
  response.status = status;
  response.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return response;
}

Response problem(int status, std::string_view slug, std::string_view title,
                 std::string_view detail) {
  Json body = {{"type", "https://oe.dev/problems/" + std::string(slug)},
               {"title", title},
               {"status", status},
               {"detail", detail}};
  Response response = jsonResponse(status, body);
  response.content_type = "application/problem+json";
  return response;
}

}  // namespace oe::httpd
