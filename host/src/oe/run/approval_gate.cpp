// Approvals (docs/policy.md, "Approvals"): before a node with `approval:` (or kind approval)
// starts, the chain's decision is read from the approvals file; without one the question is
// recorded and the node parks (the run ends `waiting` once what else could run has run). A
// decision holds for the whole chain of runs, so the run that continues a parked one reads the
// same answer an uninterrupted run would have had, and a passed deadline is decided by its
// on_timeout the first time a run looks at it. A pipeline stage or loop body asks once per item
// or iteration, under that call's write key, through the same question and decision.
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

Json Run::approvalShown(const NodeRuntime& node, const Json& extra, const Json& edge_inputs) {
  Json shown = Json::object();
  for (const std::string& entry : node.spec->approval->show) {
    if (entry.rfind("$.", 0) == 0) {
      std::optional<Json> value = resolveItems(entry, store_);
      shown[entry] = value ? std::move(*value) : Json();
    } else if (entry.rfind("diff:", 0) == 0) {
      // The diff summary (files, +/-, artifact) a worktree predecessor handed on.
      const std::string from = entry.substr(5);
      Json value;
      if (edge_inputs.is_object()) {
        if (auto it = edge_inputs.find(from);
            it != edge_inputs.end() && it->is_object() && it->contains("diff")) {
          value = (*it)["diff"];
        }
      }
      shown[entry] = std::move(value);
    }
  }
  // Which item the question is about: the approver sees it beside what `show:` names.
  for (const char* name : {"$item", "$index", "$iter"}) {
    if (auto it = extra.find(name); it != extra.end()) {
      shown[name] = *it;
    }
  }
  return shown;
}

Run::Asked Run::askApproval(NodeRuntime& node, const std::string& key, Json& extra,
                            const Json& edge_inputs) {
  const spec::ApprovalSpec& spec = *node.spec->approval;
  const std::string& id = node.spec->id;
  // The question's identity: this run's chain and `key`, or, in a nested run, the top run's
  // chain and the path of node ids from the top ("nest/review").
  const bool nested = options_.nesting.depth > 0;
  const std::string& chain = nested ? options_.nesting.approval_chain : chain_id_;
  const std::string full_key = options_.nesting.approval_prefix + key;
  auto refused = [](std::string error, bool stop_run = false) {
    return Asked{Gate::kRefused, std::move(error), stop_run};
  };
  if (nested && chain.empty()) {
    return refused("node \"" + id +
                   "\" asks an approval inside a nested experience whose parent passed no "
                   "approvals file; run it from `oe run`");
  }
  auto store = approvalStore();
  if (!store) {
    return refused("node \"" + id + "\": " + store.error().message);
  }
  auto found = (*store)->find(chain, full_key);
  if (!found) {
    return refused("node \"" + id + "\": " + found.error().message);
  }
  approvals::Request request;
  if (*found) {
    request = std::move(**found);
  } else {
    request.chain_id = chain;
    request.node_id = full_key;
    request.run_id = nested ? options_.nesting.approval_run_id : log_.runId();
    request.prompt = spec.prompt.empty() ? "Approve " + nodeLabel(node) + "?" : spec.prompt;
    request.shown = approvalShown(node, extra, edge_inputs);
    const int64_t now = approvals::nowMs();
    request.requested_at = approvals::isoOfMs(now);
    request.deadline_ms = spec.timeout_ms ? now + *spec.timeout_ms : -1;
    request.on_timeout = std::string(spec::toString(spec.on_timeout));
    // Recorded before the run says it waits: a run killed after this parks on the same
    // question (and deadline) when resumed; one killed before asks it then.
    auto asked = (*store)->ask(request);
    if (!asked) {
      return refused("node \"" + id + "\": " + asked.error().message);
    }
    request = std::move(asked).value();
  }
  auto settled = (*store)->settleTimeout(request, approvals::nowMs());
  if (!settled) {
    return refused("node \"" + id + "\": " + settled.error().message);
  }
  request = std::move(settled).value();
  // A stage's or loop body's events name the question they are about (its key in
  // `oe approve RUN KEY`); a main-pass node's key is its id.
  auto withKey = [&key, &id](Json fields) {
    if (key != id) {
      fields["key"] = key;
    }
    return fields;
  };
  if (!request.decision) {
    parked_.push_back(full_key);
    Json fields = {{"prompt", request.prompt},
                   {"show", request.shown},
                   {"requested_at", request.requested_at},
                   {"on_timeout", request.on_timeout}};
    fields["deadline"] =
        request.deadline_ms >= 0 ? Json(approvals::isoOfMs(request.deadline_ms)) : Json();
    (void)log_.nodeEvent("approval.waiting", id, withKey(std::move(fields)).dump());
    return Asked{Gate::kParked, {}, false};
  }
  const approvals::Decision& decision = *request.decision;
  (void)log_.nodeEvent("approval.decided", id, withKey(decision.toJson()).dump());
  if (decision.approved()) {
    if (spec.gate) {
      extra["$approval"] = decision.toJson();  // the gate's output (plugins/approval)
    }
    return Asked{Gate::kProceed, {}, false};
  }
  const std::string who = key == id ? "node \"" + id + "\"" : "node \"" + id + "\" (" + key + ")";
  if (decision.decision == "expired") {
    return refused(who + ": nobody decided its approval by the deadline (" + decision.at +
                       "; on_timeout: fail)",
                   true);
  }
  return refused(who + ": rejected by " + decision.by + " at " + decision.at +
                 (decision.comment.empty() ? std::string() : ": " + decision.comment));
}

void Run::failRefused(NodeRuntime& node, const Asked& asked, int64_t item) {
  const std::string& id = node.spec->id;
  log_.nodeFailed(id, asked.error, node.spec->phase, false, item);
  ++summary_.failed;
  summary_.failures.push_back(NodeFailure{id, asked.error});
  if ((asked.stop_run || node.spec->on_error.policy == spec::ErrorPolicy::kFailRun) &&
      !cancelling_) {
    any_failure_ = true;
    cancelAll("node \"" + id + "\" failed: " + asked.error);
  }
}

Run::Gate Run::approvalGate(NodeRuntime& node, Json& extra) {
  Asked asked = askApproval(node, node.spec->id, extra, node.edge_inputs);
  if (asked.gate == Gate::kParked) {
    node.outcome = Outcome::kWaiting;
  } else if (asked.gate == Gate::kRefused) {
    // A refusal is the node's failure: its on_error applies (skip: its successors are skipped;
    // fail_run: the run stops), and an expired `on_timeout: fail` stops the run whatever it
    // says.
    node.outcome = Outcome::kRunning;
    ready_.started();
    failRefused(node, asked, -1);
    finishNode(node, false);
  }
  return asked.gate;
}

Run::Gate Run::itemApprovalGate(NodeRuntime& node, Json& extra, const Json& edge_inputs) {
  const std::string& id = node.spec->id;
  Asked asked = askApproval(node, writeKey(id, extra), extra, edge_inputs);
  if (asked.gate == Gate::kRefused) {
    // As a failed call of that item: logged with its item, counted, settled as failed, and its
    // on_error applies (retry would meet the same answer, so it is not applied).
    const Json& item = extra.contains("$loop") ? extra["$iter"] : extra["$index"];
    failRefused(node, asked, item.is_number_integer() ? item.get<int64_t>() : -1);
    settleRepeated(node, false);
  } else if (asked.gate == Gate::kParked) {
    parkRepeated();
  }
  return asked.gate;
}

}  // namespace oe::run::engine
