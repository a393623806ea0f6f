// Plugin discovery: folders in precedence order, each file loaded once, kinds first-come.
#include "oe/plugins/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <system_error>

namespace oe::plugins {
namespace {

std::optional<std::filesystem::path> executableDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return std::nullopt;
  }
  return exe.parent_path();
}

}  // namespace

std::vector<std::filesystem::path> PluginRegistry::searchPath(
    const std::optional<std::filesystem::path>& experience_dir) {
  std::vector<std::filesystem::path> dirs;
  if (experience_dir) {
    dirs.push_back(*experience_dir / "plugins");
  }
  if (const char* env = std::getenv("OE_PLUGIN_PATH"); env != nullptr) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string_view item = rest.substr(0, colon);
      if (!item.empty()) {
        dirs.emplace_back(std::string(item));
      }
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  // The build tree has the install's layout (bin/oe, lib/oe/plugins), so this one entry is the
  // install's plugin folder for an installed oe and the build tree's for a built one; an
  // installed oe never picks up plugins from the tree it was built in.
  if (auto exe_dir = executableDir()) {
    dirs.push_back(exe_dir->parent_path() / OE_PLUGIN_INSTALL_SUBDIR);
  } else {
    dirs.emplace_back(OE_BUILD_PLUGIN_DIR);
  }
  return dirs;
}

PluginRegistry::~PluginRegistry() {
  for (const auto& library : libraries_) {
    library->detachSink(log_sink_);
  }
}

void PluginRegistry::loadFrom(const std::vector<std::filesystem::path>& dirs) {
  std::set<std::filesystem::path> seen_dirs;
  std::set<std::filesystem::path> seen_files;
  for (const auto& dir : dirs) {
    std::error_code ec;
    auto canonical_dir = std::filesystem::canonical(dir, ec);
    if (ec || !std::filesystem::is_directory(canonical_dir, ec) ||
        !seen_dirs.insert(canonical_dir).second) {
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(canonical_dir, ec)) {
      if (entry.path().extension() == ".so" && !entry.is_directory()) {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());  // a stable order makes "first provider wins" stable
    for (const auto& file : files) {
      if (!seen_files.insert(file).second) {
        continue;
      }
      auto opened = PluginLibrary::open(file, log_sink_);
      if (!opened) {
        refusals_.push_back(Refusal{file, opened.error().message});
        continue;
      }
      std::shared_ptr<PluginLibrary> lib = std::move(opened).value();
      for (const KindTable& entry : lib->kinds()) {
        const oe_node_kind* kind = &entry.table;
        auto existing = kinds_.find(kind->kind);
        if (existing != kinds_.end()) {
          warnings_.push_back(file.string() + ": kind \"" + kind->kind +
                              "\" is already provided by " +
                              existing->second.library->path().string() + "; keeping that one");
          continue;
        }
        kinds_.emplace(kind->kind, LoadedKind{lib, kind, entry.descriptor});
      }
      libraries_.push_back(std::move(lib));
    }
  }
}

const LoadedKind* PluginRegistry::find(std::string_view kind) const {
  auto it = kinds_.find(kind);
  return it == kinds_.end() ? nullptr : &it->second;
}

}  // namespace oe::plugins
