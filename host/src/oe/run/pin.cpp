// The run's file table (definition files, import graphs, data files, plugin identities), the
// pin of an experience, and the diff of two pins.
#include "oe/run/pin.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <unordered_set>

#include "oe/cache/module_imports.hpp"
#include "oe/common/file.hpp"
#include "oe/common/glob.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"

namespace oe::run {

namespace engine {

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxArgStrings = 256;
constexpr int kMaxArgDepth = 8;

void argStrings(const Json& value, int depth, std::vector<const std::string*>& out) {
  if (out.size() >= kMaxArgStrings || depth > kMaxArgDepth) {
    return;
  }
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (!text.empty() && text.size() <= 4096 && !text.starts_with("$.") &&
        text.find_first_of(std::string_view("\n\0", 2)) == std::string::npos &&
        text.find("://") == std::string::npos) {
      out.push_back(&text);
    }
  } else if (value.is_array() || value.is_object()) {
    for (const Json& child : value) {
      argStrings(child, depth + 1, out);
    }
  }
}

// Whether `text` is a relative path whose components are all plain names (none empty, ".", or
// ".."): joined to a normal folder it is normal and lies inside it, no lexical work needed.
bool plainRelative(std::string_view text) {
  if (text.empty() || text.front() == '/') {
    return false;
  }
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(text.find('/', start), text.size());
    const std::string_view part = text.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return false;
    }
    if (end == text.size()) {
      return true;
    }
    start = end + 1;
  }
}

fs::path normalDir(const fs::path& dir) {
  std::error_code ec;
  fs::path abs = fs::absolute(dir, ec);
  return (ec ? dir : abs).lexically_normal();
}

}  // namespace

FileTable::FileTable(const fs::path& dir) : dir_(normalDir(dir)) {
  // A trailing separator would leave an empty last component, which insideExperience skips;
  // without it, `dir_ / x` reads naturally.
  if (!dir_.has_filename() && dir_.has_parent_path() && dir_ != dir_.root_path()) {
    dir_ = dir_.parent_path();
  }
  plain_dir_ = dir_.has_relative_path();
}

