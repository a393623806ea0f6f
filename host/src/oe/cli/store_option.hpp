// `--store URL` of run, resume, state, reset-state and runs (docs/storage.md): which store a
// command uses, and the connection to a PostgreSQL one.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/run_record.hpp"

namespace CLI {
class App;
}

namespace oe::cli {

// Adds `--store URL` to `cmd`, into `store`.
void addStoreOption(CLI::App& cmd, std::string& store);

// The store a command uses: --store, else OE_STORE, else the experience's runtime.store (from
// `experience_raw`, which may be null). Empty = the SQLite files of the experience.
[[nodiscard]] std::string resolveStore(const std::string& flag, const Json* experience_raw);

// The PostgreSQL store of the experience `experience_arg` names (--store `flag`, OE_STORE,
// runtime.store) and its scope (the experience's name); nullopt when it keeps its state in
// files. nullopt with `failed` set, after saying why, when a store is named but the experience
// does not load (its scope is unknown).
struct ExperienceStore {
  std::string url;
  std::string scope;
};
std::optional<ExperienceStore> experienceStore(const std::string& experience_arg,
                                               const std::string& flag, bool& failed);

// Connects to a PostgreSQL store (retrying as a run does) and migrates its schema; the error
// names the redacted URL.
Result<std::unique_ptr<pg::Connection>> openStore(const std::string& url);

// A connection to the store holding `scope`'s lock (for a command that changes the scope's rows:
// no run of it may be in progress), or nullptr after saying on stderr why not, the refusal as
// "oe: cannot <doing>: <who holds it>".
std::unique_ptr<pg::Connection> openHoldingScope(const std::string& url, const std::string& scope,
                                                 std::string_view doing);

// The run `oe resume`/`oe inspect` name in a PostgreSQL store: `id` (a run id or a unique prefix),
// or with `last` the newest run of the scope of the experience `experience_arg` names. nullopt
// after saying why on stderr (a bad invocation: exit 2).
std::optional<pgstore::RunInfo> resolveStoreRun(pg::Connection& conn, const std::string& id,
                                                bool last, const std::string& experience_arg);

}  // namespace oe::cli
