// `oe trust`: records plugin libraries that are not built in (by path and SHA-256) in the user's
// trust store, after showing what each is from its manifest, so that a run loads them; lists and
// removes records (docs/trust.md). Nothing here loads a plugin.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/plugins/manifest.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/plugins/trust_store.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;

// The libraries `arg` names: a library; an experience folder's plugins/; a folder of libraries.
// Canonical paths, sorted. The error is a usage error (nothing there).
Result<std::vector<fs::path>> librariesOf(const std::string& arg) {
  std::error_code ec;
  const fs::path given = arg;
  if (!fs::exists(given, ec)) {
    return makeError(arg + " does not exist");
  }
  if (!fs::is_directory(given, ec)) {
    return std::vector<fs::path>{fs::canonical(given, ec)};
  }
  const auto sharedObjects = [](const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code list_ec;
    for (const auto& entry : fs::directory_iterator(dir, list_ec)) {
      if (entry.path().extension() == ".so" && !entry.is_directory()) {
        out.push_back(fs::canonical(entry.path(), list_ec));
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  std::vector<fs::path> found = sharedObjects(given);
  if (found.empty() && fs::is_directory(given / "plugins", ec)) {
    found = sharedObjects(given / "plugins");  // an experience folder
  }
  if (found.empty()) {
    return makeError(arg + " holds no plugin library (*.so), nor does a plugins/ folder in it");
  }
  return found;
}

// What is known of `library` without loading it, in a line or two.
std::string describe(const fs::path& library, const std::string& sha256, std::string& plugin_id) {
  auto manifest = plugins::readManifest(library, sha256);
  if (!manifest) {
    return "  what it provides is unknown until it loads: " + manifest.error().message + "\n";
  }
  plugin_id = manifest->id;
  std::string kinds;
  for (const auto& kind : manifest->kinds) {
    kinds += (kinds.empty() ? "" : ", ") + kind.kind;
  }
  std::string providers;
  for (const auto& name : manifest->llm_providers) {
    providers += (providers.empty() ? "" : ", ") + name;
  }
  return "  plugin " + manifest->id + " " + manifest->version +
         "; kinds: " + (kinds.empty() ? "-" : kinds) +
         "; LLM providers: " + (providers.empty() ? "-" : providers) + "\n" +
         (manifest->description.empty() ? "" : "  " + manifest->description + "\n");
}

int trustPaths(const std::vector<std::string>& paths, const fs::path& store,
               const std::string& isolation) {
  struct Chosen {
    fs::path path;
    std::string sha256;
    std::string plugin_id;
  };
  std::vector<Chosen> chosen;
  const fs::path builtin = plugins::PluginRegistry::builtinDir();
  for (const std::string& arg : paths) {
    auto libraries = librariesOf(arg);
    if (!libraries) {
      std::cerr << "oe trust: " << libraries.error().message << '\n';
      return kExitUsage;
    }
    for (const fs::path& library : *libraries) {
      if (library.parent_path() == builtin) {
        std::cout << library.string() << " is built in: always trusted\n";
        continue;
      }
      auto digest = cache::fileDigest(library);
      if (!digest) {
        std::cerr << "oe trust: cannot read " << library.string() << ": " << digest.error().message
                  << '\n';
        return kExitFailed;
      }
      Chosen item{library, *digest, ""};
      const std::string what = describe(library, item.sha256, item.plugin_id);
      std::cout << "trusting " << library.string() << '\n'
                << what << "  sha256 " << item.sha256 << '\n';
      chosen.push_back(std::move(item));
    }
  }
  if (chosen.empty()) {
    return kExitOk;
  }
  auto written = plugins::updateTrustStore(store, [&](std::vector<plugins::TrustRecord>& records) {
    for (const Chosen& item : chosen) {
      std::erase_if(records,
                    [&](const plugins::TrustRecord& r) { return r.path == item.path.string(); });
      records.push_back(plugins::trustRecordNow(item.path, item.sha256, item.plugin_id));
      records.back().isolation = isolation;
    }
  });
  if (!written) {
    std::cerr << "oe trust: " << written.error().message << '\n';
    return kExitFailed;
  }
  std::cout << "trusted " << chosen.size() << (chosen.size() == 1 ? " library" : " libraries")
            << " in " << store.string()
            << " (by SHA-256: once rebuilt or replaced, a library must be trusted again)\n";
  return kExitOk;
}

int removePaths(const std::vector<std::string>& paths, const fs::path& store) {
  std::vector<std::string> prefixes;
  for (const std::string& arg : paths) {
    std::error_code ec;
    fs::path path = fs::weakly_canonical(fs::absolute(arg, ec), ec);
    prefixes.push_back(path.string());
  }
  size_t removed = 0;
  auto written = plugins::updateTrustStore(store, [&](std::vector<plugins::TrustRecord>& records) {
    removed = std::erase_if(records, [&](const plugins::TrustRecord& r) {
      return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& prefix) {
        // The library itself, or anything under a folder (an experience, its plugins/).
        return r.path == prefix || r.path.starts_with(prefix + "/");
      });
    });
  });
  if (!written) {
    std::cerr << "oe trust: " << written.error().message << '\n';
    return kExitFailed;
  }
  std::cout << "removed " << removed << (removed == 1 ? " record" : " records") << " from "
            << store.string() << '\n';
  return kExitOk;
}

int listRecords(const fs::path& store, bool json) {
  auto records = plugins::readTrustStore(store);
  if (!records) {
    std::cerr << "oe trust: " << records.error().message << '\n';
    return kExitFailed;
  }
  Json list = Json::array();
  for (const plugins::TrustRecord& record : *records) {
    std::string state = "gone";
    if (auto digest = cache::fileDigest(record.path)) {
      state = *digest == record.sha256 ? "trusted" : "changed since it was trusted";
    }
    list.push_back({{"path", record.path},
                    {"sha256", record.sha256},
                    {"plugin", record.plugin_id},
                    {"trusted_at", record.trusted_at},
                    {"state", state}});
    if (!record.isolation.empty()) {
      list.back()["isolation"] = record.isolation;
    }
    if (!json) {
      std::cout << record.path << "  " << record.sha256.substr(0, 12) << "  "
                << (record.plugin_id.empty() ? "-" : record.plugin_id) << "  " << record.trusted_at
                << "  " << state << '\n';
    }
  }
  if (json) {
    std::cout << list.dump(2) << '\n';
  } else if (records->empty()) {
    std::cout << "nothing trusted in " << store.string() << " (oe trust PATH trusts a plugin)\n";
  }
  return kExitOk;
}

}  // namespace

void addTrustCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::vector<std::string> paths;
    bool list = false;
    bool remove = false;
    bool json = false;
    std::string isolation;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "trust",
      "Trust plugin libraries that are not built in, so that runs load them (docs/trust.md)");
  cmd->add_option("path", a->paths,
                  "A plugin library, a folder of them, or an experience folder (its plugins/)");
  auto* list = cmd->add_flag("--list", a->list, "List the trusted libraries");
  cmd->add_flag("--remove", a->remove, "Forget the libraries PATH names (or holds)")
      ->excludes(list);
  cmd->add_flag("--json", a->json, "With --list: print a JSON array")->needs(list);
  cmd->add_option("--isolation", a->isolation,
                  "Where runs load them: process (a helper process of their own) or in-process "
                  "(docs/trust.md, \"Process isolation\")")
      ->check(CLI::IsMember({"process", "in-process"}))
      ->excludes(list);
  cmd->callback([a, &exit_code] {
    const auto store = plugins::trustStorePath();
    if (!store) {
      std::cerr << "oe trust: no trust store: set HOME, XDG_CONFIG_HOME or OE_TRUST_FILE\n";
      exit_code = kExitUsage;
      return;
    }
    if (a->list) {
      if (!a->paths.empty()) {
        std::cerr << "oe trust: --list takes no PATH\n";
        exit_code = kExitUsage;
        return;
      }
      exit_code = listRecords(*store, a->json);
      return;
    }
    if (a->paths.empty()) {
      std::cerr << "oe trust: name a plugin library, a folder of them or an experience folder "
                   "(or --list)\n";
      exit_code = kExitUsage;
      return;
    }
    exit_code = a->remove ? removePaths(a->paths, *store) : trustPaths(a->paths, *store, a->isolation);
  });
}

}  // namespace oe::cli
