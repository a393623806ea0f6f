// What `oe ultra` and `oe ultra-revise` share on the command line: the flags both take, the
// signal that cancels their phases, what they set up from the flags (ultra/toolkit), and the
// report they print.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "oe/cli/common.hpp"
#include "oe/ultra/toolkit.hpp"
#include "oe/ultra/ultra.hpp"

namespace oe::cli {

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

void addUltraOptions(CLI::App& cmd, UltraArgs& a);

// Ctrl-C (or SIGTERM) asks the phases to stop at the next LLM call or phase boundary, so no
// half-written draft and no smoke-run scratch folder is left behind; a second one ends oe at
// once. The signals go to a thread of their own (blocked here, before any other thread exists,
// so the smoke run's engine does not take them either).
struct Interruption {
  std::atomic<bool> cancelled{false};  // what the phases watch
  std::atomic<int> signal{0};          // which signal asked: exit 128 + it, as a shell reports
};
std::shared_ptr<Interruption> cancelOnSignal();

// Everything the module needs from the command line; nullopt (with the exit code set) when a
// flag or the set-up is wrong. `stop` (cancelOnSignal) becomes the phases' cancel flag.
struct PreparedUltra {
  ultra::Toolkit toolkit;
  ultra::Options options;
};
std::optional<PreparedUltra> prepareUltra(const UltraArgs& a, StderrLog& sink,
                                          const Interruption& stop, int& exit_code);

// Upstream's `draft created` fields, then the verdict and the next steps.
int reportUltra(const ultra::UltraResult& r, bool json, bool revise);

}  // namespace oe::cli
