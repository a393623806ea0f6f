// `oe cache ls` (what `ls .openexpertise/cache/` showed upstream) and `oe cache clear --yes`.
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>

#include "oe/cache/cache_store.hpp"
#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/pgstore/pg_cache.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"
#include "oe/state/store_lock.hpp"

namespace oe::cli {
namespace {

constexpr size_t kKeyPrefix = 12;

std::filesystem::path cacheDir(const std::string& experience) {
  return spec::workspaceDir(spec::resolveExperiencePath(experience)) / "cache";
}

// Prints `entries` (as JSON, or a table ending with a total and `where` they are).
void printEntries(const std::vector<cache::CacheEntry>& entries, const std::string& where,
                  bool json) {
  if (json) {
    Json out = Json::array();
    for (const auto& e : entries) {
      out.push_back({{"key", e.key},
                     {"node_id", e.node_id},
                     {"run_id", e.run_id},
                     {"created_at", e.created_at},
                     {"size_bytes", e.size_bytes},
                     {"last_used_run", e.last_used_run.empty() ? Json() : Json(e.last_used_run)},
                     {"last_used_at", e.last_used_at.empty() ? Json() : Json(e.last_used_at)}});
    }
    std::cout << out.dump(2) << '\n';
    return;
  }
  size_t node_width = 4;
  size_t run_width = 3;
  uint64_t total = 0;
  for (const auto& e : entries) {
    node_width = std::max(node_width, e.node_id.size());
    run_width = std::max(run_width, e.run_id.size());
    total += e.size_bytes;
  }
  const auto w = [](size_t n) { return std::setw(static_cast<int>(n)); };
  std::cout << std::left << w(kKeyPrefix) << "KEY" << "  " << w(node_width) << "NODE" << "  "
            << w(run_width) << "RUN" << "  " << w(24) << "CREATED" << "  " << std::right << w(10)
            << "SIZE" << "  LAST USED BY\n";
  for (const auto& e : entries) {
    std::cout << std::left << w(kKeyPrefix) << e.key.substr(0, kKeyPrefix) << "  "
              << w(node_width) << e.node_id << "  " << w(run_width) << e.run_id << "  " << w(24)
              << e.created_at << "  " << std::right << w(10) << humanBytes(e.size_bytes) << "  "
              << (e.last_used_run.empty() ? "-" : e.last_used_run) << '\n';
  }
  std::cout << entries.size() << (entries.size() == 1 ? " entry, " : " entries, ")
            << humanBytes(total) << " of outputs in " << where << '\n';
}

int listEntries(const std::filesystem::path& dir, bool json) {
  std::error_code ec;
  if (!std::filesystem::exists(dir / "cache.sqlite", ec)) {
    // Opening would create an empty cache: a listing must not write anything.
    if (json) {
      std::cout << "[]\n";
    } else {
      std::cout << "no cache entries (" << dir.string() << " holds no cache.sqlite)\n";
    }
    return kExitOk;
  }
  auto store = cache::CacheStore::open(dir);
  if (!store) {
    std::cerr << "oe: " << store.error().message << '\n';
    return kExitFailed;
  }
  printEntries((*store)->list(), (*store)->path().string(), json);
  return kExitOk;
}

int listStoreEntries(const ExperienceStore& store, bool json) {
  auto conn = openStore(store.url);
  if (!conn) {
    std::cerr << "oe: " << conn.error().message << '\n';
    return kExitFailed;
  }
  auto entries = pgstore::scopeCacheEntries(**conn, store.scope);
  if (!entries) {
    std::cerr << "oe: " << entries.error().message << '\n';
    return kExitFailed;
  }
  printEntries(*entries, pg::redact(store.url) + " (scope \"" + store.scope + "\")", json);
  return kExitOk;
}

// The scope's entries go, unless a coordinator holds the scope (its run may be writing them).
int clearStoreEntries(const ExperienceStore& store) {
  auto conn = openHoldingScope(store.url, store.scope, "clear the cache");
  if (!conn) {
    return kExitFailed;
  }
  auto removed = pgstore::clearScopeCache(*conn, store.scope);
  if (!removed) {
    std::cerr << "oe: " << removed.error().message << '\n';
    return kExitFailed;
  }
  std::cout << "removed " << *removed << (*removed == 1 ? " entry" : " entries")
            << " of scope \"" << store.scope << "\" from " << pg::redact(store.url) << '\n';
  return kExitOk;
}

}  // namespace

void addCacheCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string experience = ".";
    bool json = false;
    bool yes = false;
    std::string store;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("cache", "List or clear the node cache (.openexpertise/cache, or oe_cache)");
  cmd->require_subcommand(1);

  CLI::App* ls = cmd->add_subcommand("ls", "List the cache entries, oldest first");
  ls->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  ls->add_flag("--json", a->json, "Print a JSON array");
  addStoreOption(*ls, a->store);
  ls->callback([a, &exit_code] {
    bool failed = false;
    if (auto store = experienceStore(a->experience, a->store, failed)) {
      exit_code = listStoreEntries(*store, a->json);
    } else {
      exit_code = failed ? kExitFailed : listEntries(cacheDir(a->experience), a->json);
    }
  });

  CLI::App* clear = cmd->add_subcommand(
      "clear", "Delete the cache folder (every entry; on a PostgreSQL store, the scope's)");
  clear->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  clear->add_flag("--yes", a->yes, "Confirm the deletion");
  addStoreOption(*clear, a->store);
  clear->callback([a, &exit_code] {
    bool failed = false;
    auto store = experienceStore(a->experience, a->store, failed);
    if (failed) {
      exit_code = kExitFailed;
      return;
    }
    if (store) {
      if (!a->yes) {
        std::cerr << "oe: cache clear requires --yes to confirm destructive action\n";
      }
      exit_code = a->yes ? clearStoreEntries(*store) : kExitFailed;
      return;
    }
    const auto dir = cacheDir(a->experience);
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) {
      std::cout << "no cache to clear\n";
      exit_code = kExitOk;
      return;
    }
    if (!a->yes) {
      std::cerr << "oe: cache clear requires --yes to confirm destructive action\n";
      exit_code = kExitFailed;
      return;
    }
    // A run in progress would lose the entries it is writing (issue 10, item 4). Runs lock
    // their state store; the experience names it (state.store, D14), else the default one.
    const auto yaml = spec::resolveExperiencePath(a->experience);
    std::filesystem::path state_db = spec::workspaceDir(yaml) / "state.sqlite";
    if (auto loaded = spec::loadExperience(yaml); loaded.experience) {
      state_db = run::statePath(*loaded.experience);
    }
    const auto lock =
        lockForDeletion(state_db, "cache-clear", "clear the cache", "oe cache clear --yes");
    if (!lock) {
      exit_code = kExitFailed;
      return;
    }
    const auto removed = std::filesystem::remove_all(dir, ec);
    if (ec) {
      std::cerr << "oe: cannot remove " << dir.string() << ": " << ec.message() << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::cout << "removed " << dir.string() << " (" << removed << " files)\n";
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli
