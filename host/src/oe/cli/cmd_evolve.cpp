// `oe evolve <run-id>` (reference §8.1, §9.2: proposals for a finished run, each gated by
// applying it to a scratch copy and validating it; `--apply N` applies one that passed) and
// `oe diff` (the pending proposal files).
#include "oe/cli/evolve.hpp"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/common/file.hpp"
#include "oe/events/event_log.hpp"
#include "oe/evolve/advisor.hpp"
#include "oe/evolve/evaluate.hpp"
#include "oe/evolve/proposals.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"
#include "oe/state/store_lock.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;

// The yaml `arg` names, or nullopt after upstream's message (exit 1, reference §9.2).
std::optional<fs::path> experienceYaml(const fs::path& arg) {
  fs::path yaml = spec::resolveExperiencePath(arg);
  std::error_code ec;
  if (!fs::is_regular_file(yaml, ec)) {
    std::cerr << "oe: experience.yaml not found at " << yaml.string()
              << ". Pass a directory containing experience.yaml or the yaml file directly.\n";
    return std::nullopt;
  }
  return fs::absolute(yaml, ec).lexically_normal();
}

// 20261125T143000Z: the backups' suffix.
std::string utcStamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

std::string countsText(size_t valid, size_t not_applying, size_t invalid) {
  return std::to_string(valid) + " valid, " + std::to_string(not_applying) + " do not apply, " +
         std::to_string(invalid) + " fail validation";
}

// The proposal numbered `number` of the run's sidecar, re-gated against the experience as it
// is now, written with backups.
int applyProposal(const fs::path& yaml, const std::string& run_id, int number, std::ostream& out) {
  const fs::path dir = yaml.parent_path();
  const fs::path sidecar_path = evolve::sidecarPath(dir, run_id);
  std::error_code ec;
  if (!fs::exists(sidecar_path, ec)) {
    std::cerr << "oe: no evolution proposals for run " << run_id << " (" << sidecar_path.string()
              << " does not exist): run `oe evolve " << run_id << "` first\n";
    return kExitFailed;
  }
  auto sidecar = evolve::readSidecar(sidecar_path);
  if (!sidecar) {
    std::cerr << "oe: " << sidecar.error().message << '\n';
    return kExitFailed;
  }
  Json& entries = (*sidecar)["proposals"];
  if (number < 1 || static_cast<size_t>(number) > entries.size()) {
    std::cerr << "oe: --apply " << number << ": run " << run_id << " has " << entries.size()
              << " proposal(s), numbered from 1 as in " << evolve::reportPath(dir, run_id).string()
              << '\n';
    return kExitUsage;
  }
  const Json& entry = entries[static_cast<size_t>(number - 1)];
  const evolve::Proposal proposal = evolve::Proposal::fromJson(entry);
  const evolve::Verdict recorded = evolve::Verdict::fromJson(entry.value("verdict", Json()));
  const std::string name = "proposal " + std::to_string(number) + " (\"" + proposal.title + "\")";
  if (recorded.status != evolve::VerdictStatus::kValid) {
    std::cerr << "oe: " << name << " of run " << run_id << " is not applied: it " << recorded.line()
              << ". Only a proposal that applies and passes `oe validate` is applied; edit its "
                 "diff by hand, or run `oe evolve` again for new proposals\n";
    return kExitFailed;
  }
  // The folder may have changed since the proposals were made: gate again, on it as it is now.
  StderrLog sink;
  plugins::PluginRegistry registry(&sink);
  loadPlugins(registry, dir);
  const evolve::Verdict now = evolve::gate(proposal, yaml, kindCatalog(registry),
                                           evolve::evolutionDir(dir) / (".scratch-" + run_id));
  if (now.status != evolve::VerdictStatus::kValid) {
    std::cerr << "oe: " << name << " of run " << run_id
              << " is not applied: the experience changed since it was proposed, and now it "
              << now.line() << '\n';
    return kExitFailed;
  }
  std::vector<std::string> notes;
  auto changes = evolve::planChanges(proposal, yaml, notes);
  if (!changes) {
    std::cerr << "oe: " << name << " is not applied: " << changes.error().message << '\n';
    return kExitFailed;
  }
  auto applied = evolve::applyChanges(*changes, dir, utcStamp());
  if (!applied) {
    std::cerr << "oe: " << name << ": " << applied.error().message << '\n';
    return kExitFailed;
  }
  Json record = Json::object();
  record["proposal"] = number;
  record["at"] = events::nowIso();
  record["files"] = applied->files;
  record["backups"] = applied->backups;
  if (!(*sidecar)["applied"].is_array()) {
    (*sidecar)["applied"] = Json::array();
  }
  (*sidecar)["applied"].push_back(record);
  if (auto written = evolve::writeTextFile(sidecar_path, sidecar->dump(2) + "\n"); !written) {
    std::cerr << "oe: warning: " << written.error().message << '\n';
  }
  out << "applied " << name << " of run " << run_id << " to " << dir.string() << '\n';
  for (size_t i = 0; i < applied->files.size(); ++i) {
    out << "  changed: " << applied->files[i] << '\n';
  }
  for (const auto& backup : applied->backups) {
    out << "  previous version kept as " << backup << '\n';
  }
  return kExitOk;
}

