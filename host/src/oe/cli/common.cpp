// Shared command helpers (see common.hpp).
#include "oe/cli/common.hpp"

#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"

#include <fstream>
#include <iostream>

#include "oe/common/diagnostic.hpp"
#include "oe/pg/connection.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::cli {

bool resolveStoreUrl(std::string& store, std::string_view command, std::string_view hint) {
  store = resolveStore(store, /*experience_raw=*/nullptr);
  if (!pg::isUrl(store)) {
    std::cerr << command << ": "
              << (store.empty() ? std::string("no store given")
                                : "\"" + store + "\" is not a PostgreSQL URL")
              << ". Pass --store postgresql://USER@HOST/DB (or set OE_STORE)" << hint << ".\n";
    return false;
  }
  return true;
}

void printError(std::string_view message) { std::cerr << "oe: " << message << '\n'; }

void printDiagnostics(const std::vector<Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) {
    std::cerr << d.format() << '\n';
  }
}

void printErrorCount(const std::vector<Diagnostic>& diagnostics, std::string_view file) {
  const auto errors =
      std::count_if(diagnostics.begin(), diagnostics.end(),
                    [](const Diagnostic& d) { return d.severity == Severity::kError; });
  std::cerr << "oe: " << errors << (errors == 1 ? " error" : " errors");
  if (!file.empty()) {
    std::cerr << " in " << file;
  }
  std::cerr << '\n';
}

std::optional<spec::Experience> loadOnly(const std::filesystem::path& path_arg) {
  auto loaded = spec::loadExperience(spec::resolveExperiencePath(path_arg));
  printDiagnostics(loaded.diagnostics);
  if (!loaded.experience || hasErrors(loaded.diagnostics)) {
    return std::nullopt;
  }
  return std::move(loaded.experience);
}

std::optional<spec::Experience> loadValidated(const std::filesystem::path& path_arg,
                                              plugins::PluginRegistry& registry, bool strict,
                                              bool for_run, bool starts_programs) {
  ops::Validated validated =
      ops::loadValidated(path_arg, registry, strict, for_run, starts_programs);
  printDiagnostics(validated.diagnostics);
  if (!validated.experience) {
    printErrorCount(validated.diagnostics, validated.file);
    return std::nullopt;
  }
  return std::move(validated.experience);
}

std::optional<std::filesystem::path> experienceDir(const std::filesystem::path& arg) {
  const auto yaml = spec::resolveExperiencePath(arg);
  std::error_code ec;
  if (std::filesystem::is_regular_file(yaml, ec)) {
    return yaml.has_parent_path() ? yaml.parent_path() : std::filesystem::path(".");
  }
  if (yaml.filename() == "experience.yaml" && std::filesystem::is_directory(arg, ec)) {
    std::cerr << "oe: " << arg.string()
              << " is not an experience folder: it has no experience.yaml; pass the folder "
                 "with --experience DIR\n";
  } else {
    std::cerr << "oe: " << yaml.string()
              << " does not exist; pass an experience folder (or its yaml) with --experience\n";
  }
  return std::nullopt;
}

std::optional<state::StoreLock> lockForDeletion(const std::filesystem::path& db,
                                                std::string_view holder_id, std::string_view doing,
                                                std::string_view again) {
  // A holder that lets go between the refusal and the look at who it was is tried again: the
  // refusal must name a holder, and an error with none (no lock file can be made) is the
  // acquire's own.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    auto lock = state::StoreLock::acquire(db, holder_id, /*wait=*/false);
    if (lock) {
      return std::move(*lock);
    }
    if (auto holder = state::StoreLock::holder(db)) {
      std::cerr << "oe: cannot " << doing << ": " << state::StoreLock::describe(*holder)
                << " is using " << db.string() << ". Wait for it to finish (or stop it), then run "
                << again << " again.\n";
      return std::nullopt;
    }
    if (attempt == kAttempts) {
      std::cerr << "oe: cannot " << doing << ": " << lock.error().message << '\n';
      return std::nullopt;
    }
  }
}

std::optional<std::filesystem::path> experienceWorkspace(const std::filesystem::path& arg) {
  if (!experienceDir(arg)) {
    return std::nullopt;
  }
  return spec::workspaceDir(spec::resolveExperiencePath(arg));
}

void printState(std::ostream& out, const spec::Experience& experience, const Json& state) {
  bool any = false;
  for (const auto& field : experience.state.fields) {
    auto it = state.find(field.name);
    if (it == state.end()) {
      continue;
    }
    out << "  " << field.name << ": " << it->dump() << '\n';
    any = true;
  }
  if (!any) {
    out << "  (empty)\n";
  }
}

bool writeOutput(const std::string& out, std::string_view text, std::string_view option) {
  if (out.empty()) {
    std::cout << text;
    return true;
  }
  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) {
    std::cerr << "oe: cannot write " << out << ": check that its folder exists and is writable, "
              << "or pick another " << option << " path\n";
    return false;
  }
  std::cerr << "oe: wrote " << out << '\n';
  return true;
}

std::optional<RunRecord> resolveRun(const std::filesystem::path& experience_arg,
                                    std::string_view id, bool last) {
  if (id.empty() && !last) {
    std::cerr << "oe: name the run: its id, a unique prefix of it, or --last for the newest\n";
    return std::nullopt;
  }
  const auto workspace = experienceWorkspace(experience_arg);
  if (!workspace) {
    return std::nullopt;
  }
  auto run = findRun(*workspace / "runs", id, last);
  if (!run) {
    std::cerr << "oe: " << run.error().message << '\n';
    return std::nullopt;
  }
  return std::move(run).value();
}

}  // namespace oe::cli
