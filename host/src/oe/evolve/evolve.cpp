// `oe evolve` end to end (see evolve.hpp).
#include "oe/evolve/evolve.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <fstream>
#include <utility>

#include "oe/common/file.hpp"
#include "oe/events/event_log.hpp"
#include "oe/evolve/advisor.hpp"
#include "oe/evolve/evaluate.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/run/run.hpp"
#include "oe/runs/run_history.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"
#include "oe/state/store_lock.hpp"

namespace oe::evolve {
namespace {

namespace fs = std::filesystem;

using InputRuns = std::vector<std::pair<std::string, Baseline>>;

// 20261125T143000Z: the backups' suffix.
std::string utcStamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

void warn(const EvolveHooks& hooks, const std::string& text) {
  if (hooks.warning) {
    hooks.warning(text);
  }
}

// The plugins an experience can use (its own plugins/ folder first), their problems as warnings.
// A library refused as untrusted stops evolve (its error names the `oe trust` command), as it
// stops a run.
Result<void> loadPlugins(plugins::PluginRegistry& registry, const fs::path& dir,
                         const std::vector<std::string>& overrides, const EvolveHooks& hooks) {
  registry.loadFrom(plugins::PluginRegistry::searchPath(dir));
  registry.setOverrides(overrides);
  for (const auto& refusal : registry.refusals()) {
    if (refusal.untrusted) {
      return makeError("refused plugin " + refusal.reason);
    }
    warn(hooks, "refused plugin " + refusal.reason);
  }
  for (const auto& warning : registry.warnings()) {
    warn(hooks, warning);
  }
  return {};
}

// --evaluate-runs: up to `count` - 1 more finished top-level runs of the experience, newest
// first, each with args no run already in `inputs` had, and their baselines (events and state
// diff). A run whose log or history cannot be read is left out with a warning.
void addPastBaselines(const fs::path& runs_dir, const std::string& evaluated, int count,
                      const fs::path& db, const spec::StateSpec& schema, InputRuns& inputs,
                      const EvolveHooks& hooks) {
  std::vector<std::string> seen;
  for (const auto& [id, baseline] : inputs) {
    seen.push_back(baseline.args.dump());
  }
  for (const runs::RunRecord& past : runs::listRuns(runs_dir, /*details=*/true)) {
    if (static_cast<int>(inputs.size()) >= count) {
      return;
    }
    if (past.id == evaluated || !past.parent_run_id.empty() || past.status == "unfinished") {
      continue;
    }
    auto events = events::readEventLog(past.log);
    if (!events) {
      warn(hooks, "--evaluate-runs leaves run " + past.id + " out: " + events.error().message);
      continue;
    }
    auto diff = stateDiff(db, schema, past.id);
    if (!diff) {
      warn(hooks, "--evaluate-runs leaves run " + past.id + " out: " + diff.error().message);
      continue;
    }
    Baseline baseline = baselineOf(events->events, *diff);
    const std::string args = baseline.args.dump();
    if (std::find(seen.begin(), seen.end(), args) != seen.end()) {
      continue;  // the same inputs: the same evidence
    }
    seen.push_back(args);
    inputs.emplace_back(past.id, std::move(baseline));
  }
}

// Each valid proposal's candidate run once per input run; its lines go into `evaluations` (the
// report's) and its results into the sidecar's `entries`.
void evaluateProposals(const std::vector<Proposal>& proposals, const std::vector<Verdict>& verdicts,
                       const fs::path& yaml, const fs::path& evolution_dir,
                       const std::string& run_id, const InputRuns& inputs,
                       const plugins::PluginRegistry& registry, const llm::Settings& settings,
                       const EvolveHooks& hooks, std::vector<std::string>& evaluations,
                       Json& entries) {
  for (size_t i = 0; i < proposals.size(); ++i) {
    if (verdicts[i].status != VerdictStatus::kValid) {
      continue;
    }
    std::vector<std::string> notes;
    auto changes = planChanges(proposals[i], yaml, notes);
    Json results = Json::array();
    std::string lines;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const auto& [input_run, baseline] = inputs[k];
      // The first candidate keeps its place; one per further input run beside it.
      const fs::path folder =
          evolution_dir / run_id /
          ("candidate-" + std::to_string(i + 1) + (k == 0 ? "" : "-" + input_run.substr(0, 8)));
      auto evaluation = changes ? evaluate(*changes, yaml, folder, registry, settings, baseline)
                                : Result<Evaluation>(changes.error());
      std::string line;
      Json result;
      if (evaluation) {
        line = evaluation->line(baseline);
        result = evaluation->toJson();
      } else {
        line = "could not run: " + evaluation.error().message;
        result = Json{{"error", evaluation.error().message}};
      }
      if (inputs.size() > 1) {
        line = "with the args of run " + input_run + ": " + line;
        result["input_run"] = input_run;
      }
      // Each run's evidence on a line of its own, each with the prefix the report gives.
      lines += (k == 0 ? "" : "\n" + std::string(kEvaluationPrefix)) + line;
      results.push_back(std::move(result));
      if (hooks.evaluated) {
        hooks.evaluated(i + 1, line);
      }
    }
    evaluations[i] = std::move(lines);
    entries[i]["evaluation"] = inputs.size() == 1 ? results[0] : results;
  }
}

}  // namespace