// --evaluate-runs: up to `count` - 1 more finished top-level runs of the experience, newest
// first, each with args no run already in `baselines` had, and their baselines (events and
// state diff). A run whose log or history cannot be read is left out with a warning.
void addPastBaselines(const fs::path& runs_dir, const std::string& evaluated, int count,
                      const fs::path& db, const spec::StateSpec& schema,
                      std::vector<std::pair<std::string, evolve::Baseline>>& baselines) {
  std::vector<std::string> seen;
  for (const auto& [id, baseline] : baselines) {
    seen.push_back(baseline.args.dump());
  }
  for (const RunRecord& past : listRuns(runs_dir, /*details=*/true)) {
    if (static_cast<int>(baselines.size()) >= count) {
      return;
    }
    if (past.id == evaluated || !past.parent_run_id.empty() || past.status == "unfinished") {
      continue;
    }
    auto events = events::readEventLog(past.log);
    if (!events) {
      std::cerr << "oe: warning: --evaluate-runs leaves run " << past.id
                << " out: " << events.error().message << '\n';
      continue;
    }
    auto diff = evolve::stateDiff(db, schema, past.id);
    if (!diff) {
      std::cerr << "oe: warning: --evaluate-runs leaves run " << past.id
                << " out: " << diff.error().message << '\n';
      continue;
    }
    evolve::Baseline baseline = evolve::baselineOf(events->events, *diff);
    const std::string args = baseline.args.dump();
    if (std::find(seen.begin(), seen.end(), args) != seen.end()) {
      continue;  // the same inputs: the same evidence
    }
    seen.push_back(args);
    baselines.emplace_back(past.id, std::move(baseline));
  }
}

}  // namespace

