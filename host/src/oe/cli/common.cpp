// Shared command helpers (see common.hpp).
#include "oe/cli/common.hpp"

#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>

#include "oe/cache/cache_store.hpp"
#include "oe/common/diagnostic.hpp"
#include "oe/common/file.hpp"
#include "oe/pg/connection.hpp"
#include "oe/spec/file_check.hpp"
#include "oe/spec/snapshot.hpp"
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

void printDiagnostics(const std::vector<Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) {
    std::cerr << d.format() << '\n';
  }
}

void printErrorCount(const std::vector<Diagnostic>& diagnostics, const spec::Experience* model) {
  const auto errors =
      std::count_if(diagnostics.begin(), diagnostics.end(),
                    [](const Diagnostic& d) { return d.severity == Severity::kError; });
  std::cerr << "oe: " << errors << (errors == 1 ? " error" : " errors");
  if (model != nullptr) {
    std::cerr << " in " << model->file.string();
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

namespace {

// What a run does not need once the typed model exists: the source positions (diagnostics
// only) and the raw JSON of every node and edge (NodeSpec::raw and EdgeSpec hold them). For a
// 10,000-node graph that is about 2 KiB per node of the run's peak memory.
void dropLoadOnlyParts(spec::Experience& experience) {
  spec::compactNodes(experience);
  experience.marks.clear();
  experience.key_marks.clear();
  if (auto graph = experience.raw.find("graph");
      graph != experience.raw.end() && graph->is_object()) {
    graph->erase("nodes");
    graph->erase("edges");
  }
}

// A spec snapshot stands for a validation that ran earlier, but the programs nodes need
// (x-oe-program) are the machine's: PATH may have lost one since. True when a node of `exp` needs
// one that is not found now. Only nodes of kinds whose schema marks programs are parsed.
bool programMissing(const spec::Experience& exp, const spec::KindCatalog& catalog) {
  spec::ProgramCache found;
  std::map<std::string, bool, std::less<>> marks;  // kind -> its schema marks programs
  for (const spec::NodeSpec& node : exp.nodes) {
    auto kind = catalog.find(node.kind);
    if (kind == catalog.end() || !kind->second.schema) {
      continue;
    }
    auto [mark, inserted] = marks.try_emplace(node.kind, false);
    if (inserted) {
      mark->second = spec::marksPrograms(*kind->second.schema);
    }
    if (!mark->second) {
      continue;
    }
    const Json parsed = node.raw.is_object() ? node.raw : Json::parse(node.text, nullptr, false);
    if (!spec::checkPrograms(*kind->second.schema, parsed, exp.dir, found).empty()) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<spec::Experience> loadValidated(const std::filesystem::path& path_arg,
                                              plugins::PluginRegistry& registry, bool strict,
                                              bool for_run, bool starts_programs) {
  const auto yaml_path = spec::resolveExperiencePath(path_arg);
  std::optional<std::string> text;
  std::string context;
  std::optional<spec::KindCatalog> catalog;
  spec::LoadResult loaded;
  std::string digest;
  // A file past the loader's size bound is not read into memory only to be refused.
  std::error_code size_ec;
  const auto size = std::filesystem::file_size(yaml_path, size_ec);
  const bool readable_size = size_ec || size <= spec::LoadLimits{}.max_bytes;
  if (for_run && readable_size && (text = readFile(yaml_path))) {
    // The plugins come first here: the snapshot is only good for the same kinds and schemas.
    std::error_code ec;
    const auto file = std::filesystem::absolute(yaml_path, ec);
    loadPlugins(registry, (ec ? yaml_path : file).parent_path());
    catalog = kindCatalog(registry);
    context = spec::snapshotContext(*catalog, strict);
    digest = cache::sha256Hex(*text);
    text.reset();  // not held while the snapshot loads: the run's peak memory
    // A missing program sends the run through the full check below, which names it and its
    // line (a snapshot has no positions).
    if (auto snapshot = spec::readSnapshot(yaml_path, digest, context);
        snapshot && !(starts_programs && programMissing(*snapshot, *catalog))) {
      reportPluginProblems(registry);
      spec::attachReadFiles(*snapshot, *catalog);
      dropLoadOnlyParts(*snapshot);
      return snapshot;
    }
    // Changed since the snapshot (or none yet): read it again, and digest what is parsed.
    if ((text = readFile(yaml_path))) {
      digest = cache::sha256Hex(*text);
    }
  }
  if (text) {
    loaded = spec::loadExperienceText(*text, yaml_path);
  } else {
    loaded = spec::loadExperience(yaml_path);  // reports why it cannot be read
  }
  // Structural and reference errors together (spec::checkLoaded), as `oe validate` reports
  // them: a partial model is checked against the plugins too.
  const spec::Experience* model = loaded.experience ? &*loaded.experience
                                  : loaded.partial  ? &*loaded.partial
                                                    : nullptr;
  if (model != nullptr && !catalog) {
    loadPlugins(registry, model->dir);
  }
  if (model != nullptr) {
    reportPluginProblems(registry);
  }
  // Before a run, a program a node needs and PATH lacks is an error (oe validate: a warning);
  // before a run that starts none, it does not matter.
  spec::KindCatalog built;  // without a snapshot's catalog
  const spec::ProgramCheck missing_program =
      !for_run ? spec::ProgramCheck(Severity::kWarning)
               : (starts_programs ? spec::ProgramCheck(Severity::kError) : std::nullopt);
  if (!catalog && model != nullptr) {
    built = kindCatalog(registry);
  }
  const spec::KindCatalog& kinds = catalog ? *catalog : built;
  const auto diagnostics = spec::checkLoaded(loaded, kinds, strict, missing_program);
  printDiagnostics(diagnostics);
  if (!loaded.experience || hasErrors(diagnostics)) {
    printErrorCount(diagnostics, model);
    return std::nullopt;
  }
  // The files nodes read beyond those they name: part of their key and pin.
  spec::attachReadFiles(*loaded.experience, kinds);
  if (for_run && catalog) {
    if (diagnostics.empty()) {
      // A cache: failing to save it only costs the next run the YAML parse.
      (void)spec::writeSnapshot(*loaded.experience, digest, context);
    }
    dropLoadOnlyParts(*loaded.experience);
  }
  return std::move(loaded.experience);
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
