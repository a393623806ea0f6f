// OTLP/HTTP JSON encoding of spans, and the random ids they carry.
#include "oe/telemetry/otlp.hpp"

#include <openssl/rand.h>

#include <chrono>
#include <random>

#include "oe/common/json.hpp"

namespace oe::telemetry {
namespace {

std::string randomHex(size_t bytes) {
  unsigned char b[16] = {};
  if (RAND_bytes(b, static_cast<int>(bytes)) != 1) {
    std::random_device dev;  // OpenSSL failing is near impossible; the kernel's is as good
    for (size_t i = 0; i < bytes; ++i) {
      b[i] = static_cast<unsigned char>(dev());
    }
  }
  bool zero = true;
  for (size_t i = 0; i < bytes; ++i) {
    zero = zero && b[i] == 0;
  }
  if (zero) {
    b[bytes - 1] = 1;  // all-zero ids are invalid in OTLP
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (size_t i = 0; i < bytes; ++i) {
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 0x0F];
  }
  return out;
}

Json encodeValue(const AttributeValue& value) {
  struct Visit {
    Json operator()(const std::string& s) const { return {{"stringValue", s}}; }
    // OTLP JSON: int64 is a decimal string, so a 53-bit JSON reader loses nothing.
    Json operator()(int64_t i) const { return {{"intValue", std::to_string(i)}}; }
    Json operator()(double d) const { return {{"doubleValue", d}}; }
    Json operator()(bool b) const { return {{"boolValue", b}}; }
    Json operator()(const std::vector<std::string>& list) const {
      Json values = Json::array();
      for (const auto& s : list) {
        values.push_back({{"stringValue", s}});
      }
      return {{"arrayValue", {{"values", std::move(values)}}}};
    }
  };
  return std::visit(Visit{}, value);
}

Json encodeAttributes(const Attributes& attributes) {
  Json out = Json::array();
  for (const auto& attribute : attributes) {
    out.push_back({{"key", attribute.key}, {"value", encodeValue(attribute.value)}});
  }
  return out;
}

}  // namespace

std::string newTraceId() { return randomHex(16); }
std::string newSpanId() { return randomHex(8); }

uint64_t nowUnixNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string encodeTraces(const Attributes& resource, std::string_view scope_version,
                         const std::vector<Span>& spans) {
  Json encoded = Json::array();
  for (const Span& span : spans) {
    Json s = {{"traceId", span.trace_id},
              {"spanId", span.span_id},
              {"name", span.name},
              {"kind", static_cast<int>(span.kind)},
              {"startTimeUnixNano", std::to_string(span.start_ns)},
              {"endTimeUnixNano", std::to_string(span.end_ns)},
              {"attributes", encodeAttributes(span.attributes)}};
    if (!span.parent_span_id.empty()) {
      s["parentSpanId"] = span.parent_span_id;
    }
    Json status = {{"code", static_cast<int>(span.status)}};
    if (!span.status_message.empty()) {
      status["message"] = span.status_message;
    }
    s["status"] = std::move(status);
    encoded.push_back(std::move(s));
  }
  Json body = {
      {"resourceSpans",
       Json::array(
           {{{"resource", {{"attributes", encodeAttributes(resource)}}},
             {"scopeSpans", Json::array({{{"scope", {{"name", "oe"}, {"version", scope_version}}},
                                          {"spans", std::move(encoded)}}})}}})}};
  // Error messages come from plugins and programs: invalid UTF-8 is replaced, not thrown on.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace oe::telemetry
