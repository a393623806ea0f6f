// Loading and checking an experience with its plugins (see context.hpp).
#include "oe/ops/context.hpp"

#include <iostream>
#include <map>

#include "oe/cache/cache_store.hpp"
#include "oe/common/diagnostic.hpp"
#include "oe/common/file.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/file_check.hpp"
#include "oe/spec/snapshot.hpp"

namespace oe::ops {

using run::kindCatalog;

void StderrLog::write(oe_log_level level, std::string_view source, std::string_view message) {
  const char* tag = level >= OE_LOG_ERROR ? "error" : level >= OE_LOG_WARN ? "warning" : "info";
  if (level < OE_LOG_INFO) {
    return;
  }
  std::string line = "oe: " + std::string(tag) + ": [" + std::string(source) + "] ";
  line += message;
  if (divert_) {
    divert_(std::move(line));
    return;
  }
  std::cerr << line << '\n';
}

void loadPlugins(plugins::PluginRegistry& registry,
                 const std::optional<std::filesystem::path>& experience_dir) {
  registry.loadFrom(plugins::PluginRegistry::searchPath(experience_dir));
}

void reportPluginProblems(const plugins::PluginRegistry& registry) {
  for (const auto& refusal : registry.refusals()) {
    std::cerr << "oe: warning: refused plugin " << refusal.reason << '\n';
  }
  for (const auto& warning : registry.warnings()) {
    std::cerr << "oe: warning: " << warning << '\n';
  }
}

const spec::Experience* Checked::model() const {
  return loaded.experience ? &*loaded.experience : loaded.partial ? &*loaded.partial : nullptr;
}

Checked checkExperience(const std::filesystem::path& path_arg, plugins::PluginRegistry& registry,
                        bool strict, bool report_problems) {
  Checked out;
  out.loaded = spec::loadExperience(spec::resolveExperiencePath(path_arg));
  spec::KindCatalog catalog;
  if (const spec::Experience* model = out.model()) {
    // Plugins only when there is something to check against them (not for a YAML error).
    loadPlugins(registry, model->dir);
    if (report_problems) {
      reportPluginProblems(registry);
    }
    catalog = kindCatalog(registry);
  }
  out.diagnostics = spec::checkLoaded(out.loaded, catalog, strict);
  return out;
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

Validated loadValidated(const std::filesystem::path& path_arg, plugins::PluginRegistry& registry,
                        bool strict, bool for_run, bool starts_programs) {
  Validated out;
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
      out.file = snapshot->file.string();
      out.experience = std::move(snapshot);
      return out;
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
  out.diagnostics = spec::checkLoaded(loaded, kinds, strict, missing_program);
  if (model != nullptr) {
    out.file = model->file.string();
  }
  if (!loaded.experience || hasErrors(out.diagnostics)) {
    return out;
  }
  // The files nodes read beyond those they name: part of their key and pin.
  spec::attachReadFiles(*loaded.experience, kinds);
  if (for_run && catalog) {
    if (out.diagnostics.empty()) {
      // A cache: failing to save it only costs the next run the YAML parse.
      (void)spec::writeSnapshot(*loaded.experience, digest, context);
    }
    dropLoadOnlyParts(*loaded.experience);
  }
  out.experience = std::move(loaded.experience);
  return out;
}

std::string percentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4U];
      out += kHex[byte & 0x0FU];
    }
  }
  return out;
}

std::optional<std::string> percentDecode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) {
      return std::nullopt;
    }
    const int high = hex(text[i + 1]);
    const int low = hex(text[i + 2]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

}  // namespace oe::ops