std::vector<uint32_t> FileTable::idsOf(const spec::NodeSpec& node) {
  // A run's nodes carry their candidates (spec::compactNodes); others have their DOM.
  const std::vector<std::string> from_dom =
      node.raw.is_null() ? std::vector<std::string>() : spec::pathCandidates(node.raw);
  const std::vector<std::string>& candidates = node.raw.is_null() ? node.path_candidates : from_dom;
  std::vector<uint32_t> ids;
  std::vector<fs::path> modules;
  for (const std::string& candidate : candidates) {
    const std::string* text = &candidate;
    // By the text as written (relative to one folder): a file hashed once stays as it was
    // for the run, with no path built and no stat again for the next node.
    auto it = by_text_.find(*text);
    if (it == by_text_.end()) {
      fs::path path(*text);
      if (path.is_relative()) {
        path = dir_ / path;
      }
      std::error_code ec;
      if (!fs::exists(path, ec)) {
        continue;  // names no file (yet): looked at again for the next node that has it
      }
      auto digest = cache::fileDigest(path);
      files_.push_back(cache::FileDigest{*text, digest ? *digest : std::string("unreadable")});
      it = by_text_.emplace(*text, static_cast<uint32_t>(files_.size() - 1)).first;
    }
    ids.push_back(it->second);
    if (cache::moduleLanguage(*text) != cache::ModuleLanguage::kNone) {
      fs::path path(*text);
      modules.push_back((path.is_relative() ? dir_ / path : path).lexically_normal());
    }
  }
  for (const std::string& text : node.read_files) {
    auto it = read_by_text_.find(text);
    if (it == read_by_text_.end()) {
      fs::path path(text);
      if (path.is_relative()) {
        path = dir_ / path;
      }
      // Missing has its own digest, so creating the file later changes the key.
      std::error_code ec;
      std::string sha256 = "missing";
      if (fs::exists(path, ec)) {
        auto digest = cache::fileDigest(path);
        sha256 = digest ? *digest : std::string("unreadable");
      }
      files_.push_back(cache::FileDigest{text, std::move(sha256)});
      it = read_by_text_.emplace(text, static_cast<uint32_t>(files_.size() - 1)).first;
    }
    ids.push_back(it->second);
  }
  for (const fs::path& module : modules) {
    for (uint32_t id : importsOf(module)) {
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
        ids.push_back(id);
      }
    }
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

uint32_t FileTable::moduleId(const fs::path& file) {
  auto it = by_module_.find(file.native());
  if (it == by_module_.end()) {
    auto digest = cache::fileDigest(file);
    // Labelled by its path in the experience, as a definition names a file.
    files_.push_back(cache::FileDigest{file.lexically_relative(dir_).generic_string(),
                                       digest ? *digest : std::string("unreadable")});
    it = by_module_.emplace(file.native(), static_cast<uint32_t>(files_.size() - 1)).first;
  }
  return it->second;
}

const std::vector<fs::path>& FileTable::directImports(const fs::path& file,
                                                      const fs::path& script_dir) {
  std::string key = file.native();
  key += '\0';
  key += script_dir.native();
  auto it = direct_.find(key);
  if (it != direct_.end()) {
    return it->second;
  }
  std::vector<fs::path> found;
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  if (!ec && size <= kMaxScannedModule) {
    if (auto text = readFile(file)) {
      found = cache::localImports(file, *text, script_dir, dir_);
    }
  }
  return direct_.emplace(std::move(key), std::move(found)).first->second;
}

const std::vector<uint32_t>& FileTable::importsOf(const fs::path& module) {
  auto it = imports_.find(module.native());
  if (it != imports_.end()) {
    return it->second;
  }
  // Breadth first from the module; `seen` makes it cycle-safe. Python resolves absolute imports
  // from the folder of the script it runs, which is this module's.
  const fs::path script_dir = module.parent_path();
  std::vector<uint32_t> ids;
  std::unordered_set<std::string> seen{module.native()};
  std::deque<fs::path> queue{module};
  while (!queue.empty() && seen.size() < kMaxImportFiles) {
    const fs::path file = std::move(queue.front());
    queue.pop_front();
    for (const fs::path& imported : directImports(file, script_dir)) {
      if (seen.size() >= kMaxImportFiles || !seen.insert(imported.native()).second) {
        continue;
      }
      ids.push_back(moduleId(imported));
      if (cache::moduleLanguage(imported) != cache::ModuleLanguage::kNone) {
        queue.push_back(imported);
      }
    }
  }
  return imports_.emplace(module.native(), std::move(ids)).first->second;
}

std::string FileTable::addDataFiles(const Json& args, const spec::NodeSpec& node,
                                    std::vector<cache::FileDigest>& files, bool* names_paths) {
  std::string uncacheable;
  if (names_paths != nullptr) {
    *names_paths = !node.cache.inputs.empty();
  }
  auto add = [&](const fs::path& path, std::string label) {
    bool too_large = false;
    auto digest = data_.digest(path, &too_large);
    if (!digest && too_large) {
      if (uncacheable.empty()) {
        uncacheable = digest.error().message;
      }
      return;
    }
    files.push_back(
        cache::FileDigest{std::move(label), digest ? *digest : std::string("unreadable")});
  };
  if (args.is_object() && !args.empty()) {
    std::vector<const std::string*> strings;
    argStrings(args, 0, strings);
    std::string joined;
    for (const std::string* text : strings) {
      // Most strings are plain relative names ("report.md", "f3", "a/b.txt"): their path is
      // the folder's plus the name, and a std::filesystem::path (a parse and a normalisation,
      // a third of a native node's key time in the 10k benchmark) is only built for one that
      // exists.
      fs::path path;  // the slow way's
      const char* where = nullptr;
      if (plain_dir_ && plainRelative(*text)) {
        if (std::string_view(*text).substr(0, text->find('/')) == ".openexpertise") {
          continue;  // the store's folder, as insideExperience says
        }
        joined.assign(dir_.native());
        joined += '/';
        joined += *text;
        where = joined.c_str();
      } else {
        path = fs::path(*text);
        path = (path.is_relative() ? dir_ / path : path).lexically_normal();
        if (!cache::insideExperience(path, dir_)) {
          continue;  // not a path of the experience
        }
        where = path.c_str();
      }
      if (names_paths != nullptr) {
        *names_paths = true;
      }
      struct stat st {};
      if (::stat(where, &st) != 0) {
        continue;  // nothing there (yet)
      }
      add(path.empty() ? fs::path(joined) : path, *text);
    }
  }
  for (const std::string& glob : node.cache.inputs) {
    bool truncated = false;
    for (const fs::path& match : globMatches(dir_, glob, kMaxInputMatches, &truncated)) {
      add(match, match.lexically_relative(dir_).generic_string());
    }
    if (truncated && uncacheable.empty()) {
      uncacheable = "cache.inputs \"" + glob + "\" matches more than " +
                    std::to_string(kMaxInputMatches) +
                    " paths, too many to hash for the cache key; narrow the glob, or name a "
                    "folder (hashed as a whole)";
    }
  }
  return uncacheable;
}

const FileTable::KindEntry& FileTable::kindEntry(const plugins::LoadedKind* kind) {
  const void* library = kind != nullptr ? kind->library.get() : nullptr;
  auto it = kinds_.find(library);
  if (it == kinds_.end()) {
    std::string text = "null";
    if (library != nullptr) {
      const plugins::PluginLibrary& lib = *kind->library;
      text = cache::canonicalJson(
          Json{{"plugin", lib.id()}, {"version", lib.version()}, {"sha256", lib.fileSha256()}});
    }
    std::string digest = cache::sha256Hex(text);
    it = kinds_.emplace(library, KindEntry{std::move(text), std::move(digest)}).first;
  }
  return it->second;
}

std::vector<cache::FileDigest> pinFiles(FileTable& table, const std::vector<uint32_t>& ids,
                                        const spec::NodeSpec& node,
                                        const plugins::LoadedKind* kind) {
  std::vector<cache::FileDigest> files = table.filesOf(ids);
  (void)table.addDataFiles(node.args, node, files);
  if (kind != nullptr && kind->library) {
    files.push_back(cache::FileDigest{"plugin:" + kind->library->id(), table.kindDigest(kind)});
  }
  return files;
}

}  // namespace engine

Json definitionPin(const spec::Experience& experience, const plugins::PluginRegistry* plugins) {
  engine::FileTable table(experience.dir);
  return engine::buildPin(experience, [&](size_t i) {
    const spec::NodeSpec& node = experience.nodes[i];
    return engine::pinFiles(table, table.idsOf(node), node,
                            plugins != nullptr ? plugins->find(node.kind) : nullptr);
  });
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
