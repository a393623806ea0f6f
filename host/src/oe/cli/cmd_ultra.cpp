// `oe ultra <task>` and `oe ultra-revise <draft> <feedback>` (reference §8.3): the ultra module
// (host/src/oe/ultra) driven from the command line, progress per phase on stderr, upstream's
// summary on stdout (or the result as JSON with --json), and upstream's exit codes: 0 a valid
// draft, 1 no provider / bad flags / a failed LLM phase, 2 a draft that is invalid or a
// revision that was not accepted (the files are still written).
#include <fcntl.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/progress.hpp"
#include "oe/registry/registry.hpp"
#include "oe/mcp/framing.hpp"
#include "oe/ultra/ultra.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;
using registry::shippedDataDir;

// The flags both commands take.
struct UltraArgs {
  std::string llm;
  std::string llm_record;
  std::string llm_replay;
  std::string model;
  std::string critic_model;
  std::string prompts;
  std::string corpus;
  std::optional<int64_t> max_tokens;
  std::optional<double> max_cost_usd;
  int max_rounds = 1;
  int fix_rounds = 2;
  bool no_smoke = false;
  bool json = false;
  int events_fd = -1;  // hidden --events-fd N: each phase event as a JSON line (`oe mcp`)
};

void addCommonOptions(CLI::App& cmd, UltraArgs& a) {
  cmd.add_option("--llm", a.llm, "LLM provider: anthropic or openai (default: from the API keys)");
  auto* record = cmd.add_option("--llm-record", a.llm_record,
                                "Append every LLM request and response to this JSONL file");
  cmd.add_option("--llm-replay", a.llm_replay,
                 "Answer the LLM calls from a recording, without network")
      ->excludes(record);
  cmd.add_option("--model", a.model, "The model of every phase (default: the provider's)");
  cmd.add_option("--critic-model", a.critic_model, "The critic's model (default: --model)");
  cmd.add_option("--max-rounds", a.max_rounds,
                 "Critique and revise rounds (0: none; the draft is still fixed when invalid)")
      ->capture_default_str();
  cmd.add_option("--fix-rounds", a.fix_rounds,
                 "Extra revise rounds while no draft validates and passes its smoke run")
      ->capture_default_str();
  cmd.add_flag("--no-smoke", a.no_smoke,
               "Validate drafts without the smoke run (stand-in LLM answers, real tools)");
  cmd.add_option("--prompts", a.prompts,
                 "A folder whose analyzer.md, synthesizer.md, critic.md or reviser.md replace "
                 "oe's (share/oe/prompts/ultra); also $OE_ULTRA_PROMPTS");
  cmd.add_option("--max-tokens", a.max_tokens, "Budget: input + output tokens of every call")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--max-cost-usd", a.max_cost_usd, "Budget: US dollars for every call")
      ->check(CLI::NonNegativeNumber);
  cmd.add_flag("--json", a.json, "Print the result as JSON on stdout");
  cmd.add_option("--events-fd", a.events_fd)->group("");  // for `oe mcp`, not for users
}

// Ctrl-C (or SIGTERM) asks the phases to stop at the next LLM call or phase boundary, so no
// half-written draft and no smoke-run scratch folder is left behind; a second one ends oe at
// once. The signals go to a thread of their own (blocked here, before any other thread exists,
// so the smoke run's engine does not take them either).
struct Interruption {
  std::atomic<bool> cancelled{false};  // what the phases watch
  std::atomic<int> signal{0};          // which signal asked: exit 128 + it, as a shell reports
};
std::shared_ptr<Interruption> cancelOnSignal() {
  auto stop = std::make_shared<Interruption>();
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::thread([stop, stop_signals] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    std::cerr << "oe: stopping at the next phase boundary (again to stop at once)\n";
    stop->signal.store(signal_number);
    stop->cancelled.store(true);
    sigwait(&stop_signals, &signal_number);
    std::_Exit(128 + signal_number);
  }).detach();
  return stop;
}

