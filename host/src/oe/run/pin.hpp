// What a node's cache key and its definition pin cover besides the texts of its definition,
// state view, edge inputs and args (D4; docs/durability.md, "What the cache key covers"): the
// run's file table and the pin built from it. definitionPin and diffPins (run.hpp) are defined
// in pin.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/cache/digest_cache.hpp"
#include "oe/common/json.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/spec/experience.hpp"

namespace oe::run::engine {

// The files a node depends on, with their content digests, in two groups:
//
// * Definition files, hashed once per run (a file hashed once stays as it was for the run):
//   the files a node's definition names (impl, prompt, a dataset's source.uri, a skill folder:
//   the host knows no kind, so any string of the definition, at any depth, that names an
//   existing path counts, but not its args or cache: spec::pathCandidates), the files its kind
//   reads (NodeSpec::read_files), which count even when missing, and the local import graph of
//   those that are JavaScript or Python modules (cache/module_imports.hpp), transitively, each
//   module scanned once per run. One table per run (or per pin): a file many nodes name is
//   hashed once and stored once, and a node keeps only the indices of its files.
// * Data files, hashed each time a call is keyed, since an earlier node of the run may write
//   them (cache::DigestCache reads a file again only when its stat() identity changed): the
//   files and folders the call's resolved args name inside the experience folder, and what the
//   node's `cache.inputs` globs match.
//
// And the identity of the node's kind: its plugin's id, version and library digest.
class FileTable {
 public:
  // A module's import graph is followed for at most this many files; a module larger than
  // kMaxScannedModule is hashed but not scanned for imports.
  static constexpr size_t kMaxImportFiles = 10'000;
  static constexpr uintmax_t kMaxScannedModule = uintmax_t{8} << 20;
  // A `cache.inputs` glob may match at most this many paths.
  static constexpr size_t kMaxInputMatches = cache::DigestCache::kMaxFolderFiles;

  explicit FileTable(const std::filesystem::path& dir);

  std::vector<uint32_t> idsOf(const spec::NodeSpec& node);
  [[nodiscard]] std::vector<cache::FileDigest> filesOf(const std::vector<uint32_t>& ids) const;
  // How many distinct definition files the table has hashed.
  [[nodiscard]] size_t size() const { return files_.size(); }

  // Appends to `files` the data files of one call of `node` whose resolved args are `args`: each
  // string of the args (at any depth, at most 256, 8 levels deep; not `$.` paths, URLs or
  // multi-line text) that names an existing file or folder, relative to the experience folder
  // or absolute, whose path lies inside it (not the folder itself, nothing under
  // .openexpertise/), labelled with the string; then each match of its cache.inputs, labelled
  // with its path relative to the folder. Returns why the call cannot be keyed completely (a
  // folder past DigestCache's bounds, a glob with too many matches), else "": such a call is
  // not cached. `*names_paths` (when given) tells whether anything could be a data file at all:
  // a string naming a path inside the folder, existing or not, or a cache.inputs glob.
  std::string addDataFiles(const Json& args, const spec::NodeSpec& node,
                           std::vector<cache::FileDigest>& files, bool* names_paths = nullptr);

  // The canonical JSON of the plugin behind a kind, {"plugin":id,"sha256":library
  // digest,"version":version}, computed once per library; "null" for a kind without a library
  // (the unit tests' in-process kinds).
  const std::string& kindIdentity(const plugins::LoadedKind* kind) {
    return kindEntry(kind).identity;
  }
  // sha256Hex of kindIdentity, also computed once per library.
  const std::string& kindDigest(const plugins::LoadedKind* kind) { return kindEntry(kind).digest; }

  // Data files read (hashed) so far, for the tests.
  [[nodiscard]] size_t dataFilesRead() const { return data_.filesRead(); }

 private:
  uint32_t moduleId(const std::filesystem::path& file);
  // The ids of what `module` imports, transitively (cached per module for the run).
  const std::vector<uint32_t>& importsOf(const std::filesystem::path& module);
  // What `file` imports directly, resolved from `script_dir` (cached per pair for the run).
  const std::vector<std::filesystem::path>& directImports(const std::filesystem::path& file,
                                                          const std::filesystem::path& script_dir);

  std::vector<cache::FileDigest> files_;
  std::unordered_map<std::string, uint32_t> by_text_;
  // read_files, apart: they are in the table even when missing ("missing"), which a string
  // that only may name a file must not be.
  std::unordered_map<std::string, uint32_t> read_by_text_;
  std::unordered_map<std::string, uint32_t> by_module_;  // an imported file's id, by path
  std::unordered_map<std::string, std::vector<uint32_t>> imports_;
  std::unordered_map<std::string, std::vector<std::filesystem::path>> direct_;
  cache::DigestCache data_;
  struct KindEntry {
    std::string identity;
    std::string digest;
  };
  const KindEntry& kindEntry(const plugins::LoadedKind* kind);

  std::filesystem::path dir_;  // absolute, lexically normal
  bool plain_dir_ = false;     // dir_ is not "/": `dir_ + '/' + name` is a normal path in it
  std::unordered_map<const void*, KindEntry> kinds_;
};

// The files a node's definition pin hashes: its definition files (`ids`, from table.idsOf), the
// data files of its args as written (`$.path` values are only known when it runs), its
// cache.inputs' matches, and its plugin as an entry "plugin:<id>" whose digest is that of
// kindIdentity. As far as the definition fixes them, the inputs its cache key covers.
std::vector<cache::FileDigest> pinFiles(FileTable& table, const std::vector<uint32_t>& ids,
                                        const spec::NodeSpec& node,
                                        const plugins::LoadedKind* kind);

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
