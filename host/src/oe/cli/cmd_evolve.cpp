// `oe evolve <run-id>` (reference §8.1, §9.2: proposals for a finished run, each gated by
// applying it to a scratch copy and validating it; `--apply N` applies one that passed) and
// `oe diff` (the pending proposal files); the steps are evolve/evolve's.
#include "oe/cli/evolve.hpp"

#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/report/run_summary.hpp"
#include "oe/evolve/evolve.hpp"
#include "oe/pg/connection.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;

std::string countsText(size_t valid, size_t not_applying, size_t invalid) {
  return std::to_string(valid) + " valid, " + std::to_string(not_applying) + " do not apply, " +
         std::to_string(invalid) + " fail validation";
}

// The proposal numbered `number` of the run's sidecar, re-gated against the experience as it
// is now, written with backups.
int applyProposal(const fs::path& yaml, const std::string& run_id, int number, std::ostream& out) {
  const fs::path dir = yaml.parent_path();
  auto sidecar = evolve::readProposals(dir, run_id);
  if (printedError(sidecar)) {
    return kExitFailed;
  }
  const size_t count = (*sidecar)["proposals"].size();
  if (number < 1 || static_cast<size_t>(number) > count) {
    std::cerr << "oe: --apply " << number << ": run " << run_id << " has " << count
              << " proposal(s), numbered from 1 as in " << evolve::reportPath(dir, run_id).string()
              << '\n';
    return kExitUsage;
  }
  StderrLog sink;
  // Only the kinds' schemas, for the gate's validation: nothing of a plugin runs.
  plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
  loadPlugins(registry, dir);
  if (auto loaded = spec::loadExperience(yaml); loaded.experience) {
    registry.setOverrides(loaded.experience->plugin_overrides);  // as a run resolves its kinds
  }
  auto applied =
      evolve::applyProposal(yaml, run_id, std::move(*sidecar), number, kindCatalog(registry));
  if (printedError(applied)) {
    return kExitFailed;
  }
  if (!applied->warning.empty()) {
    std::cerr << "oe: warning: " << applied->warning << '\n';
  }
  out << "applied " << applied->name << " of run " << run_id << " to " << dir.string() << '\n';
  for (const auto& file : applied->files.files) {
    out << "  changed: " << file << '\n';
  }
  for (const auto& backup : applied->files.backups) {
    out << "  previous version kept as " << backup << '\n';
  }
  return kExitOk;
}

}  // namespace

int evolve(const EvolveOptions& options, std::ostream& out) {
  auto yaml = evolve::experienceYaml(options.experience);
  if (printedError(yaml)) {
    return kExitFailed;
  }
  evolve::EvolveRequest request{*yaml,           options.run_id, options.last,
                                options.llm,     options.prompt, options.model,
                                options.evaluate, options.evaluate_runs};
  evolve::EvolveHooks hooks;
  hooks.warning = [](const std::string& warning) {
    std::cerr << "oe: warning: " << warning << '\n';
  };
  hooks.evaluated = [&out](size_t number, const std::string& line) {
    out << "  evaluated " << number << ": " << line << '\n';
  };
  StderrLog sink;
  // The advisor and --evaluate's runs call plugins: those not built in load once trusted.
  const auto gate = ops::trustGate();
  plugins::PluginRegistry registry(&sink, plugins::Access::kExecute, gate.get());
  auto outcome = evolve::proposeImprovements(request, registry, sink, hooks);
  if (printedError(outcome)) {
    return kExitFailed;
  }
  const auto& proposals = outcome->proposals;
  // Upstream's log line (message, then its fields).
  out << "evolution proposal written "
      << Json{{"outPath", outcome->report.string()}, {"proposalCount", proposals.size()}}.dump()
      << '\n';
  for (size_t i = 0; i < proposals.size(); ++i) {
    out << "  " << i + 1 << ". " << proposals[i].title << " (" << proposals[i].operation
        << "): " << evolve::toString(outcome->verdicts[i].status) << '\n';
  }
  if (!proposals.empty()) {
    out << "verdicts: "
        << countsText(outcome->count(evolve::VerdictStatus::kValid),
                      outcome->count(evolve::VerdictStatus::kDoesNotApply),
                      outcome->count(evolve::VerdictStatus::kInvalid))
        << "; apply one with `oe evolve " << outcome->run_id << " --apply N`\n";
  }
  if (outcome->usage.calls > 0) {
    out << report::usageLine(outcome->usage) << '\n';
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
      exit_code = kExitFailed;
      const auto yaml = evolve::experienceYaml(a->experience);
      if (printedError(yaml)) {
        return;
      }
      auto run = findRun(spec::workspaceDir(*yaml) / "runs", a->options.run_id, a->options.last);
      if (!printedError(run)) {
        exit_code = applyProposal(*yaml, run->id, a->apply, std::cout);
      }
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
    const auto yaml = evolve::experienceYaml(a->experience);
    if (printedError(yaml)) {
      exit_code = kExitFailed;
      return;
    }
    const fs::path dir = evolve::evolutionDir(yaml->parent_path());
    const std::vector<evolve::ReportEntry> entries = evolve::listReports(yaml->parent_path());
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
