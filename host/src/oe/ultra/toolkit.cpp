// The set-up of `oe ultra` and `oe ultra-revise` (see toolkit.hpp).
#include "oe/ultra/toolkit.hpp"

#include "oe/run/run.hpp"

namespace oe::ultra {

namespace fs = std::filesystem;

Result<Toolkit> makeToolkit(ToolkitConfig config, plugins::LogSink& sink,
                            const std::function<void(const std::string&)>& warning) {
  // Upstream checks the provider before any phase: no key is exit 1, not a failed analyze.
  if (!config.llm.replay_file) {
    if (auto choice = llm::chooseProvider(config.llm); !choice) {
      return std::move(choice).error();
    }
  }
  Toolkit toolkit;
  toolkit.registry =
      std::make_unique<plugins::PluginRegistry>(&sink, plugins::Access::kExecute, config.trust);
  toolkit.registry->loadFrom(plugins::PluginRegistry::searchPath(std::nullopt));
  for (const auto& refusal : toolkit.registry->refusals()) {
    if (refusal.untrusted) {  // as before a run: stop, naming the `oe trust` command
      return makeError("refused plugin " + refusal.reason);
    }
    warning("refused plugin " + refusal.reason);
  }
  for (const auto& text : toolkit.registry->warnings()) {
    warning(text);
  }
  toolkit.kinds = run::kindCatalog(*toolkit.registry);
  auto service = llm::LlmService::create(std::move(config.llm), *toolkit.registry, {});
  if (!service) {
    return std::move(service).error();
  }
  toolkit.llm = std::move(*service);
  std::error_code ec;
  if (config.prompts_dir && !fs::is_directory(*config.prompts_dir, ec)) {
    return makeError("the prompts folder " + config.prompts_dir->string() + " does not exist");
  }
  auto prompts = loadPrompts(
      config.data_dir ? *config.data_dir / "prompts" / "ultra" : fs::path("share/oe/prompts/ultra"),
      config.prompts_dir);
  if (!prompts) {
    return std::move(prompts).error();
  }
  toolkit.prompts = std::move(*prompts);
  return toolkit;
}

nlohmann::ordered_json draftSummary(const UltraResult& result) {
  Json nodes = Json::array();
  for (const auto& sketch : result.analysis.value("node_sketches", Json::array())) {
    nodes.push_back(stringField(sketch, "id") + "(" + stringField(sketch, "kind") + ")");
  }
  Json phases = Json::array();
  for (const auto& phase : result.analysis.value("phases", Json::array())) {
    phases.push_back(stringField(phase, "id"));
  }
  nlohmann::ordered_json fields;
  fields["slug"] = result.slug;
  fields["draftDir"] = result.draft_dir.string();
  fields["phases"] = phases;
  fields["nodes"] = nodes;
  fields["open_questions"] = result.analysis.value("open_questions", Json::array());
  fields["files_written"] = result.files_written;
  fields["valid"] = result.check.valid;
  fields["validation_errors"] = result.check.errors;
  fields["next_steps"] = result.synthesis.next_steps;
  if (result.loop.rounds_run > 0 || !result.loop.critiques.empty()) {
    fields["rounds_run"] = result.loop.rounds_run;
    fields["final_score"] = result.loop.final_score ? Json(*result.loop.final_score) : Json();
  }
  return fields;
}

}  // namespace oe::ultra
