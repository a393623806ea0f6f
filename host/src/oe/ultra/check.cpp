// See check.hpp.
#include "oe/ultra/check.hpp"

#include "oe/llm/stand_in.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"

namespace oe::ultra {
namespace fs = std::filesystem;

namespace {

std::string withoutPrefix(std::string text, const std::string& prefix) {
  for (size_t pos = 0; (pos = text.find(prefix, pos)) != std::string::npos;) {
    text.erase(pos, prefix.size());
  }
  return text;
}

}  // namespace

DraftCheck checkDraft(const Synthesis& synthesis, const fs::path& scratch,
                      const plugins::PluginRegistry& registry, const spec::KindCatalog& kinds,
                      const CheckOptions& options) {
  DraftCheck check;
  check.preflight = pathProblems(synthesis);
  check.preflight_ok = check.preflight.empty();
  std::error_code ec;
  fs::remove_all(scratch, ec);
  Synthesis writable = synthesis;
  if (!check.preflight_ok) {
    // Validate what can be validated: the yaml, without the files oe refuses to write.
    writable.files.clear();
  }
  if (auto written = writeDraft(scratch, writable); !written) {
    check.errors.push_back(written.error().message);
    fs::remove_all(scratch, ec);
    return check;
  }
  const std::string prefix = scratch.string() + "/";
  const auto loaded = spec::loadExperience(scratch / "experience.yaml");
  for (const auto& d : spec::checkLoaded(loaded, kinds, /*strict=*/false)) {
    if (d.severity == Severity::kError) {
      check.errors.push_back(withoutPrefix(d.format(), prefix));
    }
  }
  if (check.errors.empty() && options.smoke && loaded.experience) {
    run::RunOptions run_options;
    run_options.llm.stand_in = true;
    for (const auto& node : loaded.experience->nodes) {
      if (node.kind == "cli-agent") {
        run_options.llm.stand_in_cli_stdout[node.id] = llm::standInCliStdout(node.raw);
      }
    }
    run_options.llm.env = options.env;
    run_options.use_cache = false;
    auto summary = run::runExperience(*loaded.experience, registry, run_options);
    check.smoke_ran = true;
    if (!summary) {
      check.smoke_status = "not started";
      check.errors.push_back("smoke run: the draft could not start: " +
                             withoutPrefix(summary.error().message, prefix));
    } else {
      check.smoke_status = std::string(run::toString(summary->status));
      for (const auto& failure : summary->failures) {
        check.errors.push_back("smoke run: node \"" + failure.node_id +
                               "\" failed: " + withoutPrefix(failure.error, prefix));
      }
      if (summary->status != run::RunStatus::kSuccess && summary->failures.empty()) {
        check.errors.push_back(
            "smoke run: the run ended " + check.smoke_status +
            (summary->stop_reason.empty() ? "" : " (" + summary->stop_reason + ")"));
      }
    }
  }
  check.valid = check.errors.empty() && check.preflight_ok;
  fs::remove_all(scratch, ec);
  return check;
}

DraftNames draftNames(const Synthesis& synthesis) {
  DraftNames names;
  const auto loaded = spec::loadExperienceText(synthesis.experience_yaml, "experience.yaml");
  const spec::Experience* model = loaded.experience ? &*loaded.experience
                                  : loaded.partial  ? &*loaded.partial
                                                    : nullptr;
  if (model != nullptr) {
    for (const auto& node : model->nodes) {
      names.node_ids.push_back(node.id);
    }
    for (const auto& field : model->state.fields) {
      names.state_fields.push_back(field.name);
    }
  }
  names.files.emplace_back("experience.yaml");
  for (const auto& file : synthesis.files) {
    if (auto guarded = guardedPath(file.path)) {
      names.files.push_back(*guarded);
    }
  }
  return names;
}

}  // namespace oe::ultra
