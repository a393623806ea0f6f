// `workspace: worktree` at run time (docs/workspaces.md): each attempt of such a node runs in a
// fresh git worktree, planned here on the coordinator (its path goes into the request's context
// as "workdir"), made, captured and removed on the attempt's own thread around the plugin call
// (git takes tens of milliseconds the coordinator does not wait for), and the diff summary is
// added to the attempt's output.
#include <filesystem>

#include "oe/run/engine.hpp"

namespace oe::run::engine {

namespace fs = std::filesystem;

Result<void> Run::prepareWorkspaces() {
  chain_id_ = options_.chain_id.empty() ? log_.runId() : options_.chain_id;
  for (NodeRuntime& node : nodes_) {
    const spec::NodeSpec& spec = *node.spec;
    if (!spec.workspace) {
      continue;
    }
    if (spec.kind != "tool" && spec.kind != "cli-agent") {
      return makeError("node \"" + spec.id + "\" (kind " + spec.kind +
                       "): workspace: worktree applies to tool and cli-agent nodes only");
    }
    const fs::path dir = spec.workspace->repo.empty()
                             ? exp_.dir
                             : (exp_.dir / spec.workspace->repo).lexically_normal();
    auto repo = workspace::Worktrees::findRepo(dir);
    if (!repo) {
      return makeError("node \"" + spec.id + "\": workspace: worktree: " + repo.error().message);
    }
    for (const auto& known : worktrees_) {
      if (known->repo().root == repo->root) {
        node.worktrees = known.get();
      }
    }
    if (node.worktrees == nullptr) {
      worktrees_.push_back(std::make_unique<workspace::Worktrees>(std::move(repo).value()));
      node.worktrees = worktrees_.back().get();
    }
    if (exp_.policy || spec.policy) {
      // The confinement is made once per node and names only folders that exist (Landlock):
      // the run's worktree folder is made now, and every attempt's worktree is made inside it.
      std::error_code ec;
      fs::create_directories(
          workspace::chainFolder(node.worktrees->repo(), chain_id_) / log_.runId(), ec);
    }
  }
  return {};
}

std::string Run::planWorktree(NodeRuntime& node, Call& call) {
  call.worktree.reset();
  call.diff.reset();
  call.worktree_kept = false;
  if (node.worktrees == nullptr) {
    return {};
  }
  const std::string key = workspace::worktreeKey(node.spec->id, itemOf(call));
  call.worktree = node.worktrees->plan(chain_id_, log_.runId(), key, exp_.dir);
  return ",\"workdir\":" + jsonQuoted(call.worktree->workdir.string());
}

bool Run::runInWorktree(Call& call, const std::function<bool()>& invoke) {
  if (!call.worktree) {
    return invoke();
  }
  workspace::Worktrees& trees = *call.node->worktrees;
  const std::string key = workspace::worktreeKey(call.node->spec->id, itemOf(call));
  if (auto made = trees.make(*call.worktree, chain_id_, key); !made) {
    call.status = OE_FAILED_PRECONDITION;
    call.error.data = nodeLabel(*call.node) + ": workspace: worktree: " + made.error().message;
    call.worktree.reset();
    return true;
  }
  if (!invoke()) {
    return false;  // abandoned: the run has gone on; the worktree stays for a resume to clear
  }
  if (call.status != OE_OK) {
    call.worktree_kept = true;  // for the user to look at; the next attempt or resume clears it
    return true;
  }
  auto diff = trees.capture(*call.worktree, exp_.dir / ".openexpertise" / "artifacts");
  if (!diff) {
    call.status = OE_INTERNAL;
    call.error.data = nodeLabel(*call.node) + ": workspace: worktree: " + diff.error().message;
    call.worktree_kept = true;
    return true;
  }
  call.diff = std::move(diff).value();
  if (auto removed = trees.remove(*call.worktree); !removed) {
    // The diff is safe in its artifact: a worktree left behind is cleared by the next run of
    // the node in this chain, so the attempt stands.
    call.worktree_kept = true;
  }
  return true;
}

void Run::worktreeOutput(Call& call, Json& output) {
  if (!call.diff || !output.is_object()) {
    return;
  }
  Json summary = call.diff->toJson();
  Json& edge = output["edge_output"];
  if (edge.is_null()) {
    edge = Json::object();
  }
  if (edge.is_object()) {
    edge["diff"] = summary;
  }
  Json fields = summary;
  fields["branch"] = call.worktree ? call.worktree->branch : std::string();
  logDiff(call, std::move(fields));
}

void Run::replayedDiff(const Call& call, const Json& edge_output) {
  if (call.node->worktrees == nullptr || !edge_output.is_object() ||
      !edge_output.contains("diff") || !edge_output["diff"].is_object()) {
    return;
  }
  Json fields = edge_output["diff"];
  fields["cached"] = true;
  logDiff(call, std::move(fields));
}

void Run::logDiff(const Call& call, Json fields) {
  fields["repo"] = call.node->worktrees->repo().root.string();  // where `oe apply-diff` applies it
  if (const int64_t item = itemOf(call); item >= 0) {
    fields["item"] = item;
  }
  (void)log_.nodeEvent("node.diff", call.node->spec->id, fields.dump());
}

std::string Run::worktreeNote(const Call& call) {
  if (!call.worktree_kept || !call.worktree) {
    return {};
  }
  return " (its worktree is kept at " + call.worktree->path.string() + ", branch " +
         call.worktree->branch + "; the node's next attempt in this chain of runs removes it)";
}

}  // namespace oe::run::engine
