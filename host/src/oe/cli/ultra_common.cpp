// The flags, set-up and report `oe ultra` and `oe ultra-revise` share (see ultra_common.hpp).
#include "oe/cli/ultra_common.hpp"

#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "oe/cli/app.hpp"
#include "oe/cli/events_fd.hpp"
#include "oe/cli/progress.hpp"
#include "oe/registry/registry.hpp"
#include "oe/report/run_summary.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

void addUltraOptions(CLI::App& cmd, UltraArgs& a) {
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

std::optional<PreparedUltra> prepareUltra(const UltraArgs& a, StderrLog& sink,
                                          const Interruption& stop, int& exit_code) {
  exit_code = kExitFailed;
  if (!a.llm.empty() && a.llm != "anthropic" && a.llm != "openai") {
    std::cerr << "oe: unknown --llm value \"" << a.llm << "\"; use anthropic or openai\n";
    return std::nullopt;
  }
  if (a.max_rounds < 0 || a.fix_rounds < 0) {
    std::cerr << "oe: --max-rounds and --fix-rounds must be 0 or more\n";
    return std::nullopt;
  }
  ultra::ToolkitConfig config;
  config.llm.env = llm::Environment::fromProcess();
  config.llm.provider_flag = a.llm;
  if (!a.llm_record.empty()) {
    config.llm.record_file = a.llm_record;
  }
  if (!a.llm_replay.empty()) {
    config.llm.replay_file = a.llm_replay;
  }
  config.llm.budget.max_tokens = a.max_tokens;
  config.llm.budget.max_cost_usd = a.max_cost_usd;
  config.data_dir = registry::shippedDataDir();
  if (!a.prompts.empty()) {
    config.prompts_dir = fs::path(a.prompts);
  } else if (const char* env_dir = std::getenv("OE_ULTRA_PROMPTS");  // NOLINT: read only
             env_dir != nullptr && *env_dir != '\0') {
    config.prompts_dir = fs::path(env_dir);
  }
  const llm::Environment env = config.llm.env;
  const std::optional<fs::path> data = config.data_dir;
  // Asked while makeToolkit loads the plugins (OE_PLUGIN_PATH's need trust: docs/trust.md).
  const auto gate = ops::trustGate();
  config.trust = gate.get();
  auto toolkit = ultra::makeToolkit(std::move(config), sink, [](const std::string& warning) {
    std::cerr << "oe: warning: " << warning << '\n';
  });
  if (!toolkit) {
    std::cerr << "oe: " << toolkit.error().message << '\n';
    return std::nullopt;
  }
  PreparedUltra prepared{std::move(*toolkit), {}};
  ultra::Options& o = prepared.options;
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
  return prepared;
}

int reportUltra(const ultra::UltraResult& r, bool json, bool revise) {
  const bool ok = r.check.valid && (!revise || r.accepted_revision);
  if (json) {
    std::cout << r.toJson(/*with_contents=*/false).dump(2) << '\n';
    return ok ? kExitOk : kExitUsage;
  }
  // ultra-revise keeps the previous draft when no revision beat it: say "kept", not "revised".
  const char* outcome =
      !revise ? "draft created " : (r.accepted_revision ? "draft revised " : "draft kept ");
  std::cout << "ultraexpertise: " << outcome << ultra::draftSummary(r).dump() << '\n';
  if (r.loop.usage.calls > 0) {
    std::cout << report::usageLine(r.loop.usage) << '\n';
  }
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

}  // namespace oe::cli
