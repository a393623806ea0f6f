// Plugin discovery: folders in precedence order, each file found once; built-in plugins loaded,
// the others described by their manifests or loaded once trusted; names resolved with the
// built-in plugins first unless the experience overrides them.
#include "oe/plugins/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <system_error>

#include "oe/cache/cache_store.hpp"
#include "oe/plugins/plugin_isolation.hpp"
#include "oe/plugins/trust_store.hpp"

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

// One name (a kind or an LLM provider) and the plugins that offer it, in search order.
struct Candidates {
  std::vector<const PluginEntry*> entries;
  std::vector<size_t> indexes;  // the kind's index in each entry (kinds only)
};

// Who keeps `name` among `offered` (see PluginRegistry::setOverrides), and the warnings for the
// others. `what` is "kind" or "LLM provider".
size_t choose(const std::string& name, const std::vector<const PluginEntry*>& offered,
              bool overridden, const char* what, std::vector<std::string>& warnings) {
  size_t winner = 0;
  const auto builtin = std::find_if(offered.begin(), offered.end(),
                                    [](const PluginEntry* e) { return e->builtin; });
  const auto other = std::find_if(offered.begin(), offered.end(),
                                  [](const PluginEntry* e) { return !e->builtin; });
  if (builtin != offered.end()) {
    winner = static_cast<size_t>(
        (overridden && other != offered.end() ? other : builtin) - offered.begin());
  }
  const PluginEntry& kept = *offered[winner];
  for (size_t i = 0; i < offered.size(); ++i) {
    if (i == winner) {
      continue;
    }
    const PluginEntry& loser = *offered[i];
    if (kept.builtin && !loser.builtin) {
      warnings.push_back(loser.path.string() + ": " + what + " \"" + name +
                         "\" is provided by the built-in plugin " + kept.path.string() +
                         ", which keeps it; to use this plugin's instead, write `plugins: { "
                         "override: [" +
                         name + "] }` in the experience");
    } else if (!kept.builtin && loser.builtin) {
      // The experience asked for this one (plugins.override); nothing to warn about.
      continue;
    } else {
      warnings.push_back(loser.path.string() + ": " + what + " \"" + name +
                         "\" is already provided by " + kept.path.string() +
                         "; keeping that one");
    }
  }
  return winner;
}

}  // namespace

const std::string& PluginEntry::sha256() const {
  if (manifest.sha256.empty() && library) {
    return library->fileSha256();
  }
  return manifest.sha256;
}

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
  dirs.push_back(builtinDir());
  return dirs;
}

std::filesystem::path PluginRegistry::builtinDir() {
  // The build tree has the install's layout (bin/oe, lib/oe/plugins), so this one entry is the
  // install's plugin folder for an installed oe and the build tree's for a built one; an
  // installed oe never picks up plugins from the tree it was built in.
  std::filesystem::path dir = OE_BUILD_PLUGIN_DIR;
  if (auto exe_dir = executableDir()) {
    dir = exe_dir->parent_path() / OE_PLUGIN_INSTALL_SUBDIR;
  }
  std::error_code ec;
  auto canonical = std::filesystem::canonical(dir, ec);
  return ec ? dir : canonical;
}

PluginRegistry::~PluginRegistry() {
  for (const auto& library : libraries_) {
    library->detachSink(log_sink_);
  }
}

bool PluginRegistry::anyUntrusted() const {
  return std::any_of(refusals_.begin(), refusals_.end(),
                     [](const Refusal& refusal) { return refusal.untrusted; });
}

std::vector<std::string> PluginRegistry::warnings() const { return resolution_warnings_; }

