// Approvals (docs/policy.md, "Approvals"): before a node with `approval:` (or kind approval)
// starts, the chain's decision is read from the approvals file; without one the question is
// recorded and the node parks (the run ends `waiting` once what else could run has run). A
// decision holds for the whole chain of runs, so the run that continues a parked one reads the
// same answer an uninterrupted run would have had, and a passed deadline is decided by its
// on_timeout the first time a run looks at it.
#include "oe/pg/connection.hpp"
#include "oe/run/engine.hpp"

namespace oe::run::engine {

Result<approvals::Store*> Run::approvalStore() {
  if (!approvals_) {
    // A nested run asks where the top run does (Nesting::approval_store); a run on a
    // PostgreSQL store asks in it, so a decision can come from any machine.
    const std::string where =
        !options_.nesting.approval_store.empty() ? options_.nesting.approval_store
        : pg::isUrl(options_.store_url)          ? options_.store_url
                                        : approvals::storePath(workspaceDir(exp_)).string();
    auto opened = approvals::Store::open(where);
    if (!opened) {
      return opened.error();
    }
    approvals_ = std::move(opened).value();
  }
  return approvals_.get();
}

Json Run::approvalShown(const NodeRuntime& node) {
  Json shown = Json::object();
  for (const std::string& entry : node.spec->approval->show) {
    if (entry.rfind("$.", 0) == 0) {
      std::optional<Json> value = resolveItems(entry, store_);
      shown[entry] = value ? std::move(*value) : Json();
    } else if (entry.rfind("diff:", 0) == 0) {
      // The diff summary (files, +/-, artifact) a worktree predecessor handed on.
      const std::string from = entry.substr(5);
      Json value;
      if (node.edge_inputs.is_object()) {
        if (auto it = node.edge_inputs.find(from);
            it != node.edge_inputs.end() && it->is_object() && it->contains("diff")) {
          value = (*it)["diff"];
        }
      }
      shown[entry] = std::move(value);
    }
  }
  return shown;
}

Run::Gate Run::approvalGate(NodeRuntime& node, Json& extra) {
  const spec::ApprovalSpec& spec = *node.spec->approval;
  const std::string& id = node.spec->id;
  // The question's identity: this run's chain and the node, or, in a nested run, the top run's
  // chain and the path of node ids from the top ("nest/review").
  const bool nested = options_.nesting.depth > 0;
  const std::string& chain = nested ? options_.nesting.approval_chain : chain_id_;
  const std::string key = options_.nesting.approval_prefix + id;
  // A refusal is the node's failure: its on_error applies (skip: its successors are skipped;
  // fail_run: the run stops), and `stop_run` stops the run whatever it says.
  auto refuse = [this, &node, &id](const std::string& error, bool stop_run) {
    node.outcome = Outcome::kRunning;
    ready_.started();
    log_.nodeFailed(id, error, node.spec->phase);
    ++summary_.failed;
    summary_.failures.push_back(NodeFailure{id, error});
    if ((stop_run || node.spec->on_error.policy == spec::ErrorPolicy::kFailRun) && !cancelling_) {
      cancelAll("node \"" + id + "\" failed: " + error);
    }
    finishNode(node, false);
    return Gate::kRefused;
  };
  if (nested && chain.empty()) {
    return refuse("node \"" + id +
                      "\" asks an approval inside a nested experience whose parent passed no "
                      "approvals file; run it from `oe run`",
                  false);
  }
  auto store = approvalStore();
  if (!store) {
    return refuse("node \"" + id + "\": " + store.error().message, false);
  }
  auto found = (*store)->find(chain, key);
  if (!found) {
    return refuse("node \"" + id + "\": " + found.error().message, false);
  }
  approvals::Request request;
  if (*found) {
    request = std::move(**found);
  } else {
    request.chain_id = chain;
    request.node_id = key;
    request.run_id = nested ? options_.nesting.approval_run_id : log_.runId();
    request.prompt = spec.prompt.empty() ? "Approve " + nodeLabel(node) + "?" : spec.prompt;
    request.shown = approvalShown(node);
    const int64_t now = approvals::nowMs();
    request.requested_at = approvals::isoOfMs(now);
    request.deadline_ms = spec.timeout_ms ? now + *spec.timeout_ms : -1;
    request.on_timeout = std::string(spec::toString(spec.on_timeout));
    // Recorded before the run says it waits: a run killed after this parks on the same
    // question (and deadline) when resumed; one killed before asks it then.
    auto asked = (*store)->ask(request);
    if (!asked) {
      return refuse("node \"" + id + "\": " + asked.error().message, false);
    }
    request = std::move(asked).value();
  }
  auto settled = (*store)->settleTimeout(request, approvals::nowMs());
  if (!settled) {
    return refuse("node \"" + id + "\": " + settled.error().message, false);
  }
  request = std::move(settled).value();
  if (!request.decision) {
    node.outcome = Outcome::kWaiting;
    parked_.push_back(key);
    Json fields = {{"prompt", request.prompt},
                   {"show", request.shown},
                   {"requested_at", request.requested_at},
                   {"on_timeout", request.on_timeout}};
    fields["deadline"] =
        request.deadline_ms >= 0 ? Json(approvals::isoOfMs(request.deadline_ms)) : Json();
    (void)log_.nodeEvent("approval.waiting", id, fields.dump());
    return Gate::kParked;
  }
  const approvals::Decision& decision = *request.decision;
  (void)log_.nodeEvent("approval.decided", id, decision.toJson().dump());
  if (decision.approved()) {
    if (spec.gate) {
      extra["$approval"] = decision.toJson();  // the gate's output (plugins/approval)
    }
    return Gate::kProceed;
  }
  if (decision.decision == "expired") {
    return refuse("node \"" + id + "\": nobody decided its approval by the deadline (" +
                      decision.at + "; on_timeout: fail)",
                  true);
  }
  return refuse("node \"" + id + "\": rejected by " + decision.by + " at " + decision.at +
                    (decision.comment.empty() ? std::string() : ": " + decision.comment),
                false);
}

}  // namespace oe::run::engine
