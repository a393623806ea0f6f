// A call's request and its identity: the D1 args of its bundle, its write key and item (its
// identity in a chain of runs), its cache key with the data files its args name (and whether it
// may be cached at all), and the text of the invoke request the plugin gets.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "oe/run/engine.hpp"

namespace oe::run::engine {

namespace {
// The largest file of a node's definition read for `${secret:NAME}` (a prompt is far smaller).
constexpr std::uintmax_t kMaxScannedFile = 1 << 20;
}  // namespace

Json bundleArgs(const Json& run_args, Json node_args, const Json& extra_args) {
  Json args = run_args;
  if (node_args.is_object()) {
    for (auto& [key, value] : node_args.items()) {
      args[key] = std::move(value);
    }
  }
  for (auto& [key, value] : extra_args.items()) {
    args[key] = value;
  }
  return args;
}

std::string writeKey(std::string_view node_id, const Json& extra) {
  std::string key(node_id);
  if (extra.empty()) {
    return key;  // a plain node: no allocation beyond the id
  }
  if (auto pipeline = extra.find("$pipeline"); pipeline != extra.end() && pipeline->is_string()) {
    key += "@" + pipeline->get<std::string>() + "#" + extra.value("$index", Json(0)).dump();
  } else if (auto loop = extra.find("$loop"); loop != extra.end() && loop->is_string()) {
    key += "@" + loop->get<std::string>() + "#" + extra.value("$iter", Json(0)).dump();
  } else if (auto index = extra.find("$index"); index != extra.end()) {
    key += "#" + index->dump();
  }
  return key;
}

int64_t itemOf(const Call& call) {
  const Json& extra = call.extra_args;
  if (!extra.is_object() || extra.empty()) {
    return -1;
  }
  auto at = extra.find(extra.contains("$loop") ? "$iter" : "$index");
  return at != extra.end() && at->is_number_integer() ? at->get<int64_t>() : -1;
}

std::string_view writeKeyNode(std::string_view write_key) {
  return write_key.substr(0, write_key.find_first_of("#@/"));
}

std::string invokeRequest(std::string_view node_json, const Call& call, std::string_view run_id,
                          std::string_view node_id, std::string_view experience_dir_json,
                          std::string_view context_extra) {
  std::string request;
  request.reserve(node_json.size() + call.args_json.size() + call.state_json.size() +
                  call.edges_json.size() + run_id.size() + node_id.size() +
                  experience_dir_json.size() + context_extra.size() + 128);
  request += "{\"node\":";
  request += node_json;
  request += ",\"args\":";
  request += call.args_json;
  request += ",\"state_view\":";
  request += call.state_json;
  request += ",\"edge_inputs\":";
  request += call.edges_json;
  request += ",\"context\":{\"run_id\":";
  request += jsonQuoted(run_id);
  request += ",\"node_id\":";
  request += jsonQuoted(node_id);
  request += ",\"experience_dir\":";
  request += experience_dir_json;
  request += ",\"attempt\":";
  request += std::to_string(call.attempt);
  request += context_extra;
  request += "}}";
  return request;
}

const std::vector<uint32_t>& Run::fileIds(NodeRuntime& node) {
  if (!node.files_known) {
    node.file_ids = file_table_.idsOf(*node.spec);
    node.files_known = true;
  }
  return node.file_ids;
}

std::string Run::keyOf(NodeRuntime& node, const Call& call,
                       const std::vector<cache::FileDigest>& data_files) {
  std::vector<cache::FileDigest> files = file_table_.filesOf(fileIds(node));
  files.insert(files.end(), data_files.begin(), data_files.end());
  if (secrets_ && !secretNames(node).empty()) {
    // The key input keeps `${secret:NAME}` as written; the values count through a keyed digest
    // (HMAC under the store's key): a new value gives a new key, the key says nothing of it.
    const std::string kind = "{\"kind\":" + file_table_.kindIdentity(node.kind) +
                             ",\"secrets\":\"" +
                             secrets_->keyedDigest(secretNames(node), secret_key_) + "\"}";
    return cache::cacheKeyOfText(nodeJson(node), call.state_json, call.edges_json,
                                 call.args_json, files, kind);
  }
  return cache::cacheKeyOfText(nodeJson(node), call.state_json, call.edges_json, call.args_json,
                               files, file_table_.kindIdentity(node.kind));
}

const std::vector<std::string>& Run::secretNames(NodeRuntime& node) {
  if (!node.secrets_known) {
    node.secrets_known = true;
    if (secrets_) {
      // From the definition's text: a run's nodes keep it rather than their DOM. A name is
      // the same inside a JSON string as out of it ([A-Za-z0-9_] needs no escape).
      for (const secrets::SecretRef& ref : secrets::findReferences(nodeJson(node))) {
        node.secret_names.emplace_back(ref.name);
      }
      // And the files the definition names (a prompt file): a new value of a secret one of
      // them uses must not replay the answer its old value got. Each file is read once per run
      // (10,000 nodes of one tool name its file 10,000 times).
      for (const cache::FileDigest& file : file_table_.filesOf(fileIds(node))) {
        const std::vector<std::string>& names = secretsInFile(file.path);
        node.secret_names.insert(node.secret_names.end(), names.begin(), names.end());
      }
      std::sort(node.secret_names.begin(), node.secret_names.end());
      node.secret_names.erase(std::unique(node.secret_names.begin(), node.secret_names.end()),
                              node.secret_names.end());
    }
  }
  return node.secret_names;
}

const std::vector<std::string>& Run::secretsInFile(const std::string& rel_path) {
  auto [at, inserted] = secret_file_names_.try_emplace(rel_path);
  if (!inserted) {
    return at->second;
  }
  const std::filesystem::path path = exp_.dir / rel_path;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) ||
      std::filesystem::file_size(path, ec) > kMaxScannedFile || ec) {
    return at->second;
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  for (const secrets::SecretRef& ref : secrets::findReferences(text)) {
    at->second.emplace_back(ref.name);
  }
  return at->second;
}

Json Run::secretArgs(const NodeRuntime& node, const Call& call) const {
  Json args = call.args;
  secrets_->substituteWritten(node.args.source(), args);
  return args;
}

void Run::keyCall(NodeRuntime& node, Call& call) {
  const std::string too_large =
      file_table_.addDataFiles(call.args, *node.spec, call.data_files, &call.names_paths);
  const bool kind_refuses =
      node.kind != nullptr && (node.kind->kind->flags & OE_NODE_KIND_NOT_CACHEABLE) != 0;
  if (!node.spec->cache.enabled || kind_refuses || !too_large.empty()) {
    call.uncacheable = true;
  }
  if (!too_large.empty() && !node.key_warned) {
    node.key_warned = true;
    warn(node.spec->id, nodeLabel(node) + " runs without the cache: " + too_large);
  }
  // Computed even for a call that is never cached: its state writes carry it (landed marks).
  call.cache_key = keyOf(node, call, call.data_files);
}

}  // namespace oe::run::engine