void PluginRegistry::loadFrom(const std::vector<std::filesystem::path>& dirs) {
  std::set<std::filesystem::path> seen_dirs;
  std::set<std::filesystem::path> seen_files;
  const std::filesystem::path builtin_dir = builtinDir();
  // Where the plugins that are not built in run (docs/trust.md, "Process isolation").
  const Result<std::optional<Isolation>> isolation = isolationFromEnvironment();
  for (const auto& dir : dirs) {
    std::error_code ec;
    auto canonical_dir = std::filesystem::canonical(dir, ec);
    if (ec || !std::filesystem::is_directory(canonical_dir, ec) ||
        !seen_dirs.insert(canonical_dir).second) {
      continue;
    }
    // Built in by where it is, however the folder was named (OE_PLUGIN_PATH may list it too).
    const bool builtin = canonical_dir == builtin_dir;
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
      PluginEntry entry;
      entry.path = file;
      entry.builtin = builtin;
      std::string described_id;  // the manifest's plugin id: what plugins.isolation names
      if (!builtin) {
        // Its bytes decide: the manifest must describe them, the trust store must hold them.
        auto digest = cache::fileDigest(file);
        if (!digest) {
          refusals_.push_back(Refusal{file, file.string() + ": cannot be read: " +
                                                digest.error().message});
          continue;
        }
        auto described = readManifest(file, *digest);
        if (access_ == Access::kDescribe) {
          if (!described) {
            refusals_.push_back(Refusal{file, described.error().message});
            continue;
          }
          entry.manifest = std::move(*described);
          plugins_.push_back(std::move(entry));
          continue;
        }
        const Result<void> admitted =
            gate_ == nullptr
                ? Result<void>(makeError(file.string() + ": not trusted (this command has no "
                                                         "trust store to ask); review it, then "
                                                         "run: " +
                                         trustCommand(file)))
                : gate_->admit(std::filesystem::canonical(file, ec), *digest,
                               described ? &*described : nullptr);
        if (!admitted) {
          refusals_.push_back(Refusal{file, admitted.error().message, /*untrusted=*/true});
          continue;
        }
        entry.manifest.sha256 = *digest;
        if (described) {
          described_id = described->id;
        }
        if (!isolation) {
          refusals_.push_back(Refusal{file, file.string() + ": " + isolation.error().message});
          continue;
        }
      }
      // The environment (or --plugin-isolation) decides for every plugin when set; else the
      // experience's plugins.isolation (its entry for this plugin id, else its value for all);
      // else the library's trust record (oe trust --isolation); else in-process.
      bool isolated = false;
      if (!builtin && isolation) {
        std::optional<Isolation> mode = *isolation;
        if (!mode) {
          std::string asked = experience_isolation_.all;
          if (auto it = experience_isolation_.by_id.find(described_id);
              !described_id.empty() && it != experience_isolation_.by_id.end()) {
            asked = it->second;
          }
          // A value oe does not know is left to validation, which names its line (refusing the
          // plugin here would only add "unknown node kind" errors after it).
          if (auto parsed = parseIsolation(asked, "plugins.isolation"); !asked.empty() && parsed) {
            mode = *parsed;
          }
        }
        if (!mode && gate_ != nullptr) {
          const std::string recorded =
              gate_->isolationOf(std::filesystem::canonical(file, ec), entry.manifest.sha256);
          if (!recorded.empty()) {
            auto parsed = parseIsolation(recorded, "its trust record's isolation");
            if (!parsed) {
              refusals_.push_back(Refusal{file, file.string() + ": " + parsed.error().message +
                                                    "; trust it again: " + trustCommand(file)});
              continue;
            }
            mode = *parsed;
          }
        }
        isolated = mode.value_or(Isolation::kInProcess) == Isolation::kProcess;
      }
      auto opened = isolated ? openIsolated(file, log_sink_, entry.manifest.sha256)
                             : PluginLibrary::open(file, log_sink_);
      if (!opened) {
        refusals_.push_back(Refusal{file, opened.error().message});
        continue;
      }
      std::shared_ptr<PluginLibrary> lib = std::move(opened).value();
      if (!entry.manifest.sha256.empty()) {
        lib->seedFileSha256(entry.manifest.sha256);
      }
      const std::string digest = std::move(entry.manifest.sha256);
      entry.manifest = PluginManifest{};
      entry.manifest.id = lib->id();
      entry.manifest.version = lib->version();
      entry.manifest.description = lib->description();
      entry.manifest.abi_version = lib->abiVersion();
      entry.manifest.min_host_abi = lib->minHostAbi();
      entry.manifest.sha256 = digest;  // empty for a built-in library: read when needed
      for (const KindTable& table : lib->kinds()) {
        KindManifest kind;
        kind.kind = table.table.kind;
        kind.description = table.table.description != nullptr ? table.table.description : "";
        kind.flags = table.table.flags;
        if (table.table.spec_schema_json != nullptr) {
          kind.spec_schema_json = table.table.spec_schema_json;
        }
        entry.manifest.kinds.push_back(std::move(kind));
      }
      entry.provider = lib->llmProvider();
      entry.manifest.llm_providers = lib->llmProviders();
      entry.library = lib;
      plugins_.push_back(std::move(entry));
      libraries_.push_back(std::move(lib));
    }
  }
  resolve();
}

