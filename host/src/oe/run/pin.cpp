// Definition pins: the run's file table and the pin of an experience, and the diff of two pins.
#include "oe/run/pin.hpp"

#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"

namespace oe::run {

namespace engine {

std::vector<uint32_t> FileTable::idsOf(const spec::NodeSpec& node) {
  // A run's nodes carry their candidates (spec::compactNodes); others have their DOM.
  const std::vector<std::string> from_dom =
      node.raw.is_null() ? std::vector<std::string>() : spec::pathCandidates(node.raw);
  const std::vector<std::string>& candidates = node.raw.is_null() ? node.path_candidates : from_dom;
  std::vector<uint32_t> ids;
  for (const std::string& candidate : candidates) {
    const std::string* text = &candidate;
    // By the text as written (relative to one folder): a file hashed once stays as it was
    // for the run, with no path built and no stat again for the next node.
    auto it = by_text_.find(*text);
    if (it == by_text_.end()) {
      std::filesystem::path path(*text);
      if (path.is_relative()) {
        path = dir_ / path;
      }
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        continue;  // names no file (yet): looked at again for the next node that has it
      }
      auto digest = cache::fileDigest(path);
      files_.push_back(cache::FileDigest{*text, digest ? *digest : std::string("unreadable")});
      it = by_text_.emplace(*text, static_cast<uint32_t>(files_.size() - 1)).first;
    }
    ids.push_back(it->second);
  }
  for (const std::string& text : node.read_files) {
    auto it = read_by_text_.find(text);
    if (it == read_by_text_.end()) {
      std::filesystem::path path(text);
      if (path.is_relative()) {
        path = dir_ / path;
      }
      // Missing has its own digest, so creating the file later changes the key.
      std::error_code ec;
      std::string sha256 = "missing";
      if (std::filesystem::exists(path, ec)) {
        auto digest = cache::fileDigest(path);
        sha256 = digest ? *digest : std::string("unreadable");
      }
      files_.push_back(cache::FileDigest{text, std::move(sha256)});
      it = read_by_text_.emplace(text, static_cast<uint32_t>(files_.size() - 1)).first;
    }
    ids.push_back(it->second);
  }
  return ids;
}

std::vector<cache::FileDigest> FileTable::filesOf(const std::vector<uint32_t>& ids) const {
  std::vector<cache::FileDigest> out;
  out.reserve(ids.size());
  for (uint32_t id : ids) {
    out.push_back(files_[id]);
  }
  return out;
}

}  // namespace engine

Json definitionPin(const spec::Experience& experience) {
  engine::FileTable table(experience.dir);
  return engine::buildPin(
      experience, [&](size_t i) { return table.filesOf(table.idsOf(experience.nodes[i])); });
}

Json diffPins(const Json& before, const Json& after) {
  Json changed = Json::array();
  Json added = Json::array();
  Json removed = Json::array();
  const Json& old_nodes = before.value("nodes", Json::object());
  const Json& new_nodes = after.value("nodes", Json::object());
  for (const auto& id : after.value("order", Json::array())) {
    auto it = old_nodes.find(id.get<std::string>());
    if (it == old_nodes.end()) {
      added.push_back(id);
    } else if (*it != new_nodes.value(id.get<std::string>(), Json())) {
      changed.push_back(id);
    }
  }
  for (const auto& id : before.value("order", Json::array())) {
    if (!new_nodes.contains(id.get<std::string>())) {
      removed.push_back(id);
    }
  }
  return Json{{"changed", changed}, {"added", added}, {"removed", removed}};
}

}  // namespace oe::run
