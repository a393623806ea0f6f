// Checks a dataset node's spec at create time so a misconfigured node fails before it reads.
#include "source_spec.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace oe::dataset {

namespace {

// `object[key]` when it is a string, else "".
std::string stringAt(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A required non-empty string member of `source`, or the failure saying how to set it.
Expected<std::string> requiredString(const Json& source, const char* key, const std::string& who,
                                     std::string_view what) {
  std::string value = stringAt(source, key);
  if (value.empty()) {
    return fail(OE_INVALID_ARGUMENT, who + ": source." + key + " is required for a " +
                                         stringAt(source, "type") + " source (" +
                                         std::string(what) + ")");
  }
  return value;
}

std::string resolvePath(const std::string& experience_dir, const std::string& uri) {
  namespace fs = std::filesystem;
  std::error_code ignored;
  const fs::path base =
      experience_dir.empty() ? fs::current_path(ignored) : fs::path(experience_dir);
  const fs::path declared(uri);
  return (declared.is_absolute() ? declared : base / declared).lexically_normal().string();
}

Expected<FileFormat> fileFormat(const Json& source, const std::string& uri,
                                const std::string& who) {
  std::string format;
  if (auto it = source.find("format"); it != source.end() && !it->is_null()) {
    if (!it->is_string()) {
      return fail(OE_INVALID_ARGUMENT,
                  who + ": source.format must be a string (json, jsonl, csv, tsv or parquet)");
    }
    format = lower(it->get<std::string>());
  } else {
    const std::string ext = std::filesystem::path(uri).extension().string();
    const std::string lext = lower(ext);
    if (lext == ".json") {
      format = "json";
    } else if (lext == ".jsonl" || lext == ".ndjson") {
      format = "jsonl";
    } else if (lext == ".csv") {
      format = "csv";
    } else if (lext == ".tsv") {
      format = "tsv";
    } else if (lext == ".parquet") {
      format = "parquet";
    } else {
      return fail(OE_INVALID_ARGUMENT, "Cannot infer file format from extension \"" + ext +
                                           "\"; specify source.format explicitly");
    }
  }
  if (format == "json") {
    return FileFormat::kJson;
  }
  if (format == "jsonl" || format == "ndjson") {
    return FileFormat::kJsonl;
  }
  if (format == "csv") {
    return FileFormat::kCsv;
  }
  if (format == "tsv") {
    return FileFormat::kTsv;
  }
  if (format == "parquet") {
    return fail(OE_UNIMPLEMENTED, "parquet file format is not implemented in V1");
  }
  return fail(OE_INVALID_ARGUMENT, who + ": unknown source.format \"" + format +
                                       "\"; use json, jsonl, csv, tsv or parquet");
}

// source.timeout_ms (oe extension, http and mcp-resource): absent, or a positive integer.
Expected<std::optional<int64_t>> timeoutMs(const Json& source, const std::string& who) {
  auto it = source.find("timeout_ms");
  if (it == source.end() || it->is_null()) {
    return std::optional<int64_t>();
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 1) {
    return fail(OE_INVALID_ARGUMENT,
                who + ": source.timeout_ms must be a positive integer (milliseconds)");
  }
  return std::optional<int64_t>(it->get<int64_t>());
}

Expected<HttpSource> httpSource(const Json& source, const std::string& who) {
  HttpSource http;
  auto url = requiredString(source, "url", who, "the URL of a JSON array");
  if (!url) {
    return std::move(url).failure();
  }
  http.url = std::move(*url);
  if (auto it = source.find("method"); it != source.end() && !it->is_null()) {
    http.method = it->is_string() ? it->get<std::string>() : std::string();
    std::transform(http.method.begin(), http.method.end(), http.method.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (http.method != "GET" && http.method != "POST") {
      return fail(OE_INVALID_ARGUMENT, who + ": source.method must be GET or POST");
    }
  }
  if (auto it = source.find("body"); it != source.end()) {
    http.body = *it;
  }
  if (auto it = source.find("headers"); it != source.end() && !it->is_null()) {
    if (!it->is_object()) {
      return fail(OE_INVALID_ARGUMENT,
                  who + ": source.headers must be an object of header names to strings");
    }
    for (const auto& [name, value] : it->items()) {
      if (!value.is_string()) {
        return fail(OE_INVALID_ARGUMENT, who + ": source.headers." + name +
                                             " must be a string, got " + value.type_name());
      }
      http.headers.emplace_back(name, value.get<std::string>());
    }
  }
  auto timeout = timeoutMs(source, who);
  if (!timeout) {
    return std::move(timeout).failure();
  }
  http.timeout_ms = *timeout;
  return http;
}

}  // namespace

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Expected<DatasetSpec> parseDatasetSpec(std::string_view config_json) {
  const Json config = Json::parse(config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object() || !config.contains("node") ||
      !config["node"].is_object()) {
    return fail(OE_INVALID_ARGUMENT, "dataset: the node configuration has no \"node\" object");
  }
  const Json& node = config["node"];
  DatasetSpec spec;
  spec.node_id = stringAt(node, "id");
  const std::string who = "Dataset \"" + spec.node_id + "\"";

  const Json writes = node.value("writes", Json::array());
  if (!writes.is_array() || writes.size() != 1) {
    return fail(OE_INVALID_ARGUMENT, who + " must declare exactly one write field; got " +
                                         std::to_string(writes.is_array() ? writes.size() : 0));
  }
  if (!writes[0].is_string()) {
    return fail(OE_INVALID_ARGUMENT, who + ": writes[0] must be the name of a state field");
  }
  spec.field = writes[0].get<std::string>();

  auto source_it = node.find("source");
  if (source_it == node.end() || !source_it->is_object()) {
    return fail(OE_INVALID_ARGUMENT,
                who +
                    " has no source; set source: {type: file, uri: ...} (or type sqlite, "
                    "http, mcp-resource)");
  }
  const Json& source = *source_it;
  const std::string type = stringAt(source, "type");
  spec.has_transform = source.contains("transform");
  const std::string experience_dir = stringAt(config, "experience_dir");

  if (type == "file") {
    auto uri = requiredString(source, "uri", who, "a path relative to the experience directory");
    if (!uri) {
      return std::move(uri).failure();
    }
    spec.type = SourceType::kFile;
    spec.file.uri = std::move(*uri);
    spec.file.path = resolvePath(experience_dir, spec.file.uri);
    auto format = fileFormat(source, spec.file.uri, who);
    if (!format) {
      return std::move(format).failure();
    }
    spec.file.format = *format;
    return spec;
  }
  if (type == "sqlite") {
    auto uri = requiredString(source, "uri", who,
                              "the database file, relative to the "
                              "experience directory");
    if (!uri) {
      return std::move(uri).failure();
    }
    auto query = requiredString(source, "query", who, "the SQL query whose rows are read");
    if (!query) {
      return std::move(query).failure();
    }
    spec.type = SourceType::kSqlite;
    spec.sqlite.uri = std::move(*uri);
    spec.sqlite.path = resolvePath(experience_dir, spec.sqlite.uri);
    spec.sqlite.query = std::move(*query);
    if (auto it = source.find("params"); it != source.end() && !it->is_null()) {
      if (!it->is_array()) {
        return fail(OE_INVALID_ARGUMENT,
                    who + ": source.params must be an array (bound to ?1, ?2, ... in order)");
      }
      spec.sqlite.params = *it;
    }
    return spec;
  }
  if (type == "http") {
    auto http = httpSource(source, who);
    if (!http) {
      return std::move(http).failure();
    }
    spec.type = SourceType::kHttp;
    spec.http = std::move(*http);
    return spec;
  }
  if (type == "mcp-resource") {
    auto server = requiredString(source, "server", who, "a server name from mcp.json");
    if (!server) {
      return std::move(server).failure();
    }
    auto uri = requiredString(source, "uri", who, "the URI of the resource to read");
    if (!uri) {
      return std::move(uri).failure();
    }
    spec.type = SourceType::kMcpResource;
    spec.mcp.server = std::move(*server);
    spec.mcp.uri = std::move(*uri);
    spec.mcp.experience_dir = resolvePath(experience_dir, ".");
    if (auto sandbox = config.find("sandbox"); sandbox != config.end() && sandbox->is_object()) {
      spec.mcp.sandbox.emplace(stringAt(*sandbox, "exe"),
                               sandbox->value("confinement", Json::object()).dump());
    }
    auto timeout = timeoutMs(source, who);
    if (!timeout) {
      return std::move(timeout).failure();
    }
    spec.mcp.timeout_ms = timeout->value_or(spec.mcp.timeout_ms);
    return spec;
  }
  const std::string shown = source.contains("type") ? source["type"].dump() : "(none)";
  return fail(OE_INVALID_ARGUMENT, who + ": unknown source.type " + shown +
                                       "; supported types: file, sqlite, http, mcp-resource");
}

}  // namespace oe::dataset
