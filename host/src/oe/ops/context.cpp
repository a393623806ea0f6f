// Loading and checking an experience with its plugins (see context.hpp).
#include "oe/ops/context.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
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

namespace {

plugins::PluginRegistry::ExperienceIsolation askedIsolation(const spec::PluginIsolationSpec& spec) {
  return plugins::PluginRegistry::ExperienceIsolation{spec.all, spec.by_id};
}

}  // namespace

void reportPluginProblems(const plugins::PluginRegistry& registry) {
  for (const auto& refusal : registry.refusals()) {
    if (!refusal.untrusted) {
      std::cerr << "oe: warning: refused plugin " << refusal.reason << '\n';
    }
  }
  for (const auto& warning : registry.warnings()) {
    std::cerr << "oe: warning: " << warning << '\n';
  }
}

bool askOnTerminal(const plugins::TrustGate::Question& question) {
  std::string what;
  if (question.manifest != nullptr) {
    const plugins::PluginManifest& m = *question.manifest;
    std::string kinds;
    for (const auto& kind : m.kinds) {
      kinds += (kinds.empty() ? "" : ", ") + kind.kind;
    }
    std::string providers;
    for (const auto& name : m.llm_providers) {
      providers += (providers.empty() ? "" : ", ") + name;
    }
    what = "plugin " + m.id + " " + m.version + "; kinds: " + (kinds.empty() ? "-" : kinds) +
           "; LLM providers: " + (providers.empty() ? "-" : providers);
  } else {
    what = "no current manifest beside it: what it provides is known only once it loads";
  }
  std::cerr << "oe: " << question.library.string() << " is a plugin that is not built in, and "
            << (question.previous != nullptr ? "it changed since you trusted it" : "not trusted")
            << ".\n    " << what << "\n    sha256 " << question.sha256
            << "\n    Loading it runs its code with your rights.\noe: trust and load "
            << question.library.string() << "? [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) {
    std::cerr << '\n';
    return false;
  }
  std::transform(answer.begin(), answer.end(), answer.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return answer == "y" || answer == "yes";
}

std::unique_ptr<plugins::TrustGate> trustGate() {
  plugins::TrustGate::Ask ask;
  if (::isatty(STDIN_FILENO) == 1 && ::isatty(STDERR_FILENO) == 1) {
    ask = askOnTerminal;
  }
  return std::make_unique<plugins::TrustGate>(plugins::trustStorePath(), std::move(ask));
}

std::vector<plugins::TrustRecord> userTrustRecords() {
  const auto store = plugins::trustStorePath();
  if (!store) {
    return {};
  }
  auto records = plugins::readTrustStore(*store);
  return records ? std::move(records).value() : std::vector<plugins::TrustRecord>{};
}

std::string trustLabel(const plugins::PluginEntry& entry,
                       const std::vector<plugins::TrustRecord>& records) {
  if (entry.builtin) {
    return "built in";
  }
  // Trusted by its real path, as the trust gate and `oe trust` name it.
  std::error_code ec;
  const auto real = std::filesystem::canonical(entry.path, ec);
  return std::string(
      plugins::toString(plugins::trustState(records, ec ? entry.path : real, entry.sha256())));
}

std::vector<Diagnostic> untrustedErrors(const plugins::PluginRegistry& registry) {
  std::vector<Diagnostic> out;
  for (const auto& refusal : registry.refusals()) {
    if (!refusal.untrusted) {
      continue;
    }
    Diagnostic d;
    d.file = refusal.path.string();
    d.message = refusal.reason;
    if (const std::string prefix = d.file + ": "; d.message.starts_with(prefix)) {
      d.message.erase(0, prefix.size());  // the diagnostic names the file already
    }
    out.push_back(std::move(d));
  }
  return out;
}

const spec::Experience* Checked::model() const {
  return loaded.experience ? &*loaded.experience : loaded.partial ? &*loaded.partial : nullptr;
}

