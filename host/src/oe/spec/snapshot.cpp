// Spec snapshots (see snapshot.hpp). The file is a short header, then the validation context,
// the YAML text's SHA-256 and the document as JSON (nlohmann parses it ~20x faster than
// yaml-cpp reads the YAML): one line with the document but its graph's nodes and edges, then
// one line per node and one per edge in canonical JSON, so that loading parses one at a time
// (the DOM of a whole graph was a run's peak memory) and keeps a node's line as its text.
// Context and digest are compared byte for byte: a snapshot never stands for another file.
#include "oe/spec/snapshot.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <system_error>

#include "oe/common/file.hpp"
#include "oe/common/journal.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::spec {

namespace {

constexpr std::string_view kMagic = "oe-spec-snapshot/3\n";
constexpr std::string_view kStatePointer = "/state/schema/";

// "<version>\n<context bytes> <yaml bytes> <payload bytes>\n"
std::string header(size_t context, size_t yaml, size_t payload) {
  return std::string(kMagic) + OE_VERSION_STRING + "\n" + std::to_string(context) + " " +
         std::to_string(yaml) + " " + std::to_string(payload) + "\n";
}

}  // namespace

std::filesystem::path snapshotPath(const std::filesystem::path& yaml_path) {
  std::error_code ec;
  std::filesystem::path file = std::filesystem::absolute(yaml_path, ec);
  if (ec) {
    file = yaml_path;
  }
  return workspaceDir(file) / (file.filename().string() + ".spec-snapshot");
}

std::string snapshotContext(const KindCatalog& kinds, bool strict) {
  std::string out = strict ? "strict\n" : "lenient\n";
  for (const auto& [name, info] : kinds) {
    out += name;
    out += '\n';
    out += info.schema ? info.schema->dump() : "-";
    out += '\n';
  }
  return out;
}

std::optional<Experience> readSnapshot(const std::filesystem::path& yaml_path,
                                       std::string_view yaml_digest, std::string_view context) {
  std::optional<std::string> file = readFile(snapshotPath(yaml_path));
  if (!file) {
    return std::nullopt;
  }
  std::string data = std::move(*file);
  // Header: magic, version line, then the three sizes; anything else is another format.
  size_t context_size = 0;
  size_t yaml_size = 0;
  size_t payload_size = 0;
  std::string_view rest(data);
  if (!rest.starts_with(kMagic)) {
    return std::nullopt;
  }
  rest.remove_prefix(kMagic.size());
  const std::string version_line = std::string(OE_VERSION_STRING) + "\n";
  if (!rest.starts_with(version_line)) {
    return std::nullopt;
  }
  rest.remove_prefix(version_line.size());
  const size_t eol = rest.find('\n');
  if (eol == std::string_view::npos) {
    return std::nullopt;
  }
  std::istringstream sizes{std::string(rest.substr(0, eol))};
  if (!(sizes >> context_size >> yaml_size >> payload_size)) {
    return std::nullopt;
  }
  rest.remove_prefix(eol + 1);
  if (rest.size() != context_size + yaml_size + payload_size ||
      rest.substr(0, context_size) != context ||
      rest.substr(context_size, yaml_size) != yaml_digest) {
    return std::nullopt;
  }
  std::string_view payload_text = rest.substr(context_size + yaml_size);
  const size_t head_end = payload_text.find('\n');
  if (head_end == std::string_view::npos) {
    return std::nullopt;
  }
  Json payload = Json::parse(payload_text.substr(0, head_end), nullptr, false);
  if (payload.is_discarded() || !payload.is_object() || !payload.contains("raw") ||
      !payload.contains("nodes") || !payload["nodes"].is_number_unsigned() ||
      !payload.contains("edges") || !payload["edges"].is_number_unsigned()) {
    return std::nullopt;
  }
  const auto node_count = payload["nodes"].get<size_t>();
  const auto edge_count = payload["edges"].get<size_t>();
  GraphLines lines;
  lines.nodes.reserve(node_count);
  lines.edges.reserve(edge_count);
  Journal::forEachLine(payload_text.substr(head_end + 1), [&](std::string_view line) {
    (lines.nodes.size() < node_count ? lines.nodes : lines.edges).push_back(line);
  });
  if (lines.nodes.size() != node_count || lines.edges.size() != edge_count) {
    return std::nullopt;
  }

  Experience exp = experienceAt(yaml_path);
  exp.raw = std::move(payload["raw"]);
  // The state fields' key positions give their declaration order (a JSON object is sorted).
  if (auto marks = payload.find("key_marks"); marks != payload.end() && marks->is_object()) {
    for (const auto& [pointer, at] : marks->items()) {
      if (at.is_array() && at.size() == 2 && at[0].is_number_integer() &&
          at[1].is_number_integer()) {
        exp.key_marks.emplace(pointer, Mark{at[0].get<int>(), at[1].get<int>()});
      }
    }
  }
  if (!buildModel(exp, &lines)) {
    return std::nullopt;
  }
  exp.key_marks.clear();
  return exp;
}

Result<void> writeSnapshot(const Experience& experience, std::string_view yaml_digest,
                           std::string_view context) {
  Json key_marks = Json::object();
  experience.key_marks.forEach([&key_marks](std::string_view pointer, Mark mark) {
    if (pointer.starts_with(kStatePointer) &&
        pointer.find('/', kStatePointer.size()) == std::string_view::npos) {
      key_marks[std::string(pointer)] = Json::array({mark.line, mark.column});
    }
  });
  // The document without its graph's nodes and edges, then a line per node and per edge.
  Json head = Json::object();
  const Json* nodes = nullptr;
  const Json* edges = nullptr;
  for (const auto& [key, value] : experience.raw.items()) {
    if (key != "graph" || !value.is_object()) {
      head[key] = value;
      continue;
    }
    Json& graph = head[key] = Json::object();
    for (const auto& [graph_key, graph_value] : value.items()) {
      if (graph_key == "nodes" && graph_value.is_array()) {
        nodes = &graph_value;
      } else if (graph_key == "edges" && graph_value.is_array()) {
        edges = &graph_value;
      } else {
        graph[graph_key] = graph_value;
      }
    }
  }
  std::string payload;
  try {
    payload = Json{{"raw", std::move(head)},
                   {"key_marks", std::move(key_marks)},
                   {"nodes", nodes != nullptr ? nodes->size() : 0},
                   {"edges", edges != nullptr ? edges->size() : 0}}
                  .dump();
    payload += '\n';
    for (const Json* list : {nodes, edges}) {
      if (list == nullptr) {
        continue;
      }
      for (const Json& item : *list) {
        payload += canonicalText(item);  // a node's line is its NodeSpec::text
        payload += '\n';
      }
    }
  } catch (const Json::exception& e) {
    return makeError(std::string("cannot serialise the experience: ") + e.what());
  }
  const std::filesystem::path path = snapshotPath(experience.file);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    return makeError("cannot create " + path.parent_path().string() + ": " + ec.message());
  }
  // A name of its own per process: two runs saving at once do not write into one file.
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << header(context.size(), yaml_digest.size(), payload.size()) << context << yaml_digest
        << payload;
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return makeError("cannot write " + tmp.string());
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return makeError("cannot rename the snapshot to " + path.string() + ": " + ec.message());
  }
  return {};
}

}  // namespace oe::spec