int evolve(const EvolveOptions& options, std::ostream& out) {
  const auto yaml = experienceYaml(options.experience);
  if (!yaml) {
    return kExitFailed;
  }
  const fs::path dir = yaml->parent_path();
  const fs::path runs_dir = spec::workspaceDir(*yaml) / "runs";
  auto run = findRun(runs_dir, options.run_id, options.last);
  if (!run) {
    std::cerr << "oe: " << run.error().message << '\n';
    return kExitFailed;
  }
  auto log = events::readEventLog(run->log);
  if (!log) {
    std::cerr << "oe: " << log.error().message << '\n';
    return kExitFailed;
  }
  for (const auto& warning : log->warnings) {
    std::cerr << "oe: warning: " << warning << '\n';
  }
  const std::optional<std::string> text = readFile(*yaml);
  if (!text) {
    std::cerr << "oe: cannot read " << yaml->string() << '\n';
    return kExitFailed;
  }
  // The state schema names the fields of the diff; a yaml that no longer loads has none.
  spec::LoadResult loaded = spec::loadExperience(*yaml);
  const spec::Experience* model = loaded.experience ? &*loaded.experience
                                  : loaded.partial  ? &*loaded.partial
                                                    : nullptr;
  Json state_diff = Json::array();
  Json baseline_diff;  // the state diff, kept for --evaluate's baseline
  // --evaluate's input set: the evaluated run first, then --evaluate-runs' others.
  std::vector<std::pair<std::string, evolve::Baseline>> baselines;
  if (model == nullptr) {
    std::cerr << "oe: warning: " << yaml->string()
              << " does not load (`oe validate` says why); the advisor gets no state diff\n";
  } else {
    const fs::path db = run::statePath(*model);
    auto lock = state::StoreLock::acquire(db, "evolve-" + run->id, /*wait=*/false);
    if (!lock) {
      std::cerr << "oe: " << lock.error().message << '\n';
      return kExitFailed;
    }
    auto diff = evolve::stateDiff(db, model->state, run->id);
    if (!diff) {
      std::cerr << "oe: " << diff.error().message << '\n';
      return kExitFailed;
    }
    state_diff = std::move(*diff);
    baseline_diff = state_diff;
    if (options.evaluate) {
      baselines.push_back(
          {run->id, evolve::baselineOf(log->events,
                                       baseline_diff.is_array() ? baseline_diff : Json::array())});
      addPastBaselines(runs_dir, run->id, options.evaluate_runs, db, model->state, baselines);
    }
  }

  StderrLog sink;
  plugins::PluginRegistry registry(&sink);
  loadPlugins(registry, dir);
  reportPluginProblems(registry);
  llm::Settings settings = options.llm;
  const llm::Settings run_settings = options.llm;  // --evaluate's runs apply their own runtime
  if (model != nullptr) {
    if (auto applied = llm::applyRuntime(model->raw.value("runtime", Json()), settings); !applied) {
      std::cerr << "oe: " << applied.error().message << '\n';
      return kExitFailed;
    }
  }
  auto service = llm::LlmService::create(std::move(settings), registry, {});
  if (!service) {
    std::cerr << "oe: " << service.error().message << '\n';
    return kExitFailed;
  }
  Json node = Json::object();
  node["id"] = "evolution";
  node["kind"] = "evolution";
  if (!options.prompt.empty()) {
    std::error_code ec;
    node["prompt"] = fs::absolute(options.prompt, ec).string();
  }
  if (!options.model.empty()) {
    node["model"] = options.model;
  }
  const Json args = evolve::advisorArgs(*text, log->events, std::move(state_diff), run->id);
  auto advice = evolve::askAdvisor(registry, **service, node, args, dir, sink);
  if (!advice) {
    std::cerr << "oe: evolve " << run->id << ": " << advice.error().message << '\n';
    return kExitFailed;
  }

  const spec::KindCatalog kinds = kindCatalog(registry);
  const fs::path evolution_dir = evolve::evolutionDir(dir);
  std::error_code ec;
  fs::create_directories(evolution_dir, ec);
  std::vector<evolve::Verdict> verdicts;
  Json entries = Json::array();
  size_t counts[3] = {0, 0, 0};
  for (size_t i = 0; i < advice->proposals.size(); ++i) {
    const auto& proposal = advice->proposals[i];
    verdicts.push_back(
        evolve::gate(proposal, *yaml, kinds,
                     evolution_dir / (".scratch-" + run->id + "-" + std::to_string(i + 1))));
    Json entry = proposal.toJson();
    entry["verdict"] = verdicts.back().toJson();
    entries.push_back(std::move(entry));
    ++counts[static_cast<size_t>(verdicts.back().status)];
  }
  std::vector<std::string> evaluations(advice->proposals.size());
  if (options.evaluate) {
    if (baselines.empty()) {  // no state schema to diff: the run's events alone
      baselines.push_back({run->id, evolve::baselineOf(log->events, Json::array())});
    }
    for (size_t i = 0; i < advice->proposals.size(); ++i) {
      if (verdicts[i].status != evolve::VerdictStatus::kValid) {
        continue;
      }
      std::vector<std::string> notes;
      auto changes = evolve::planChanges(advice->proposals[i], *yaml, notes);
      Json results = Json::array();
      std::string lines;
      for (size_t k = 0; k < baselines.size(); ++k) {
        const auto& [baseline_run, baseline] = baselines[k];
        // The first candidate keeps its place; one per further input run beside it.
        const fs::path folder = evolution_dir / run->id /
                                ("candidate-" + std::to_string(i + 1) +
                                 (k == 0 ? "" : "-" + baseline_run.substr(0, 8)));
        auto evaluation =
            changes ? evolve::evaluate(*changes, *yaml, folder, registry, run_settings, baseline)
                    : Result<evolve::Evaluation>(changes.error());
        std::string line;
        Json result;
        if (evaluation) {
          line = evaluation->line(baseline);
          result = evaluation->toJson();
        } else {
          line = "could not run: " + evaluation.error().message;
          result = Json{{"error", evaluation.error().message}};
        }
        if (baselines.size() > 1) {
          line = "with the args of run " + baseline_run + ": " + line;
          result["input_run"] = baseline_run;
        }
        // Each run's evidence on a line of its own, each with the prefix the report gives.
        lines += (k == 0 ? "" : "\n" + std::string(evolve::kEvaluationPrefix)) + line;
        results.push_back(std::move(result));
        out << "  evaluated " << i + 1 << ": " << line << '\n';
      }
      evaluations[i] = std::move(lines);
      entries[i]["evaluation"] = baselines.size() == 1 ? results[0] : results;
    }
  }
  const fs::path report = evolve::reportPath(dir, run->id);
  if (auto written = evolve::writeTextFile(
          report, evolve::renderMarkdown(advice->proposals, run->id, &verdicts, &evaluations));
      !written) {
    std::cerr << "oe: " << written.error().message << '\n';
    return kExitFailed;
  }
  Json sidecar = Json::object();
  sidecar["run_id"] = run->id;
  sidecar["generated_at"] = events::nowIso();
  sidecar["proposals"] = std::move(entries);
  sidecar["applied"] = Json::array();
  if (auto written =
          evolve::writeTextFile(evolve::sidecarPath(dir, run->id), sidecar.dump(2) + "\n");
      !written) {
    std::cerr << "oe: " << written.error().message << '\n';
    return kExitFailed;
  }
  // Upstream's log line (message, then its fields).
  out << "evolution proposal written "
      << Json{{"outPath", report.string()}, {"proposalCount", advice->proposals.size()}}.dump()
      << '\n';
  for (size_t i = 0; i < advice->proposals.size(); ++i) {
    out << "  " << i + 1 << ". " << advice->proposals[i].title << " ("
        << advice->proposals[i].operation << "): " << evolve::toString(verdicts[i].status) << '\n';
  }
  if (!advice->proposals.empty()) {
    out << "verdicts: "
        << countsText(counts[static_cast<size_t>(evolve::VerdictStatus::kValid)],
                      counts[static_cast<size_t>(evolve::VerdictStatus::kDoesNotApply)],
                      counts[static_cast<size_t>(evolve::VerdictStatus::kInvalid)])
        << "; apply one with `oe evolve " << run->id << " --apply N`\n";
  }
  if (advice->usage.calls > 0) {
    char cost[32];
    std::snprintf(cost, sizeof cost, "%.4f", advice->usage.cost_usd);
    out << "llm: " << advice->usage.calls << " calls, " << advice->usage.input_tokens << " in + "
        << advice->usage.output_tokens << " out tokens, $" << cost << '\n';
  }
  return kExitOk;
}