Result<fs::path> experienceYaml(const fs::path& arg) {
  fs::path yaml = spec::resolveExperiencePath(arg);
  std::error_code ec;
  if (!fs::is_regular_file(yaml, ec)) {
    return makeError("experience.yaml not found at " + yaml.string() +
                     ". Pass a directory containing experience.yaml or the yaml file directly.");
  }
  return fs::absolute(yaml, ec).lexically_normal();
}

size_t EvolveOutcome::count(VerdictStatus status) const {
  return static_cast<size_t>(std::count_if(
      verdicts.begin(), verdicts.end(), [status](const Verdict& v) { return v.status == status; }));
}

Result<EvolveOutcome> proposeImprovements(const EvolveRequest& request,
                                          plugins::PluginRegistry& registry, plugins::LogSink& sink,
                                          const EvolveHooks& hooks) {
  const fs::path& yaml = request.yaml;
  const fs::path dir = yaml.parent_path();
  const fs::path runs_dir = spec::workspaceDir(yaml) / "runs";
  auto run = runs::findRun(runs_dir, request.run_id, request.last);
  if (!run) {
    return std::move(run).error();
  }
  auto log = events::readEventLog(run->log);
  if (!log) {
    return std::move(log).error();
  }
  for (const auto& warning : log->warnings) {
    warn(hooks, warning);
  }
  const std::optional<std::string> text = readFile(yaml);
  if (!text) {
    return makeError("cannot read " + yaml.string());
  }
  // The state schema names the fields of the diff; a yaml that no longer loads has none.
  spec::LoadResult loaded = spec::loadExperience(yaml);
  const spec::Experience* model = loaded.experience ? &*loaded.experience
                                  : loaded.partial  ? &*loaded.partial
                                                    : nullptr;
  Json state_diff = Json::array();
  // --evaluate's input set: the evaluated run first, then --evaluate-runs' others.
  InputRuns inputs;
  if (model == nullptr) {
    warn(hooks,
         yaml.string() + " does not load (`oe validate` says why); the advisor gets no state diff");
  } else {
    const fs::path db = run::statePath(*model);
    auto lock = state::StoreLock::acquire(db, "evolve-" + run->id, /*wait=*/false);
    if (!lock) {
      return std::move(lock).error();
    }
    auto diff = stateDiff(db, model->state, run->id);
    if (!diff) {
      return std::move(diff).error();
    }
    state_diff = std::move(*diff);
    if (request.evaluate) {
      inputs.push_back(
          {run->id, baselineOf(log->events, state_diff.is_array() ? state_diff : Json::array())});
      addPastBaselines(runs_dir, run->id, request.evaluate_runs, db, model->state, inputs, hooks);
    }
  }

  if (auto loaded_plugins = loadPlugins(
          registry, dir, model != nullptr ? model->plugin_overrides : std::vector<std::string>{},
          hooks);
      !loaded_plugins) {
    return loaded_plugins.error();
  }
  llm::Settings settings = request.llm;
  if (model != nullptr) {
    if (auto applied = llm::applyRuntime(model->raw.value("runtime", Json()), settings); !applied) {
      return applied.error();
    }
  }
  auto service = llm::LlmService::create(std::move(settings), registry, {});
  if (!service) {
    return std::move(service).error();
  }
  Json node = Json::object();
  node["id"] = "evolution";
  node["kind"] = "evolution";
  if (!request.prompt.empty()) {
    std::error_code ec;
    node["prompt"] = fs::absolute(request.prompt, ec).string();
  }
  if (!request.model.empty()) {
    node["model"] = request.model;
  }
  const Json args = advisorArgs(*text, log->events, std::move(state_diff), run->id);
  auto advice = askAdvisor(registry, **service, node, args, dir, sink);
  if (!advice) {
    return makeError("evolve " + run->id + ": " + advice.error().message);
  }

  EvolveOutcome out;
  out.run_id = run->id;
  out.usage = advice->usage;
  const spec::KindCatalog kinds = run::kindCatalog(registry);
  const fs::path evolution_dir = evolutionDir(dir);
  std::error_code ec;
  fs::create_directories(evolution_dir, ec);
  Json entries = Json::array();
  for (size_t i = 0; i < advice->proposals.size(); ++i) {
    const auto& proposal = advice->proposals[i];
    const fs::path scratch = evolution_dir / (".scratch-" + run->id + "-" + std::to_string(i + 1));
    out.verdicts.push_back(gate(proposal, yaml, kinds, scratch));
    Json entry = proposal.toJson();
    entry["verdict"] = out.verdicts.back().toJson();
    entries.push_back(std::move(entry));
  }
  std::vector<std::string> evaluations(advice->proposals.size());
  if (request.evaluate) {
    if (inputs.empty()) {  // no state schema to diff: the run's events alone
      inputs.push_back({run->id, baselineOf(log->events, Json::array())});
    }
    // --evaluate's runs apply their own runtime to the flags' settings.
    evaluateProposals(advice->proposals, out.verdicts, yaml, evolution_dir, run->id, inputs,
                      registry, request.llm, hooks, evaluations, entries);
  }
  out.report = reportPath(dir, run->id);
  if (auto written = writeTextFile(
          out.report, renderMarkdown(advice->proposals, run->id, &out.verdicts, &evaluations));
      !written) {
    return written.error();
  }
  Json sidecar = Json::object();
  sidecar["run_id"] = run->id;
  sidecar["generated_at"] = events::nowIso();
  sidecar["proposals"] = std::move(entries);
  sidecar["applied"] = Json::array();
  if (auto written = writeTextFile(sidecarPath(dir, run->id), sidecar.dump(2) + "\n"); !written) {
    return written.error();
  }
  out.proposals = std::move(advice->proposals);
  return out;
}

Result<Json> readProposals(const fs::path& dir, const std::string& run_id) {
  const fs::path path = sidecarPath(dir, run_id);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return makeError("no evolution proposals for run " + run_id + " (" + path.string() +
                     " does not exist): run `oe evolve " + run_id + "` first");
  }
  return readSidecar(path);
}

Result<AppliedProposal> applyProposal(const fs::path& yaml, const std::string& run_id, Json sidecar,
                                      int number, const spec::KindCatalog& kinds) {
  const fs::path dir = yaml.parent_path();
  const Json& proposals = sidecar["proposals"];
  if (!proposals.is_array() || number < 1 || static_cast<size_t>(number) > proposals.size()) {
    return makeError("run " + run_id + " has no proposal " + std::to_string(number));
  }
  const Json& entry = proposals[static_cast<size_t>(number - 1)];
  const Proposal proposal = Proposal::fromJson(entry);
  const Verdict recorded = Verdict::fromJson(entry.value("verdict", Json()));
  AppliedProposal out;
  out.name = "proposal " + std::to_string(number) + " (\"" + proposal.title + "\")";
  if (recorded.status != VerdictStatus::kValid) {
    return makeError(out.name + " of run " + run_id + " is not applied: it " + recorded.line() +
                     ". Only a proposal that applies and passes `oe validate` is applied; edit "
                     "its diff by hand, or run `oe evolve` again for new proposals");
  }
  // The folder may have changed since the proposals were made: gate again, on it as it is now.
  const Verdict now = gate(proposal, yaml, kinds, evolutionDir(dir) / (".scratch-" + run_id));
  if (now.status != VerdictStatus::kValid) {
    return makeError(out.name + " of run " + run_id +
                     " is not applied: the experience changed since it was proposed, and now it " +
                     now.line());
  }
  std::vector<std::string> notes;
  auto changes = planChanges(proposal, yaml, notes);
  if (!changes) {
    return makeError(out.name + " is not applied: " + changes.error().message);
  }
  auto applied = applyChanges(*changes, dir, utcStamp());
  if (!applied) {
    return makeError(out.name + ": " + applied.error().message);
  }
  Json record = Json::object();
  record["proposal"] = number;
  record["at"] = events::nowIso();
  record["files"] = applied->files;
  record["backups"] = applied->backups;
  if (!sidecar["applied"].is_array()) {
    sidecar["applied"] = Json::array();
  }
  sidecar["applied"].push_back(record);
  if (auto written = writeTextFile(sidecarPath(dir, run_id), sidecar.dump(2) + "\n"); !written) {
    out.warning = written.error().message;
  }
  out.files = std::move(*applied);
  return out;
}

std::vector<ReportEntry> listReports(const fs::path& dir) {
  std::vector<ReportEntry> entries;
  std::error_code ec;
  for (auto it = fs::directory_iterator(evolutionDir(dir), ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".md" || !it->is_regular_file(ec)) {
      continue;
    }
    ReportEntry entry{it->path().stem().string(), it->path(), it->last_write_time(ec),
                      Json::object()};
    Json& info = entry.info;
    info["run_id"] = entry.run_id;
    info["path"] = entry.path.string();
    if (auto sidecar = readSidecar(sidecarPath(dir, entry.run_id))) {
      Json counts = {{"valid", 0}, {"does_not_apply", 0}, {"invalid", 0}};
      for (const auto& p : (*sidecar)["proposals"]) {
        const auto status = Verdict::fromJson(p.value("verdict", Json())).status;
        Json& count = counts[std::string(toString(status))];
        count = count.get<int>() + 1;
      }
      info["proposals"] = (*sidecar)["proposals"].size();
      info["verdicts"] = counts;
      info["applied"] = sidecar->value("applied", Json::array()).size();
    } else {
      // A report without oe's sidecar (written by upstream): count its proposal headings.
      size_t n = 0;
      std::ifstream in(entry.path);
      for (std::string line; std::getline(in, line);) {
        if (line.starts_with("## ") && line.size() > 3 && std::isdigit(line[3]) != 0) {
          ++n;
        }
      }
      info["proposals"] = n;
    }
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(), [](const ReportEntry& x, const ReportEntry& y) {
    return x.modified != y.modified ? x.modified > y.modified : x.run_id < y.run_id;
  });
  return entries;
}

}  // namespace oe::evolve
