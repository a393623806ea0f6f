// --otel and the OTEL_* environment, read into an exporter configuration.
#include "oe/telemetry/config.hpp"

#include <gtest/gtest.h>

#include <map>

namespace oe::telemetry {
namespace {

Getenv envOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) {
      return std::nullopt;
    }
    return it->second;
  };
}

std::string attribute(const Config& config, const std::string& key) {
  for (const auto& a : config.resource) {
    if (a.key == key) {
      return std::get<std::string>(a.value);
    }
  }
  return "<absent>";
}

TEST(TelemetryConfig, OffWithoutTheFlagOrAnEndpoint) {
  EXPECT_FALSE(configFromEnvironment(false, envOf({{"OTEL_SERVICE_NAME", "x"}}), "1").enabled);
}

TEST(TelemetryConfig, FlagAloneSendsToTheDefaultLocalCollector) {
  const Config config = configFromEnvironment(true, envOf({}), "1.0.0");
  ASSERT_TRUE(config.enabled);
  EXPECT_EQ(config.url, "http://localhost:4318/v1/traces");
  EXPECT_EQ(attribute(config, "service.name"), "oe");
  EXPECT_EQ(attribute(config, "telemetry.sdk.version"), "1.0.0");
  EXPECT_TRUE(config.warnings.empty());
}

TEST(TelemetryConfig, GenericEndpointGetsTheTracesPathAppended) {
  const Config config =
      configFromEnvironment(false, envOf({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"}}), "1");
  ASSERT_TRUE(config.enabled);
  EXPECT_EQ(config.url, "http://c:4318/v1/traces");
}

TEST(TelemetryConfig, TracesEndpointIsUsedAsItIsAndWins) {
  const Config config =
      configFromEnvironment(false,
                            envOf({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                                   {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9999/custom"}}),
                            "1");
  EXPECT_EQ(config.url, "http://b:9999/custom");
}

TEST(TelemetryConfig, SdkDisabledTurnsTheEnvironmentOffButNotTheFlag) {
  const auto env =
      envOf({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"}, {"OTEL_SDK_DISABLED", " TRUE "}});
  EXPECT_FALSE(configFromEnvironment(false, env, "1").enabled);
  EXPECT_TRUE(configFromEnvironment(true, env, "1").enabled);
}

TEST(TelemetryConfig, HeadersArePercentDecodedAndMalformedEntriesNamed) {
  const Config config = configFromEnvironment(
      true,
      envOf({{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc, x-a = 1 ,broken,,=v"},
             {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-b=2"}}),
      "1");
  using Headers = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(config.headers, (Headers{{"Authorization", "Bearer abc"}, {"x-a", "1"}, {"x-b", "2"}}));
  ASSERT_EQ(config.warnings.size(), 2u);
  EXPECT_NE(config.warnings[0].find("OTEL_EXPORTER_OTLP_HEADERS"), std::string::npos);
  EXPECT_NE(config.warnings[0].find("\"broken\""), std::string::npos);
}

TEST(TelemetryConfig, ServiceNameBeatsResourceAttributes) {
  const auto env =
      envOf({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=a,deployment.environment=ci"}});
  EXPECT_EQ(attribute(configFromEnvironment(true, env, "1"), "service.name"), "a");
  EXPECT_EQ(attribute(configFromEnvironment(true, env, "1"), "deployment.environment"), "ci");
  const auto named =
      envOf({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=a"}, {"OTEL_SERVICE_NAME", "b"}});
  EXPECT_EQ(attribute(configFromEnvironment(true, named, "1"), "service.name"), "b");
}

TEST(TelemetryConfig, AnotherProtocolIsAWarning) {
  const Config config =
      configFromEnvironment(true, envOf({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}}), "1");
  EXPECT_TRUE(config.enabled);
  ASSERT_EQ(config.warnings.size(), 1u);
  EXPECT_NE(config.warnings[0].find("http/json"), std::string::npos);
}

TEST(TelemetryConfig, PercentDecodingLeavesAStrayPercentAlone) {
  std::vector<std::string> warnings;
  const auto parsed = parseKeyValueList("a=100%,b=%4,c=%41%zz", "V", warnings);
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0].second, "100%");
  EXPECT_EQ(parsed[1].second, "%4");
  EXPECT_EQ(parsed[2].second, "A%zz");
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace oe::telemetry