void addEvolveCommand(CLI::App& app, int& exit_code) {
  struct Args {
    EvolveOptions options;
    std::string experience = ".";
    std::string llm;
    std::string llm_record;
    std::string llm_replay;
    int apply = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "evolve",
      "Ask the LLM for proposals to improve an experience from one of its runs; each "
      "is checked by applying it to a copy and validating it");
  auto* run_id =
      cmd->add_option("run-id", a->options.run_id, "The run: its id or a unique prefix of it");
  cmd->add_flag("--last", a->options.last, "The newest run")->excludes(run_id);
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->add_option("--llm", a->llm,
                  "LLM provider: anthropic or openai (default: from the API keys set)");
  auto* record = cmd->add_option("--llm-record", a->llm_record,
                                 "Append the LLM request and response to this JSONL file");
  cmd->add_option("--llm-replay", a->llm_replay,
                  "Answer the LLM call from a recording, without network")
      ->excludes(record);
  cmd->add_option("--prompt", a->options.prompt,
                  "A system prompt file to use instead of oe's share/oe/evolution/proposal.md");
  cmd->add_option("--model", a->options.model, "The model to ask (default: the run's default)");
  cmd->add_flag("--evaluate", a->options.evaluate,
                "Also run each valid proposal's copy with the evaluated run's args, replaying "
                "unchanged nodes from the original's cache, and report the differences");
  cmd->add_option("--evaluate-runs", a->options.evaluate_runs,
                  "With --evaluate: also the newest other finished runs with different args, up "
                  "to N runs in all (default 1: the evaluated run alone)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--apply", a->apply,
                  "Apply proposal N of the run's report (only one that applied and validated); "
                  "the files it replaces are kept as <file>.bak-<UTC time>");
  cmd->callback([a, &exit_code] {
    if (!a->llm.empty() && a->llm != "anthropic" && a->llm != "openai") {
      std::cerr << "oe: unknown --llm value \"" << a->llm << "\"; use anthropic or openai\n";
      exit_code = kExitUsage;
      return;
    }
    if (a->options.run_id.empty() && !a->options.last) {
      std::cerr << "oe: evolve needs a run id (or a unique prefix of one), or --last\n";
      exit_code = kExitUsage;
      return;
    }
    a->options.experience = a->experience;
    if (a->apply != 0) {
      const auto yaml = experienceYaml(a->experience);
      if (!yaml) {
        exit_code = kExitFailed;
        return;
      }
      auto run = findRun(spec::workspaceDir(*yaml) / "runs", a->options.run_id, a->options.last);
      if (!run) {
        std::cerr << "oe: " << run.error().message << '\n';
        exit_code = kExitFailed;
        return;
      }
      exit_code = applyProposal(*yaml, run->id, a->apply, std::cout);
      return;
    }
    // The advisor reads the run's state diff and log from the experience's SQLite files.
    bool failed = false;
    if (auto store = experienceStore(a->experience, "", failed); store || failed) {
      if (store) {
        std::cerr << "oe: evolve reads a run's state from the experience's SQLite files; this "
                     "experience keeps its state in PostgreSQL ("
                  << pg::redact(store->url)
                  << ", from OE_STORE or runtime.store), which evolve does not read yet. Evolve "
                     "a run made without the store (`OE_STORE= oe run ...`).\n";
      }
      exit_code = kExitUsage;
      return;
    }
    a->options.llm.env = llm::Environment::fromProcess();
    a->options.llm.provider_flag = a->llm;
    if (!a->llm_record.empty()) {
      a->options.llm.record_file = a->llm_record;
    }
    if (!a->llm_replay.empty()) {
      a->options.llm.replay_file = a->llm_replay;
    }
    exit_code = evolve(a->options, std::cout);
  });
}

void addDiffCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string experience = ".";
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "List the evolution proposal files of an experience (.openexpertise/evolution/)");
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print the list as JSON");
  cmd->callback([a, &exit_code] {
    const auto yaml = experienceYaml(a->experience);
    if (!yaml) {
      exit_code = kExitFailed;
      return;
    }
    const fs::path dir = evolve::evolutionDir(yaml->parent_path());
    struct Entry {
      std::string run_id;
      fs::path path;
      fs::file_time_type modified;
      Json info;
    };
    std::vector<Entry> entries;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      if (it->path().extension() != ".md" || !it->is_regular_file(ec)) {
        continue;
      }
      Entry entry{it->path().stem().string(), it->path(), it->last_write_time(ec), Json::object()};
      Json& info = entry.info;
      info["run_id"] = entry.run_id;
      info["path"] = entry.path.string();
      if (auto sidecar =
              evolve::readSidecar(evolve::sidecarPath(yaml->parent_path(), entry.run_id))) {
        Json counts = {{"valid", 0}, {"does_not_apply", 0}, {"invalid", 0}};
        for (const auto& p : (*sidecar)["proposals"]) {
          const auto status = evolve::Verdict::fromJson(p.value("verdict", Json())).status;
          counts[std::string(evolve::toString(status))] =
              counts[std::string(evolve::toString(status))].get<int>() + 1;
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
    std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
      return x.modified != y.modified ? x.modified > y.modified : x.run_id < y.run_id;
    });
    if (a->json) {
      Json list = Json::array();
      for (const auto& e : entries) {
        list.push_back(e.info);
      }
      std::cout << list.dump(2) << '\n';
      exit_code = kExitOk;
      return;
    }
    if (entries.empty()) {
      std::cout << "no evolution proposals in " << dir.string()
                << " (`oe evolve <run-id>` writes them)\n";
      exit_code = kExitOk;
      return;
    }
    for (const auto& e : entries) {
      std::cout << e.run_id << "  " << e.info["proposals"].get<size_t>() << " proposal(s)";
      if (e.info.contains("verdicts")) {
        const Json& v = e.info["verdicts"];
        std::cout << " ("
                  << countsText(v["valid"].get<size_t>(), v["does_not_apply"].get<size_t>(),
                                v["invalid"].get<size_t>());
        if (e.info["applied"].get<size_t>() > 0) {
          std::cout << "; " << e.info["applied"].get<size_t>() << " applied";
        }
        std::cout << ")";
      } else {
        std::cout << " (not checked by oe)";
      }
      std::cout << "  " << e.path.string() << '\n';
    }
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli
