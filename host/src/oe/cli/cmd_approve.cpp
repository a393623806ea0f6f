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
#include "oe/cli/store_option.hpp"
#include "oe/pgstore/run_record.hpp"

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
  std::string store;  // --store URL (docs/storage.md)
};

// Where the run and its approvals are: the chain of the named run, the newest run of that chain
// (the one a continuation resumes), and the approvals' place (Store::open's `where`).
struct Located {
  std::string run_id;
  std::string chain_id;
  std::string newest;
  std::string approvals;
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

// From the experience's logs (SQLite), or from the PostgreSQL store `url`, where the run may
// have parked on another machine. nullopt after saying why, with `exit_code` set.
std::optional<Located> locate(const DecideArgs& a, const std::string& url, int& exit_code) {
  exit_code = kExitUsage;
  Located where;
  if (pg::isUrl(url)) {
    auto conn = openStore(url);
    if (!conn) {
      std::cerr << "oe: " << conn.error().message << '\n';
      exit_code = kExitFailed;
      return std::nullopt;
    }
    auto run = resolveStoreRun(**conn, a.run_id, false, a.experience);
    if (!run) {
      return std::nullopt;
    }
    where.run_id = run->run_id;
    where.chain_id = run->chain_id.empty() ? run->run_id : run->chain_id;
    where.newest = run->run_id;
    if (auto runs = pgstore::listRuns(**conn, run->scope); runs) {
      for (const auto& other : *runs) {  // oldest first: the last of the chain wins
        if ((other.chain_id.empty() ? other.run_id : other.chain_id) == where.chain_id) {
          where.newest = other.run_id;
        }
      }
    }
    where.approvals = url;
    return where;
  }
  const auto workspace = experienceWorkspace(a.experience);
  if (!workspace) {
    return std::nullopt;
  }
  auto found = resolveRun(a.experience, a.run_id, false);
  if (!found) {
    return std::nullopt;
  }
  where.run_id = found->id;
  // findRun reads no details; the chain is in the run's record.
  where.chain_id = found->id;
  for (const auto& run : listRuns(*workspace / "runs", true)) {
    if (run.id == found->id && !run.chain_id.empty()) {
      where.chain_id = run.chain_id;
    }
  }
  where.newest = newestOfChain(*workspace / "runs", where.chain_id, found->id);
  where.approvals = approvals::storePath(*workspace).string();
  return where;
}

int decide(const DecideArgs& a, bool approve) {
  const std::string url = resolveStore(a.store, nullptr);
  int exit_code = kExitOk;
  const auto where = locate(a, url, exit_code);
  if (!where) {
    return exit_code;
  }
  const std::string& chain_id = where->chain_id;
  auto store = approvals::Store::open(where->approvals);
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
    std::cerr << "oe: run " << where->run_id << " asks no approval of node \"" << a.node << "\""
              << (asked.empty() ? std::string("; it asks none (`oe runs --waiting` lists "
                                              "the runs that wait)")
                                : "; it asks about " + asked)
              << '\n';
    return kExitUsage;
  }
  // A deadline that passed is decided by its on_timeout before anyone else can (the decide
  // below then reads that decision back and says so).
  if (auto settled = (*store)->settleTimeout(**request, approvals::nowMs()); !settled) {
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
    std::cerr << "oe: node \"" << a.node << "\" of run " << where->run_id << " was already "
              << approvals::describeDecision(stands) << "; your "
              << (approve ? "approval" : "rejection") << " was not recorded"
              << (a.no_continue ? "" : " and the run is not continued by it") << '\n';
    return kExitFailed;
  }
  std::cerr << "oe: node \"" << a.node << "\" of run " << where->run_id << " "
            << approvals::describeDecision(stands) << '\n';
  if (a.no_continue) {
    std::cerr << "oe: continue it with `oe resume " << where->newest
              << (a.experience == "." ? std::string() : " --experience " + a.experience)
              << (a.store.empty() ? std::string() : " --store ...") << "`\n";
    return kExitOk;
  }
  return continueRun(a.experience, where->newest, a.store, a.json, a.quiet);
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
  addStoreOption(*cmd, a->store);
  cmd->callback([a, &exit_code, approve] { exit_code = decide(*a, approve); });
}

}  // namespace

void addApproveCommand(CLI::App& app, int& exit_code) { addDecideCommand(app, exit_code, true); }
void addRejectCommand(CLI::App& app, int& exit_code) { addDecideCommand(app, exit_code, false); }

}  // namespace oe::cli
