// `oe approve RUN NODE` and `oe reject RUN NODE`: a person's decision on a parked run's
// approval (docs/policy.md, "Approvals"), recorded in the approvals file (one decider wins),
// then the run continued as `oe resume` does unless --no-continue. The rules are
// src/oe/approvals; the run's lookup runs/, the continuation cmd_run.cpp.
#include <iostream>
#include <memory>
#include <string>

#include "oe/approvals/approval_store.hpp"
#include "oe/approvals/decision_text.hpp"
#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"

namespace oe::cli {

namespace {

struct DecideArgs {
  std::string run_id;
  std::string node;
  std::string comment;
  std::string as;
  bool no_continue = false;
  bool json = false;
  bool quiet = false;
  std::string experience = ".";
};

// The newest run of `chain_id` (the one a continuation resumes), else `fallback`.
std::string newestOfChain(const std::filesystem::path& runs_dir, const std::string& chain_id,
                          const std::string& fallback) {
  for (const auto& run : listRuns(runs_dir, true)) {  // newest first
    if ((run.chain_id.empty() ? run.id : run.chain_id) == chain_id) {
      return run.id;
    }
  }
  return fallback;
}

int decide(const DecideArgs& a, bool approve) {
  const auto workspace = experienceWorkspace(a.experience);
  if (!workspace) {
    return kExitUsage;
  }
  auto found = resolveRun(a.experience, a.run_id, false);
  if (!found) {
    return kExitUsage;
  }
  // findRun reads no details; the chain is in the run's record.
  std::string chain_id = found->id;
  for (const auto& run : listRuns(*workspace / "runs", true)) {
    if (run.id == found->id && !run.chain_id.empty()) {
      chain_id = run.chain_id;
    }
  }
  auto store = approvals::Store::open(approvals::storePath(*workspace));
  if (!store) {
    std::cerr << "oe: " << store.error().message << '\n';
    return kExitFailed;
  }
  auto request = (*store)->find(chain_id, a.node);
  if (!request) {
    std::cerr << "oe: " << request.error().message << '\n';
    return kExitFailed;
  }
  if (!*request) {
    std::string asked;
    if (auto all = (*store)->list(chain_id); all) {
      for (const auto& r : *all) {
        asked += (asked.empty() ? "" : ", ") + ("\"" + r.node_id + "\"");
      }
    }
    std::cerr << "oe: run " << found->id << " asks no approval of node \"" << a.node << "\""
              << (asked.empty() ? std::string("; it asks none (`oe runs --waiting` lists "
                                              "the runs that wait)")
                                : "; it asks about " + asked)
              << '\n';
    return kExitUsage;
  }
  // A deadline that passed is decided by its on_timeout before anyone else can.
  auto settled = (*store)->settleTimeout(**request, approvals::nowMs());
  if (!settled) {
    std::cerr << "oe: " << settled.error().message << '\n';
    return kExitFailed;
  }
  approvals::Decision decision;
  decision.decision = approve ? "approved" : "rejected";
  decision.by = approvals::deciderName(a.as);
  decision.at = approvals::isoOfMs(approvals::nowMs());
  decision.comment = a.comment;
  auto decided = (*store)->decide(chain_id, a.node, decision);
  if (!decided) {
    std::cerr << "oe: " << decided.error().message << '\n';
    return kExitFailed;
  }
  const approvals::Decision& stands = *decided->request.decision;
  if (!decided->won) {
    std::cerr << "oe: node \"" << a.node << "\" of run " << found->id << " was already "
              << approvals::describeDecision(stands) << "; your "
              << (approve ? "approval" : "rejection") << " was not recorded"
              << (a.no_continue ? "" : " and the run is not continued by it") << '\n';
    return kExitFailed;
  }
  std::cerr << "oe: node \"" << a.node << "\" of run " << found->id << " "
            << approvals::describeDecision(stands) << '\n';
  if (a.no_continue) {
    std::cerr << "oe: continue it with `oe resume " << found->id
              << (a.experience == "." ? std::string() : " --experience " + a.experience) << "`\n";
    return kExitOk;
  }
  return continueRun(a.experience, newestOfChain(*workspace / "runs", chain_id, found->id), a.json,
                     a.quiet);
}

void addDecideCommand(CLI::App& app, int& exit_code, bool approve) {
  auto a = std::make_shared<DecideArgs>();
  CLI::App* cmd = app.add_subcommand(
      approve ? "approve" : "reject",
      approve ? "Approve a parked run's node (recorded with who, when, comment), then continue "
                "the run"
              : "Reject a parked run's node (it fails as its on_error says), then continue the "
                "run");
  cmd->add_option("run-id", a->run_id, "The run: its id or a unique prefix of it")->required();
  cmd->add_option("node", a->node, "The node whose approval is asked")->required();
  cmd->add_option("--comment", a->comment, "Why (recorded with the decision)");
  cmd->add_option("--as", a->as, "Who decides (default: $USER)");
  cmd->add_flag("--no-continue", a->no_continue,
                "Record the decision only; `oe resume` continues the run later");
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->add_flag("--json", a->json, "The continued run's summary as JSON, no progress");
  cmd->add_flag("-q,--quiet", a->quiet, "No per-node progress of the continued run");
  cmd->callback([a, &exit_code, approve] { exit_code = decide(*a, approve); });
}

}  // namespace

void addApproveCommand(CLI::App& app, int& exit_code) { addDecideCommand(app, exit_code, true); }
void addRejectCommand(CLI::App& app, int& exit_code) { addDecideCommand(app, exit_code, false); }

}  // namespace oe::cli