// The phase events as JSON lines on --events-fd (closed to the programs a smoke run starts).
std::function<void(const ultra::PhaseEvent&)> phasesToFd(
    int fd, std::function<void(const ultra::PhaseEvent&)> next) {
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return [next = std::move(next),
          out = std::make_shared<mcp::LineWriter>(fd)](const ultra::PhaseEvent& e) {
    if (next) {
      next(e);
    }
    out->write(Json{{"type", "ultra.phase"},
                    {"phase", e.phase},
                    {"status", e.status},
                    {"round", e.round},
                    {"duration_ms", e.duration_ms},
                    {"detail", e.detail}});
  };
}

// Progress on stderr, one line per finished phase (upstream's spinner lines, without the
// spinner: stderr may be a log file).
void printPhase(const ultra::PhaseEvent& e) {
  const std::string round = e.round > 0 ? " (round " + std::to_string(e.round) + ")" : "";
  if (e.status == "start") {
    std::cerr << "ultraexpertise: " << e.phase << round << "...\n";
    return;
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", static_cast<double>(e.duration_ms) / 1000.0);
  const char* mark = e.status == "done"       ? "✓"
                     : e.status == "rejected" ? "↺"
                                              : "✗";  // failed, invalid
  std::cerr << "  " << mark << ' ' << e.phase << round;
  if (e.status != "rejected") {
    std::cerr << " " << seconds;
  }
  if (!e.detail.empty()) {
    std::cerr << ": " << oneLine(e.detail);
  }
  std::cerr << '\n';
}

// Everything the module needs from the command line; nullopt (with the exit code set) when a
// flag or the set-up is wrong.
struct Setup {
  std::unique_ptr<plugins::PluginRegistry> registry;
  std::unique_ptr<llm::LlmService> llm;
  spec::KindCatalog kinds;
  ultra::Prompts prompts;
  ultra::Options options;
  [[nodiscard]] ultra::Context context(plugins::LogSink& sink) const {
    return {*llm, *registry, kinds, prompts, sink};
  }
};

// `stop` (cancelOnSignal) becomes the phases' cancel flag.
std::optional<Setup> prepare(const UltraArgs& a, StderrLog& sink, const Interruption& stop,
                             int& exit_code) {
  exit_code = kExitFailed;
  if (!a.llm.empty() && a.llm != "anthropic" && a.llm != "openai") {
    std::cerr << "oe: unknown --llm value \"" << a.llm << "\"; use anthropic or openai\n";
    return std::nullopt;
  }
  if (a.max_rounds < 0 || a.fix_rounds < 0) {
    std::cerr << "oe: --max-rounds and --fix-rounds must be 0 or more\n";
    return std::nullopt;
  }
  llm::Settings settings;
  settings.env = llm::Environment::fromProcess();
  settings.provider_flag = a.llm;
  if (!a.llm_record.empty()) {
    settings.record_file = a.llm_record;
  }
  if (!a.llm_replay.empty()) {
    settings.replay_file = a.llm_replay;
  }
  settings.budget.max_tokens = a.max_tokens;
  settings.budget.max_cost_usd = a.max_cost_usd;
  // Upstream checks the provider before any phase: no key is exit 1, not a failed analyze.
  if (a.llm_replay.empty()) {
    if (auto choice = llm::chooseProvider(settings); !choice) {
      std::cerr << "oe: " << choice.error().message << '\n';
      return std::nullopt;
    }
  }
  Setup setup;
  setup.registry = std::make_unique<plugins::PluginRegistry>(&sink);
  loadPlugins(*setup.registry, std::nullopt);
  reportPluginProblems(*setup.registry);
  setup.kinds = kindCatalog(*setup.registry);
  const llm::Environment env = settings.env;
  auto service = llm::LlmService::create(std::move(settings), *setup.registry, {});
  if (!service) {
    std::cerr << "oe: " << service.error().message << '\n';
    return std::nullopt;
  }
  setup.llm = std::move(*service);

  const std::optional<fs::path> data = shippedDataDir();
  std::optional<fs::path> override_dir;
  if (!a.prompts.empty()) {
    override_dir = fs::path(a.prompts);
  } else if (const char* env_dir = std::getenv("OE_ULTRA_PROMPTS");  // NOLINT: read only
             env_dir != nullptr && *env_dir != '\0') {
    override_dir = fs::path(env_dir);
  }
  if (override_dir && !fs::is_directory(*override_dir)) {
    std::cerr << "oe: the prompts folder " << override_dir->string() << " does not exist\n";
    return std::nullopt;
  }
  auto prompts = ultra::loadPrompts(
      data ? *data / "prompts" / "ultra" : fs::path("share/oe/prompts/ultra"), override_dir);
  if (!prompts) {
    std::cerr << "oe: " << prompts.error().message << '\n';
    return std::nullopt;
  }
  setup.prompts = std::move(*prompts);

  ultra::Options& o = setup.options;
  o.cancel = &stop.cancelled;
  o.model = a.model;
  o.critic_model = a.critic_model;
  o.max_rounds = a.max_rounds;
  o.fix_rounds = a.fix_rounds;
  o.score_bar = ultra::scoreBar(std::getenv("OE_ULTRA_SCORE_BAR"));  // NOLINT: read only
  o.check.smoke = !a.no_smoke;
  o.check.env = env;
  if (!a.corpus.empty()) {
    if (!fs::is_directory(a.corpus)) {
      std::cerr << "oe: --corpus " << a.corpus << " is not a folder\n";
      exit_code = kExitUsage;
      return std::nullopt;
    }
    o.corpus = fs::path(a.corpus);
  } else if (data && fs::is_directory(*data / "examples")) {
    o.corpus = *data / "examples";  // oe's shipped examples
  }
  if (!a.json) {
    o.on_phase = printPhase;
  }
  if (a.events_fd >= 0) {
    o.on_phase = phasesToFd(a.events_fd, std::move(o.on_phase));
  }
  exit_code = kExitOk;
  return setup;
}

void printUsage(const ultra::LoopReport& loop) {
  if (loop.usage.calls == 0) {
    return;
  }
  char cost[32];
  std::snprintf(cost, sizeof cost, "%.4f", loop.usage.cost_usd);
  std::cout << "llm: " << loop.usage.calls << " calls, " << loop.usage.input_tokens << " in + "
            << loop.usage.output_tokens << " out tokens, $" << cost << '\n';
}

// Upstream's `draft created` fields, then the verdict and the next steps.
int report(const ultra::UltraResult& r, bool json, bool revise) {
  const bool ok = r.check.valid && (!revise || r.accepted_revision);
  if (json) {
    std::cout << r.toJson(/*with_contents=*/false).dump(2) << '\n';
    return ok ? kExitOk : kExitUsage;
  }
  Json nodes = Json::array();
  for (const auto& sketch : r.analysis.value("node_sketches", Json::array())) {
    nodes.push_back(stringField(sketch, "id") + "(" + stringField(sketch, "kind") + ")");
  }
  Json phases = Json::array();
  for (const auto& phase : r.analysis.value("phases", Json::array())) {
    phases.push_back(stringField(phase, "id"));
  }
  nlohmann::ordered_json fields;
  fields["slug"] = r.slug;
  fields["draftDir"] = r.draft_dir.string();
  fields["phases"] = phases;
  fields["nodes"] = nodes;
  fields["open_questions"] = r.analysis.value("open_questions", Json::array());
  fields["files_written"] = r.files_written;
  fields["valid"] = r.check.valid;
  fields["validation_errors"] = r.check.errors;
  fields["next_steps"] = r.synthesis.next_steps;
  if (r.loop.rounds_run > 0 || !r.loop.critiques.empty()) {
    fields["rounds_run"] = r.loop.rounds_run;
    fields["final_score"] = r.loop.final_score ? Json(*r.loop.final_score) : Json();
  }
  // ultra-revise keeps the previous draft when no revision beat it: say "kept", not "revised".
  const char* outcome =
      !revise ? "draft created " : (r.accepted_revision ? "draft revised " : "draft kept ");
  std::cout << "ultraexpertise: " << outcome << fields.dump() << '\n';
  printUsage(r.loop);
  if (!r.check.valid) {
    std::cerr << "oe: warning: draft did not pass oe validate and its smoke run; the files are in "
              << r.draft_dir.string() << ":\n";
    for (const auto& e : r.check.errors) {
      std::cerr << "  " << e << '\n';
    }
    for (const auto& e : r.check.preflight) {
      std::cerr << "  " << e << '\n';
    }
    std::cerr << "  revise it with `oe ultra-revise " << r.draft_dir.string()
              << " \"<what to change>\"`\n";
    return kExitUsage;
  }
  if (revise && !r.accepted_revision) {
    std::cerr << "oe: warning: no revision was better than the draft; " << r.draft_dir.string()
              << " keeps the previous version\n";
    return kExitUsage;
  }
  std::cout << "next: run or promote\n  1. oe run " << r.draft_dir.string() << "\n  2. mv "
            << r.draft_dir.string() << " examples/" << r.slug << '\n';
  return kExitOk;
}

}  // namespace

