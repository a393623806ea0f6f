// OTLP/HTTP JSON encoding of spans, and the random ids they carry.
#include "oe/telemetry/otlp.hpp"

#include <openssl/rand.h>

#include <chrono>
#include <random>

#include "oe/common/json.hpp"

namespace oe::telemetry {
namespace {

// The encoding is written out directly rather than built as a JSON tree: a run exports a span
// per node, and the tree's allocations were most of the exporter thread's time.
// Strings go through jsonQuoted: error messages come from plugins and programs, and invalid
// UTF-8 is replaced, not thrown on.
void appendValue(std::string& out, const AttributeValue& value) {
  struct Visit {
    std::string& out;
    void operator()(const std::string& s) const {
      out += "{\"stringValue\":";
      out += jsonQuoted(s);
      out += '}';
    }
    // OTLP JSON: int64 is a decimal string, so a 53-bit JSON reader loses nothing.
    void operator()(int64_t i) const {
      out += "{\"intValue\":\"";
      out += std::to_string(i);
      out += "\"}";
    }
    void operator()(double d) const {
      out += "{\"doubleValue\":";
      out += Json(d).dump();  // shortest round-trip form; NaN and infinities become null
      out += '}';
    }
    void operator()(bool b) const { out += b ? "{\"boolValue\":true}" : "{\"boolValue\":false}"; }
    void operator()(const std::vector<std::string>& list) const {
      out += "{\"arrayValue\":{\"values\":[";
      for (size_t i = 0; i < list.size(); ++i) {
        if (i > 0) {
          out += ',';
        }
        (*this)(list[i]);
      }
      out += "]}}";
    }
  };
  std::visit(Visit{out}, value);
}

void appendAttributes(std::string& out, const Attributes& attributes) {
  out += '[';
  for (size_t i = 0; i < attributes.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    out += "{\"key\":";
    out += jsonQuoted(attributes[i].key);
    out += ",\"value\":";
    appendValue(out, attributes[i].value);
    out += '}';
  }
  out += ']';
}

void appendSpan(std::string& out, const Span& span) {
  out += "{\"traceId\":";
  out += jsonQuoted(span.trace_id);
  out += ",\"spanId\":";
  out += jsonQuoted(span.span_id);
  if (!span.parent_span_id.empty()) {  // a root span has none, not an empty string
    out += ",\"parentSpanId\":";
    out += jsonQuoted(span.parent_span_id);
  }
  out += ",\"name\":";
  out += jsonQuoted(span.name);
  out += ",\"kind\":";
  out += std::to_string(static_cast<int>(span.kind));
  out += ",\"startTimeUnixNano\":\"";
  out += std::to_string(span.start_ns);
  out += "\",\"endTimeUnixNano\":\"";
  out += std::to_string(span.end_ns);
  out += "\",\"attributes\":";
  appendAttributes(out, span.attributes);
  out += ",\"status\":{\"code\":";
  out += std::to_string(static_cast<int>(span.status));
  if (!span.status_message.empty()) {
    out += ",\"message\":";
    out += jsonQuoted(span.status_message);
  }
  out += "}}";
}

}  // namespace

IdGenerator::IdGenerator() {
  uint32_t seed[8] = {};
  if (RAND_bytes(reinterpret_cast<unsigned char*>(seed), sizeof seed) != 1) {
    std::random_device dev;  // OpenSSL failing is near impossible; the kernel's is as good
    for (uint32_t& word : seed) {
      word = dev();
    }
  }
  std::seed_seq sequence(std::begin(seed), std::end(seed));
  engine_.seed(sequence);
}

std::string IdGenerator::hex(size_t words) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(words * 16, '0');
  bool zero = true;
  for (size_t w = 0; w < words; ++w) {
    uint64_t value = engine_();
    zero = zero && value == 0;
    for (size_t i = 0; i < 16; ++i) {
      out[w * 16 + 15 - i] = kHex[value & 0x0F];
      value >>= 4;
    }
  }
  if (zero) {
    out.back() = '1';  // all-zero ids are invalid in OTLP
  }
  return out;
}

std::string IdGenerator::traceId() { return hex(2); }
std::string IdGenerator::spanId() { return hex(1); }

uint64_t nowUnixNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string encodeTraces(const Attributes& resource, std::string_view scope_version,
                         const std::vector<Span>& spans) {
  std::string out;
  out.reserve(512 + spans.size() * 768);
  out += "{\"resourceSpans\":[{\"resource\":{\"attributes\":";
  appendAttributes(out, resource);
  out += "},\"scopeSpans\":[{\"scope\":{\"name\":\"oe\",\"version\":";
  out += jsonQuoted(scope_version);
  out += "},\"spans\":[";
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    appendSpan(out, spans[i]);
  }
  out += "]}]}]}";
  return out;
}

}  // namespace oe::telemetry
