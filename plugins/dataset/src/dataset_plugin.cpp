// The `dataset` node kind (plugin dev.oe.dataset): loads rows from a file (json, jsonl, csv,
// tsv), a read-only SQLite query, an HTTP endpoint or an MCP server's resource into the node's
// one `writes` field (reference §6.4). The source is checked at create time and read at every
// invoke, so a file written by an upstream node of the same run is seen.
#include <oe/ext/http.h>

#include <cstddef>
#include <memory>
#include <oe/cpp/http.hpp>
#include <oe/cpp/plugin.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "expected.hpp"
#include "json_text.hpp"
#include "source_spec.hpp"
#include "sources.hpp"
#include "spec_schema.hpp"

#ifndef OE_DATASET_PLUGIN_VERSION
#error "OE_DATASET_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::dataset {
namespace {

[[noreturn]] void raise(Failure failure) {
  throw sdk::Error(failure.status, std::move(failure.message));
}

}  // namespace

class DatasetPlugin {
 public:
  explicit DatasetPlugin(sdk::Host host) : host_(host) {}

  static constexpr std::span<const sdk::KindSpec<DatasetPlugin>> kinds();
  static std::unique_ptr<sdk::Node> create(DatasetPlugin& plugin, std::string_view config_json);

  [[nodiscard]] const sdk::Host& host() const noexcept { return host_; }

 private:
  sdk::Host host_;
};

// One `kind: dataset` node. Immutable after create, so invoke is reentrant (for_each items and
// parallel branches may read at once).
class DatasetNode final : public sdk::Node {
 public:
  DatasetNode(const DatasetPlugin& plugin, DatasetSpec spec)
      : plugin_(plugin), spec_(std::move(spec)), who_("Dataset \"" + spec_.node_id + "\"") {
    appendJsonString(field_key_, spec_.field);
  }

  void invoke(sdk::Call& call) override {
    const CancelCheck cancelled = [&call] { return call.cancelled(); };
    auto rows = read(call, cancelled);
    if (!rows) {
      raise(std::move(rows).failure());
    }
    // No edge_output: upstream's dataset dispatcher returns only the state delta.
    std::string response;
    response.reserve(rows->size() + field_key_.size() + 20);
    response += "{\"state_delta\":{";
    response += field_key_;
    response += ':';
    response += *rows;
    response += "}}";
    call.respond(response);
  }

 private:
  Expected<std::string> read(sdk::Call& call, const CancelCheck& cancelled) const {
    switch (spec_.type) {
      case SourceType::kFile:
        return readFileSource(spec_.file, who_, cancelled);
      case SourceType::kSqlite:
        return readSqliteSource(spec_.sqlite, who_, cancelled);
      case SourceType::kHttp: {
        const oe_host_api* api = plugin_.host().api();
        const sdk::Http http = api == nullptr ? sdk::Http{} : sdk::findHttp(*api, call.context());
        return readHttpSource(spec_.http, who_, http, call.context());
      }
      case SourceType::kMcpResource:
        return readMcpResourceSource(spec_.mcp, spec_.node_id, OE_DATASET_PLUGIN_VERSION,
                                     cancelled);
      default:
        return fail(OE_INTERNAL, who_ + ": unknown source type");
    }
  }

  const DatasetPlugin& plugin_;
  DatasetSpec spec_;
  std::string who_;
  std::string field_key_;  // the writes field as a JSON string literal
};

std::unique_ptr<sdk::Node> DatasetPlugin::create(DatasetPlugin& plugin,
                                                 std::string_view config_json) {
  auto spec = parseDatasetSpec(config_json);
  if (!spec) {
    raise(std::move(spec).failure());
  }
  if (spec->has_transform) {
    plugin.host().log(OE_LOG_WARN, "Dataset \"" + spec->node_id +
                                       "\": source.transform is ignored (as in OpenExpertise); "
                                       "transform the rows in a tool node downstream");
  }
  return std::make_unique<DatasetNode>(plugin, std::move(*spec));
}

namespace {
constexpr sdk::KindSpec<DatasetPlugin> kKinds[] = {
    {"dataset",
     "Loads rows into one state field from a JSON/JSONL/CSV/TSV file, a read-only SQLite query, "
     "an HTTP endpoint returning a JSON array or an MCP server's resource",
     kDatasetSpecSchema, OE_NODE_KIND_REENTRANT, &DatasetPlugin::create},
};
}  // namespace

constexpr std::span<const sdk::KindSpec<DatasetPlugin>> DatasetPlugin::kinds() { return kKinds; }

}  // namespace oe::dataset

OE_SDK_PLUGIN(
    oe::dataset::DatasetPlugin, "dev.oe.dataset", OE_DATASET_PLUGIN_VERSION,
    "The dataset node kind: rows from files, SQLite queries, HTTP endpoints and MCP resources")
