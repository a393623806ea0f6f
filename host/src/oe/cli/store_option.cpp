// resolveStore, openStore: the precedence of --store, OE_STORE and runtime.store.
#include "oe/cli/store_option.hpp"

#include <cstdlib>
#include <iostream>

#include "oe/cli/app.hpp"
#include "oe/cli/common.hpp"
#include "oe/common/diagnostic.hpp"
#include "oe/spec/loader.hpp"

#include "oe/pgstore/scope.hpp"
#include "oe/pgstore/store_connection.hpp"

namespace oe::cli {

void addStoreOption(CLI::App& cmd, std::string& store) {
  cmd.add_option("--store", store,
                 "A PostgreSQL URL (postgresql://...): state, cache, events and run records in "
                 "that database, shared by machines (default: OE_STORE, runtime.store, else the "
                 "experience's SQLite files)");
}

std::string resolveStore(const std::string& flag, const Json* experience_raw) {
  if (!flag.empty()) {
    return flag;
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read only, before any thread starts
  if (const char* env = std::getenv("OE_STORE"); env != nullptr && *env != '\0') {
    return env;
  }
  if (experience_raw != nullptr && experience_raw->is_object()) {
    const auto runtime = experience_raw->find("runtime");
    if (runtime != experience_raw->end() && runtime->is_object()) {
      const auto store = runtime->find("store");
      if (store != runtime->end() && store->is_string()) {
        return store->get<std::string>();
      }
    }
  }
  return {};
}

std::optional<ExperienceStore> experienceStore(const std::string& experience_arg,
                                               const std::string& flag, bool& failed) {
  failed = false;
  const auto yaml = spec::resolveExperiencePath(experience_arg);
  auto loaded = spec::loadExperience(yaml);
  if (!loaded.experience || hasErrors(loaded.diagnostics)) {
    if (pg::isUrl(resolveStore(flag, nullptr))) {
      std::cerr << "oe: " << yaml.string()
                << " does not load, so its store scope (its name:) is unknown: run `oe validate` "
                   "on it\n";
      failed = true;
    }
    return std::nullopt;
  }
  if (std::string url = resolveStore(flag, &loaded.experience->raw); pg::isUrl(url)) {
    return ExperienceStore{std::move(url),
                           pgstore::storeScope(loaded.experience->name, loaded.experience->file)};
  }
  return std::nullopt;
}

Result<std::unique_ptr<pg::Connection>> openStore(const std::string& url) {
  return pgstore::connect(url, pgstore::storeRetry(), "oe");
}

std::unique_ptr<pg::Connection> openHoldingScope(const std::string& url, const std::string& scope,
                                                 std::string_view doing) {
  auto conn = openStore(url);
  if (!conn) {
    std::cerr << "oe: " << conn.error().message << '\n';
    return nullptr;
  }
  if (auto held = pgstore::holdScope(**conn, scope); !held) {
    std::cerr << "oe: cannot " << doing << ": " << held.error().message << '\n';
    return nullptr;
  }
  return std::move(conn).value();
}

std::optional<pgstore::RunInfo> resolveStoreRun(pg::Connection& conn, const std::string& id,
                                                bool last, const std::string& experience_arg) {
  std::string wanted = id;
  if (last) {
    auto experience = loadOnly(experience_arg);
    if (!experience) {
      return std::nullopt;
    }
    const std::string scope = pgstore::storeScope(experience->name, experience->file);
    auto runs = pgstore::listRuns(conn, scope);
    if (!runs) {
      std::cerr << "oe: " << runs.error().message << '\n';
      return std::nullopt;
    }
    if (runs->empty()) {
      std::cerr << "oe: no runs of scope \"" << scope << "\" in " << pg::redact(conn.url())
                << " yet\n";
      return std::nullopt;
    }
    wanted = runs->back().run_id;
  } else if (wanted.empty()) {
    std::cerr << "oe: name the run (its id or a unique prefix), or pass --last\n";
    return std::nullopt;
  }
  auto run = pgstore::findRun(conn, wanted, "");
  if (!run) {
    std::cerr << "oe: " << run.error().message << '\n';
    return std::nullopt;
  }
  return std::move(*run);
}

}  // namespace oe::cli
