// The OpenTelemetry environment, read into an exporter configuration.
#include "oe/telemetry/config.hpp"

#include <algorithm>
#include <cctype>

#include "oe/common/hex.hpp"

namespace oe::telemetry {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

// W3C Baggage-style percent-decoding; a '%' not followed by two hex digits stays as it is.
std::string percentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int hi = hexDigitValue(text[i + 1]);
      const int lo = hexDigitValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

bool isTrue(const std::optional<std::string>& value) {
  if (!value) {
    return false;
  }
  std::string lowered(trim(*value));
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lowered == "true";
}

std::optional<std::string> nonEmpty(const Getenv& env, const char* name) {
  auto value = env(name);
  if (!value || trim(*value).empty()) {
    return std::nullopt;
  }
  return std::string(trim(*value));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parseKeyValueList(
    std::string_view text, std::string_view variable, std::vector<std::string>& warnings) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (entry.empty()) {
      continue;
    }
    const size_t eq = entry.find('=');
    const std::string_view key = eq == std::string_view::npos ? entry : trim(entry.substr(0, eq));
    if (eq == std::string_view::npos || key.empty()) {
      warnings.push_back(std::string(variable) + ": left out the entry \"" + std::string(entry) +
                         "\", which is not key=value (separate entries with commas, "
                         "percent-encode commas inside values as %2C)");
      continue;
    }
    out.emplace_back(percentDecode(key), percentDecode(trim(entry.substr(eq + 1))));
  }
  return out;
}

Config configFromEnvironment(bool flag, const Getenv& env, std::string_view oe_version) {
  Config config;
  const auto traces_endpoint = nonEmpty(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const auto endpoint = nonEmpty(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const bool from_env = traces_endpoint || endpoint;
  if (!flag && (!from_env || isTrue(env("OTEL_SDK_DISABLED")))) {
    return config;
  }
  config.enabled = true;
  if (traces_endpoint) {
    config.url = *traces_endpoint;
  } else {
    std::string base = endpoint ? *endpoint : std::string(kDefaultEndpoint);
    while (!base.empty() && base.back() == '/') {
      base.pop_back();
    }
    config.url = base + "/v1/traces";
  }
  for (const char* name : {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"}) {
    if (auto protocol = nonEmpty(env, name)) {
      if (*protocol != "http/json") {
        config.warnings.push_back(std::string(name) + " is \"" + *protocol +
                                  "\", but oe sends only http/json; the collector must accept "
                                  "OTLP/HTTP with JSON (Jaeger and the OpenTelemetry Collector "
                                  "do on port 4318)");
      }
      break;  // the traces-specific variable wins over the generic one
    }
  }
  // The traces-specific headers are added after the generic ones: a server reading the last
  // value of a repeated header sees the specific one.
  for (const char* name : {"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"}) {
    if (auto headers = env(name)) {
      auto parsed = parseKeyValueList(*headers, name, config.warnings);
      config.headers.insert(config.headers.end(), parsed.begin(), parsed.end());
    }
  }
  std::string service = "oe";
  Attributes extra;
  if (auto attributes = env("OTEL_RESOURCE_ATTRIBUTES")) {
    for (auto& [key, value] :
         parseKeyValueList(*attributes, "OTEL_RESOURCE_ATTRIBUTES", config.warnings)) {
      if (key == "service.name") {
        service = value;
      } else {
        extra.push_back({key, value});
      }
    }
  }
  if (auto name = nonEmpty(env, "OTEL_SERVICE_NAME")) {
    service = *name;  // wins over service.name in OTEL_RESOURCE_ATTRIBUTES, as the spec says
  }
  config.resource.push_back({"service.name", service});
  config.resource.push_back({"telemetry.sdk.name", std::string("oe")});
  config.resource.push_back({"telemetry.sdk.language", std::string("cpp")});
  config.resource.push_back({"telemetry.sdk.version", std::string(oe_version)});
  for (auto& attribute : extra) {
    if (attribute.key != "telemetry.sdk.name" && attribute.key != "telemetry.sdk.language" &&
        attribute.key != "telemetry.sdk.version") {
      config.resource.push_back(std::move(attribute));
    }
  }
  return config;
}

}  // namespace oe::telemetry