namespace {

// What a check says beyond the spec's own findings: a kind nobody provides may belong to a
// plugin that was found but not read (no manifest, refused), so its message names them; and an
// override that overrides nothing is a warning.
void addPluginFindings(const spec::Experience& model, const plugins::PluginRegistry& registry,
                       std::vector<Diagnostic>& diagnostics) {
  std::string refused;
  size_t shown = 0;
  for (const auto& refusal : registry.refusals()) {
    if (shown++ < 3) {
      refused += (refused.empty() ? "" : "; ") + refusal.reason;
    }
  }
  if (registry.refusals().size() > 3) {
    refused += "; and " + std::to_string(registry.refusals().size() - 3) + " more";
  }
  if (!refused.empty()) {
    for (Diagnostic& d : diagnostics) {
      if (d.severity == Severity::kError && d.message.starts_with("unknown node kind ")) {
        d.message += " Plugins found but not read, one of which may provide it: " + refused;
      }
    }
  }
  for (size_t i = 0; i < model.plugin_overrides.size(); ++i) {
    const std::string& name = model.plugin_overrides[i];
    bool builtin_offers = false;
    bool other_offers = false;
    for (const plugins::PluginEntry& entry : registry.plugins()) {
      const bool offers =
          std::any_of(entry.manifest.kinds.begin(), entry.manifest.kinds.end(),
                      [&](const plugins::KindManifest& kind) { return kind.kind == name; }) ||
          std::find(entry.manifest.llm_providers.begin(), entry.manifest.llm_providers.end(),
                    name) != entry.manifest.llm_providers.end();
      (entry.builtin ? builtin_offers : other_offers) |= offers;
    }
    if (builtin_offers && other_offers) {
      continue;  // the override takes effect
    }
    const std::string pointer = "/plugins/override/" + std::to_string(i);
    const spec::Mark at = model.markOf(pointer);
    Diagnostic d;
    d.severity = Severity::kWarning;
    d.file = model.source_name.empty() ? model.file.string() : model.source_name;
    d.line = at.line;
    d.column = at.column;
    d.field = "plugins.override[" + std::to_string(i) + "]";
    d.message = !builtin_offers
                    ? "no built-in plugin provides a kind or LLM provider \"" + name +
                          "\", so there is nothing to override"
                    : "no plugin of this experience (its plugins/ folder, OE_PLUGIN_PATH) "
                      "provides \"" + name + "\", so the built-in one is used";
    diagnostics.push_back(std::move(d));
  }
}

}  // namespace

Checked checkExperience(const std::filesystem::path& path_arg, plugins::PluginRegistry& registry,
                        bool strict, bool report_problems) {
  Checked out;
  out.loaded = spec::loadExperience(spec::resolveExperiencePath(path_arg));
  spec::KindCatalog catalog;
  const spec::Experience* model = out.model();
  if (model != nullptr) {
    // Plugins only when there is something to check against them (not for a YAML error).
    registry.setExperienceIsolation(askedIsolation(model->plugin_isolation));
    loadPlugins(registry, model->dir);
    registry.setOverrides(model->plugin_overrides);
    if (report_problems) {
      reportPluginProblems(registry);
    }
    catalog = kindCatalog(registry);
  }
  out.diagnostics = spec::checkLoaded(out.loaded, catalog, strict);
  if (model != nullptr) {
    addPluginFindings(*model, registry, out.diagnostics);
  }
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
    // Where its plugins run is the one key read before they load (a snapshot needs them).
    registry.setExperienceIsolation(askedIsolation(spec::scanPluginIsolation(*text)));
    loadPlugins(registry, (ec ? yaml_path : file).parent_path());
    if (registry.anyUntrusted()) {
      out.diagnostics = untrustedErrors(registry);
      out.file = yaml_path.string();
      return out;
    }
    catalog = kindCatalog(registry);
    // The experience's plugins.override may give a kind to another plugin than the catalog's:
    // the context names every such plugin's schema too, so a snapshot stands for them all.
    context = spec::snapshotContext(*catalog, strict) + registry.contestedContext();
    digest = cache::sha256Hex(*text);
    text.reset();  // not held while the snapshot loads: the run's peak memory
    // A missing program sends the run through the full check below, which names it and its
    // line (a snapshot has no positions).
    if (auto snapshot = spec::readSnapshot(yaml_path, digest, context);
        snapshot && !(starts_programs && programMissing(*snapshot, *catalog))) {
      registry.setOverrides(snapshot->plugin_overrides);
      reportPluginProblems(registry);
      if (!snapshot->plugin_overrides.empty()) {
        catalog = kindCatalog(registry);
      }
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
    registry.setExperienceIsolation(askedIsolation(model->plugin_isolation));
    loadPlugins(registry, model->dir);
    if (registry.anyUntrusted()) {
      out.diagnostics = untrustedErrors(registry);
      out.file = model->file.string();
      return out;
    }
  }
  if (model != nullptr) {
    registry.setOverrides(model->plugin_overrides);
    if (catalog && !model->plugin_overrides.empty()) {
      catalog = kindCatalog(registry);
    }
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
    addPluginFindings(*model, registry, out.diagnostics);
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
