// Definition pins (issue 3): the file table a run hashes the files its nodes name with (D4), and
// the pin built from it. definitionPin and diffPins (run.hpp) are defined in pin.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/common/json.hpp"
#include "oe/spec/experience.hpp"

namespace oe::run::engine {

// D4: the files a node names (impl, prompt, a dataset's source.uri, a skill folder) with their
// content digests (fileDigest: a folder through its SKILL.md, else its files). The host knows no
// kind, so any string of the node's definition, at any depth, that names an existing path
// counts (not its args: see below), and the files its kind reads (NodeSpec::read_files), which
// count even when missing. One table per run (or per pin): a file many nodes name is
// hashed once and stored once, and a node keeps only the indices of its files.
class FileTable {
 public:
  explicit FileTable(std::filesystem::path dir) : dir_(std::move(dir)) {}

  std::vector<uint32_t> idsOf(const spec::NodeSpec& node);
  [[nodiscard]] std::vector<cache::FileDigest> filesOf(const std::vector<uint32_t>& ids) const;
  // How many distinct files the table has hashed.
  [[nodiscard]] size_t size() const { return files_.size(); }

 private:
  std::filesystem::path dir_;
  std::vector<cache::FileDigest> files_;
  std::unordered_map<std::string, uint32_t> by_text_;
  // read_files, apart: they are in the table even when missing ("missing"), which a string
  // that only may name a file must not be.
  std::unordered_map<std::string, uint32_t> read_by_text_;
};

// The pin of an experience (see definitionPin), with each node's files from `files_of(i)`.
template <class FilesOf>
Json buildPin(const spec::Experience& experience, FilesOf&& files_of) {
  auto file_digest = cache::fileDigest(experience.file);
  Json nodes = Json::object();
  Json order = Json::array();
  for (size_t i = 0; i < experience.nodes.size(); ++i) {
    const spec::NodeSpec& node = experience.nodes[i];
    // The same text either way (sorted keys, compact; a YAML document is valid UTF-8).
    std::string material = node.text.empty() ? node.raw.dump() : node.text;
    for (const cache::FileDigest& file : files_of(i)) {
      material += "\n" + file.path + "=" + file.sha256;
    }
    nodes[node.id] = cache::sha256Hex(material);
    order.push_back(node.id);
  }
  return Json{{"experience", experience.file.string()},
              {"experience_sha256", file_digest ? *file_digest : std::string("unreadable")},
              {"nodes", std::move(nodes)},
              {"order", std::move(order)}};
}

}  // namespace oe::run::engine