void PluginRegistry::setOverrides(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  if (names == overrides_) {
    return;
  }
  overrides_ = std::move(names);
  resolve();
}

void PluginRegistry::resolve() {
  kinds_.clear();
  providers_.clear();
  resolution_warnings_.clear();
  std::map<std::string, Candidates, std::less<>> kinds;
  std::map<std::string, std::vector<const PluginEntry*>, std::less<>> providers;
  for (const PluginEntry& entry : plugins_) {
    for (size_t i = 0; i < entry.manifest.kinds.size(); ++i) {
      Candidates& offered = kinds[entry.manifest.kinds[i].kind];
      offered.entries.push_back(&entry);
      offered.indexes.push_back(i);
    }
    for (const std::string& name : entry.manifest.llm_providers) {
      auto& offered = providers[name];
      // A plugin that lists a name twice offers it once.
      if (std::find(offered.begin(), offered.end(), &entry) == offered.end()) {
        offered.push_back(&entry);
      }
    }
  }
  const auto overridden = [this](const std::string& name) {
    return std::binary_search(overrides_.begin(), overrides_.end(), name);
  };
  // Warnings in search order of the plugins they name, as they were reported when the first
  // provider simply won.
  for (const auto& [name, offered] : kinds) {
    const size_t winner =
        choose(name, offered.entries, overridden(name), "kind", resolution_warnings_);
    const PluginEntry& entry = *offered.entries[winner];
    const size_t index = offered.indexes[winner];
    LoadedKind loaded{entry.library, nullptr, nullptr, &entry, &entry.manifest.kinds[index]};
    if (entry.library) {
      const KindTable& table = entry.library->kinds()[index];
      loaded.kind = &table.table;
      loaded.descriptor = table.descriptor;
    }
    kinds_.emplace(name, std::move(loaded));
  }
  for (const auto& [name, offered] : providers) {
    const size_t winner = choose(name, offered, overridden(name), "LLM provider",
                                 resolution_warnings_);
    providers_.emplace(name, LoadedProvider{offered[winner], offered[winner]->provider});
  }
}

const LoadedKind* PluginRegistry::find(std::string_view kind) const {
  auto it = kinds_.find(kind);
  return it == kinds_.end() ? nullptr : &it->second;
}

const LoadedProvider* PluginRegistry::provider(std::string_view name) const {
  auto it = providers_.find(name);
  return it == providers_.end() ? nullptr : &it->second;
}

std::string PluginRegistry::contestedContext() const {
  std::string out;
  std::map<std::string, std::vector<const PluginEntry*>, std::less<>> offered;
  for (const PluginEntry& entry : plugins_) {
    for (const KindManifest& kind : entry.manifest.kinds) {
      offered[kind.kind].push_back(&entry);
    }
  }
  for (const auto& [name, entries] : offered) {
    const bool builtin = std::any_of(entries.begin(), entries.end(),
                                     [](const PluginEntry* e) { return e->builtin; });
    if (!builtin || entries.size() < 2) {
      continue;
    }
    for (const PluginEntry* entry : entries) {
      if (entry->builtin) {
        continue;
      }
      for (const KindManifest& kind : entry->manifest.kinds) {
        if (kind.kind == name) {
          out += "contested " + name + " " + entry->path.string() + "\n" +
                 kind.spec_schema_json.value_or("-") + "\n";
        }
      }
    }
  }
  return out;
}

}  // namespace oe::plugins