void addUltraCommand(CLI::App& app, int& exit_code) {
  struct Args {
    UltraArgs common;
    std::string task;
    std::string draft_root = ".openexpertise/drafts";
    std::string slug;
    bool dry_run = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "ultra",
      "Author a new experience from a task description: analyze, synthesize, then critique and "
      "revise, keeping the best draft that validates and passes a smoke run");
  cmd->add_option("task", a->task, "What the experience should do, in plain words")->required();
  cmd->add_option("--draft-root", a->draft_root, "Where the draft folder is created")
      ->capture_default_str();
  cmd->add_option("--slug", a->slug, "The draft folder's name (default: from the analysis)");
  cmd->add_flag("--dry-run", a->dry_run, "Analyze only: print the detected shape, write nothing");
  cmd->add_option("--corpus", a->common.corpus,
                  "A folder of experiences to pick the synthesizer's exemplars from (default: "
                  "oe's shipped examples)");
  addCommonOptions(*cmd, a->common);
  cmd->callback([a, &exit_code] {
    const auto stop = cancelOnSignal();  // first: every thread made later inherits the mask
    StderrLog sink;
    auto setup = prepare(a->common, sink, *stop, exit_code);
    if (!setup) {
      return;
    }
    if (!a->common.json) {
      std::cerr << "ultraexpertise: starting analyze phase\n";
    }
    std::error_code ec;
    const fs::path root = fs::absolute(a->draft_root, ec);
    auto result =
        ultra::author(setup->context(sink), a->task, root, a->slug, a->dry_run, setup->options);
    if (!result) {
      std::cerr << "oe: ultra: " << result.error().message << '\n';
      exit_code = stop->cancelled.load() ? 128 + stop->signal.load() : kExitFailed;
      return;
    }
    if (result->stopped) {
      if (a->common.json) {
        std::cout << result->toJson(false).dump(2) << '\n';
      } else {
        std::cout << "ultraexpertise: analysis (dry run, nothing written)\n"
                  << result->analysis.dump(2) << '\n';
        printUsage(result->loop);
      }
      exit_code = kExitOk;
      return;
    }
    exit_code = report(*result, a->common.json, /*revise=*/false);
  });
}

void addUltraReviseCommand(CLI::App& app, int& exit_code) {
  struct Args {
    UltraArgs common;
    std::string draft;
    std::string feedback;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "ultra-revise",
      "Revise an `oe ultra` draft with feedback; the revision is kept only when it validates, "
      "passes its smoke run and scores no worse");
  cmd->add_option("draft", a->draft, "The draft folder")->required();
  cmd->add_option("feedback", a->feedback, "What to change, in plain words")->required();
  addCommonOptions(*cmd, a->common);
  cmd->callback([a, &exit_code] {
    const auto stop = cancelOnSignal();  // first: every thread made later inherits the mask
    StderrLog sink;
    auto setup = prepare(a->common, sink, *stop, exit_code);
    if (!setup) {
      return;
    }
    std::error_code ec;
    const fs::path dir = fs::absolute(a->draft, ec).lexically_normal();
    auto result = ultra::reviseDraft(setup->context(sink), dir, a->feedback, setup->options);
    if (!result) {
      std::cerr << "oe: ultra-revise: " << result.error().message << '\n';
      exit_code = stop->cancelled.load() ? 128 + stop->signal.load() : kExitFailed;
      return;
    }
    exit_code = report(*result, a->common.json, /*revise=*/true);
  });
}

}  // namespace oe::cli
