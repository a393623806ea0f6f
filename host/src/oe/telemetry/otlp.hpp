// The span model and its OTLP/HTTP JSON encoding (docs/telemetry.md): what an OTLP collector
// accepts on POST /v1/traces with Content-Type application/json. The encoding follows the OTLP
// "JSON Protobuf Encoding" rules that hand-written exporters most often get wrong: trace and span
// ids are lowercase hex (not base64), 64-bit integers are JSON strings, enums are integers.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace oe::telemetry {

// One attribute value: string, int, double, bool or an array of strings (finish reasons).
using AttributeValue = std::variant<std::string, int64_t, double, bool, std::vector<std::string>>;

struct Attribute {
  std::string key;
  AttributeValue value;
};
using Attributes = std::vector<Attribute>;

// OTLP's Span.SpanKind and Status.StatusCode (integers on the wire).
enum class SpanKind : int { kInternal = 1, kServer = 2, kClient = 3 };
enum class StatusCode : int { kUnset = 0, kOk = 1, kError = 2 };

struct Span {
  std::string trace_id;        // 32 lowercase hex digits
  std::string span_id;         // 16 lowercase hex digits
  std::string parent_span_id;  // empty for the root span
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  uint64_t start_ns = 0;  // Unix epoch nanoseconds
  uint64_t end_ns = 0;
  Attributes attributes;
  StatusCode status = StatusCode::kUnset;
  std::string status_message;  // with kError
};

// Trace and span ids: random, never all zero (an invalid id to OTLP). A 64-bit generator seeded
// once from OpenSSL: ids must be unique and unpredictable enough for a trace, not secret, and
// RAND_bytes per span was half of the tracer's cost per node. Not thread-safe: one per owner,
// used under the owner's lock.
class IdGenerator {
 public:
  IdGenerator();
  [[nodiscard]] std::string traceId();  // 32 lowercase hex digits
  [[nodiscard]] std::string spanId();   // 16 lowercase hex digits

 private:
  std::string hex(size_t words);
  std::mt19937_64 engine_;
};

// Nanoseconds since the Unix epoch, now.
[[nodiscard]] uint64_t nowUnixNanos();

// The ExportTraceServiceRequest body for `spans`, all under one resource (its attributes, e.g.
// service.name) and one instrumentation scope named "oe" with `scope_version`.
[[nodiscard]] std::string encodeTraces(const Attributes& resource, std::string_view scope_version,
                                       const std::vector<Span>& spans);

}  // namespace oe::telemetry
