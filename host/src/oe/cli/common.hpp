// Pieces shared by the commands: loading an experience with its plugins, printing diagnostics
// and values the same way everywhere.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "oe/common/json.hpp"
#include "oe/ops/context.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/experience.hpp"
#include "oe/spec/loader.hpp"
#include "oe/state/store_lock.hpp"

namespace oe::cli {

// For the commands that need PostgreSQL: --store, else OE_STORE, must be a PostgreSQL URL; false
// (and the message on stderr, prefixed with `command`, ending with `hint`) when it is not.
bool resolveStoreUrl(std::string& store, std::string_view command, std::string_view hint = "");

using ops::Checked;
using ops::checkExperience;
using ops::loadPlugins;
using ops::percentDecode;
using ops::percentEncode;
using ops::reportPluginProblems;
using ops::StderrLog;
using run::kindCatalog;  // (run.hpp) what validation needs of the loaded plugins

// ops::loadValidated, with every diagnostic printed to stderr. nullopt when there was an error
// (the diagnostics say which, then the count).
std::optional<spec::Experience> loadValidated(const std::filesystem::path& path_arg,
                                              plugins::PluginRegistry& registry, bool strict,
                                              bool for_run = false, bool starts_programs = true);

// Each diagnostic on stderr, one per line.
void printDiagnostics(const std::vector<Diagnostic>& diagnostics);
// "oe: N errors[ in <file>]" on stderr, after the diagnostics (`file`: empty when unknown).
void printErrorCount(const std::vector<Diagnostic>& diagnostics, std::string_view file);

// Loads the yaml only (state/inspect/reset-state need the folder and the schema, not plugins).
std::optional<spec::Experience> loadOnly(const std::filesystem::path& path_arg);

// The folder of the experience that `arg` names (a folder with experience.yaml, or the yaml
// file); nullopt, after saying why on stderr, when there is none there: `oe runs`, `oe inspect`
// and `oe resume` of a wrong folder are bad invocations (exit 2), not empty histories.
std::optional<std::filesystem::path> experienceDir(const std::filesystem::path& arg);
// The same check, then the folder of that experience file's stores (spec::workspaceDir):
// `.openexpertise/` for experience.yaml, `.openexpertise/<file name>/` for another file.
std::optional<std::filesystem::path> experienceWorkspace(const std::filesystem::path& arg);

// `text` to stdout when `out` is empty, else into the file `out` ("oe: wrote <out>" on stderr).
// False, after saying on stderr what to do (`option` names the flag), when the file cannot be
// written.
bool writeOutput(const std::string& out, std::string_view text, std::string_view option);

// The lock of the SQLite state store at `db`, held by a command that deletes what a run uses
// (`oe reset-state`, `oe cache clear`, `oe gc`) for as long as it deletes: a run starting
// meanwhile is refused (or waits, with --wait) instead of finding its files gone under it.
// `holder_id` names the command in the lock file, so that the refused run can say who holds it.
// nullopt, after "oe: cannot <doing>: <run> is using <db>. Wait for it ..., then run <again>
// again." on stderr, when a run holds it.
std::optional<state::StoreLock> lockForDeletion(const std::filesystem::path& db,
                                                std::string_view holder_id, std::string_view doing,
                                                std::string_view again);

// "oe: <message>" on stderr.
void printError(std::string_view message);
// True, after "oe: <its error>" on stderr, when `result` failed.
template <class T>
bool printedError(const Result<T>& result) {
  if (result) {
    return false;
  }
  printError(result.error().message);
  return true;
}

// "  field: <compact JSON>" per field, in state.schema order.
void printState(std::ostream& out, const spec::Experience& experience, const Json& state);

}  // namespace oe::cli
