// `oe apply-diff RUN NODE [--item N]`: applies what an attempt of a `workspace: worktree` node
// changed (its node.diff event's artifact) to the working tree of the repository it came from
// (docs/workspaces.md); all of it, or nothing with git's reason when it does not apply.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/events/event_log.hpp"
#include "oe/workspace/worktree.hpp"

namespace oe::cli {

void addApplyDiffCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string run_id;
    std::string node;
    std::optional<int64_t> item;
    std::string experience = ".";
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "apply-diff", "Apply the diff a workspace: worktree node's attempt captured to the checkout");
  cmd->add_option("run-id", a->run_id, "The run: its id or a unique prefix of it")->required();
  cmd->add_option("node", a->node, "The node id")->required();
  cmd->add_option("--item", a->item, "The for_each item (its index)");
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->callback([a, &exit_code] {
    auto run = resolveRun(a->experience, a->run_id, false);
    if (!run) {
      exit_code = kExitUsage;
      return;
    }
    auto log = events::readEventLog(run->log);
    if (!log) {
      std::cerr << "oe: " << log.error().message << '\n';
      exit_code = kExitFailed;
      return;
    }
    const Json* found = nullptr;
    std::string items;
    for (const Json& event : log->events) {
      if (!event.is_object() || event.value("type", std::string()) != "node.diff" ||
          event.value("node_id", std::string()) != a->node) {
        continue;
      }
      const bool has_item = event.contains("item") && event["item"].is_number_integer();
      if (has_item) {
        items += (items.empty() ? "" : ", ") + event["item"].dump();
      }
      if ((!a->item && !has_item) ||
          (a->item && has_item && event["item"].get<int64_t>() == *a->item)) {
        found = &event;
      }
    }
    if (found == nullptr) {
      std::cerr << "oe: run " << run->id << " has no diff of node \"" << a->node << "\""
                << (a->item ? " item " + std::to_string(*a->item) : std::string())
                << (items.empty() ? std::string(" (only a workspace: worktree node's attempt "
                                                "that succeeded in this run has one; oe "
                                                "inspect lists them)")
                                  : "; its items with a diff: " + items + " (--item N)")
                << '\n';
      exit_code = kExitUsage;
      return;
    }
    const std::filesystem::path file = std::filesystem::path(a->experience) / ".openexpertise" /
                                       "artifacts" /
                                       (found->value("artifact", std::string()) + ".diff");
    const std::filesystem::path repo = found->value("repo", std::string());
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      std::cerr << "oe: the diff " << file.string() << " is gone (oe gc, or removed by hand)\n";
      exit_code = kExitFailed;
      return;
    }
    if (auto applied = workspace::applyDiff(repo, file); !applied) {
      std::cerr << "oe: not applied: " << applied.error().message << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::cout << "applied " << file.string() << " to " << repo.string() << " ("
              << found->value("files", Json::array()).size() << " files, +"
              << found->value("insertions", 0) << " -" << found->value("deletions", 0) << ")\n";
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli
