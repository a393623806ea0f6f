// `oe ultra <task>` and `oe ultra-revise <draft> <feedback>` (reference §8.3): the ultra module
// (host/src/oe/ultra: its set-up, the phases) driven from the command line, progress per phase
// on stderr, upstream's summary on stdout (or the result as JSON with --json), and upstream's exit
// codes: 0 a valid draft, 1 no provider / bad flags / a failed LLM phase, 2 a draft that is
// invalid or a revision that was not accepted (the files are still written). What both share is
// in ultra_common.
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/ultra_common.hpp"
#include "oe/report/run_summary.hpp"
#include "oe/ultra/ultra.hpp"

namespace oe::cli {
namespace {
namespace fs = std::filesystem;
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
  addUltraOptions(*cmd, a->common);
  cmd->callback([a, &exit_code] {
    const auto stop = cancelOnSignal();  // first: every thread made later inherits the mask
    StderrLog sink;
    auto prepared = prepareUltra(a->common, sink, *stop, exit_code);
    if (!prepared) {
      return;
    }
    if (!a->common.json) {
      std::cerr << "ultraexpertise: starting analyze phase\n";
    }
    std::error_code ec;
    const fs::path root = fs::absolute(a->draft_root, ec);
    auto result = ultra::author(prepared->toolkit.context(sink), a->task, root, a->slug, a->dry_run,
                                prepared->options);
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
        if (result->loop.usage.calls > 0) {
          std::cout << report::usageLine(result->loop.usage) << '\n';
        }
      }
      exit_code = kExitOk;
      return;
    }
    exit_code = reportUltra(*result, a->common.json, /*revise=*/false);
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
  addUltraOptions(*cmd, a->common);
  cmd->callback([a, &exit_code] {
    const auto stop = cancelOnSignal();  // first: every thread made later inherits the mask
    StderrLog sink;
    auto prepared = prepareUltra(a->common, sink, *stop, exit_code);
    if (!prepared) {
      return;
    }
    std::error_code ec;
    const fs::path dir = fs::absolute(a->draft, ec).lexically_normal();
    auto result =
        ultra::reviseDraft(prepared->toolkit.context(sink), dir, a->feedback, prepared->options);
    if (!result) {
      std::cerr << "oe: ultra-revise: " << result.error().message << '\n';
      exit_code = stop->cancelled.load() ? 128 + stop->signal.load() : kExitFailed;
      return;
    }
    exit_code = reportUltra(*result, a->common.json, /*revise=*/true);
  });
}

}  // namespace oe::cli
