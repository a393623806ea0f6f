// A dataset node's configuration, checked once when the node is created: which field receives
// the rows and where they come from (reference §6.4). Reading happens at invoke time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "expected.hpp"
#include "json_text.hpp"

namespace oe::dataset {

enum class SourceType { kFile, kSqlite, kHttp, kMcpResource };
enum class FileFormat { kJson, kJsonl, kCsv, kTsv };

struct FileSource {
  std::string uri;   // as declared
  std::string path;  // absolute, resolved against the experience directory
  FileFormat format = FileFormat::kJson;
};

struct SqliteSource {
  std::string uri;
  std::string path;
  std::string query;
  Json params = Json::array();  // bound positionally (oe extension)
};

struct HttpSource {
  std::string url;
  std::string method = "GET";
  std::optional<Json> body;                                  // sent as JSON with POST only
  std::vector<std::pair<std::string, std::string>> headers;  // oe extension
  std::optional<int64_t> timeout_ms;                         // oe extension
};

struct McpResourceSource {
  std::string server;          // a name under `servers` in mcp.json
  std::string uri;             // the resource's URI
  std::string experience_dir;  // where mcp.json is, and the server's working directory
  int64_t timeout_ms = 60000;  // per exchange (oe extension; the TypeScript SDK's default)
  // oe-sandbox and the confinement (JSON text) the server runs under when a policy is in force
  // for the node (docs/policy.md); exe empty and no confinement otherwise.
  std::optional<std::pair<std::string, std::string>> sandbox;
};

struct DatasetSpec {
  std::string node_id;
  std::string field;  // the one `writes` entry
  SourceType type = SourceType::kFile;
  FileSource file;
  SqliteSource sqlite;
  HttpSource http;
  McpResourceSource mcp;
  bool has_transform = false;  // accepted and ignored, as upstream does
};

// Parses create()'s config JSON ({"node": <spec>, "experience_dir": "<abs>"}).
Expected<DatasetSpec> parseDatasetSpec(std::string_view config_json);

// ASCII lower case (scheme, method and header names).
std::string lower(std::string text);

}  // namespace oe::dataset
