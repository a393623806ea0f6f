// `workspace: worktree` end to end (docs/workspaces.md): real git, the real `oe`, real tools and a
// fake coding CLI (an executable named claude first on PATH).
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

namespace fs = std::filesystem;

class WorkspaceTest : public OeTest {
 protected:
  ProcessResult git(std::vector<std::string> args) {
    args.insert(args.begin(), "git");
    return runProcess(args, {{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@t"},
                             {"GIT_COMMITTER_NAME", "t"}, {"GIT_COMMITTER_EMAIL", "t@t"}},
                      dir_.path());
  }
  // The temp folder as a repository with one commit of what is in it now.
  void commitAll() {
    dir_.write(".gitignore", ".openexpertise/\n");
    ASSERT_EQ(git({"init", "-q"}).exit_code, 0);
    ASSERT_EQ(git({"add", "-A"}).exit_code, 0);
    ASSERT_EQ(git({"commit", "-q", "-m", "init"}).exit_code, 0);
  }
  std::string porcelainStatus() { return git({"status", "--porcelain"}).out; }
  size_t worktreeCount() {
    const std::string out = git({"worktree", "list", "--porcelain"}).out;
    size_t n = 0;
    for (size_t at = out.find("worktree "); at != std::string::npos;
         at = out.find("\nworktree ", at + 1)) {
      ++n;
    }
    return n;
  }
  std::string oeBranches() { return git({"branch", "--list", "oe/*"}).out; }
  static std::string readFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  // Commits the folder, runs it (it must succeed: `run` gets its summary) and returns its one
  // node.diff event.
  nlohmann::json commitRunAndTakeTheDiff(nlohmann::json& run) {
    commitAll();
    run = runJson();
    EXPECT_EQ(run.value("status", ""), "success") << last_stderr_;
    auto found = diffs(run.value("run_id", ""));
    EXPECT_EQ(found.size(), 1U);
    return found.empty() ? nlohmann::json::object() : found[0];
  }
  std::vector<nlohmann::json> diffs(const std::string& run_id) {
    std::vector<nlohmann::json> out;
    for (auto& e : events(run_id)) {
      if (e.value("type", "") == "node.diff") {
        out.push_back(e);
      }
    }
    return out;
  }
};

constexpr const char* kToolYaml =
    "name: ws\nversion: 0.1.0\nstate:\n  schema: {}\ngraph:\n  nodes:\n"
    "    - { id: edit, kind: tool, impl: ./edit.sh, workspace: worktree }\n  edges: []\n";

TEST_F(WorkspaceTest, ToolNodeDiffIsCapturedTheWorktreeRemovedAndApplyDiffAppliesIt) {
  dir_.write("a.txt", "hello\n");
  writeExecutable("edit.sh",
                  "#!/bin/sh\ncat >/dev/null\necho edited >> a.txt\nprintf 'x\\0y' > new.bin\n"
                  "echo '{\"state_delta\":{},\"edge_output\":{\"cwd\":\"'\"$PWD\"'\"}}'\n");
  writeExperience(kToolYaml);
  nlohmann::json run;
  const auto diff = commitRunAndTakeTheDiff(run);
  ASSERT_FALSE(HasFailure());
  const std::string run_id = run["run_id"];
  EXPECT_EQ(diff["files"], nlohmann::json({"a.txt", "new.bin"}));
  EXPECT_EQ(diff["insertions"], 1);
  EXPECT_EQ(diff["branch"], "oe/" + run_id + "/edit");
  const fs::path artifact =
      dir_.path() / ".openexpertise" / "artifacts" / (diff["artifact"].get<std::string>() + ".diff");
  const std::string text = readFile(artifact);
  EXPECT_NE(text.find("+edited"), std::string::npos) << text;
  EXPECT_NE(text.find("GIT binary patch"), std::string::npos) << text;
  // The main checkout untouched, the worktree and its branch gone.
  EXPECT_EQ(porcelainStatus(), "");
  EXPECT_EQ(readFile(dir_.path() / "a.txt"), "hello\n");
  EXPECT_EQ(worktreeCount(), 1U);
  EXPECT_EQ(oeBranches(), "");

  auto listed = oe({"inspect", run_id});
  EXPECT_NE(listed.out.find("edit  2 files  +1 -0"), std::string::npos) << listed.out;

  auto applied = oe({"apply-diff", run_id, "edit"});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(readFile(dir_.path() / "a.txt"), "hello\nedited\n");
  EXPECT_EQ(readFile(dir_.path() / "new.bin"), std::string("x\0y", 3));
  // Applied already: it no longer applies, and nothing changes.
  auto again = oe({"apply-diff", run_id, "edit"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("does not apply"), std::string::npos) << again.err;
  EXPECT_EQ(readFile(dir_.path() / "a.txt"), "hello\nedited\n");
}

// A Node.js tool runs in a worker of its own per worktree attempt, with the worktree as its cwd:
// its relative writes land in the worktree's diff, never in the main checkout, and the shared
// worker of the run's other .mjs tools keeps its own cwd.
TEST_F(WorkspaceTest, AnMjsToolWritesInItsWorktreeNotTheMainCheckout) {
  dir_.write("a.txt", "hello\n");
  dir_.write("edit.mjs",
             "import { appendFileSync } from 'node:fs';\n"
             "export default async function () {\n"
             "  appendFileSync('a.txt', 'from node\\n');\n"
             "  return { state_delta: { edit_cwd: process.cwd() } };\n"
             "}\n");
  dir_.write("plain.mjs",
             "export default async function () {\n"
             "  return { state_delta: { plain_cwd: process.cwd() } };\n"
             "}\n");
  writeExperience(
      "name: ws\nversion: 0.1.0\nstate:\n  schema: { edit_cwd: { type: string }, plain_cwd: "
      "{ type: string } }\ngraph:\n  nodes:\n"
      "    - { id: edit, kind: tool, impl: ./edit.mjs, workspace: worktree, writes: [edit_cwd] }\n"
      "    - { id: plain, kind: tool, impl: ./plain.mjs, writes: [plain_cwd] }\n  edges: []\n");
  nlohmann::json run;
  const auto diff = commitRunAndTakeTheDiff(run);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(diff["files"], nlohmann::json({"a.txt"}));
  EXPECT_EQ(diff["insertions"], 1);
  const fs::path artifact = dir_.path() / ".openexpertise" / "artifacts" /
                            (diff["artifact"].get<std::string>() + ".diff");
  EXPECT_NE(readFile(artifact).find("+from node"), std::string::npos) << readFile(artifact);
  EXPECT_EQ(readFile(dir_.path() / "a.txt"), "hello\n");
  EXPECT_EQ(porcelainStatus(), "");
  EXPECT_EQ(worktreeCount(), 1U);
  const std::string edit_cwd = run["final_state"].value("edit_cwd", "");
  const std::string plain_cwd = run["final_state"].value("plain_cwd", "");
  EXPECT_NE(edit_cwd.find("oe-worktrees"), std::string::npos) << edit_cwd;
  EXPECT_EQ(plain_cwd.find("oe-worktrees"), std::string::npos) << plain_cwd;
}

TEST_F(WorkspaceTest, AFailedAttemptKeepsItsWorktreeAndSaysWhere) {
  dir_.write("a.txt", "hello\n");
  writeExecutable("edit.sh", "#!/bin/sh\ncat >/dev/null\necho half >> a.txt\nexit 3\n");
  writeExperience(kToolYaml);
  commitAll();
  auto run = runJson();
  ASSERT_EQ(run.value("status", ""), "failed") << run.dump();
  const std::string run_id = run["run_id"];
  std::string error;
  for (auto& e : events(run_id)) {
    if (e.value("type", "") == "node.failed") {
      error = e.value("error", "");
    }
  }
  const std::string marker = "its worktree is kept at ";
  const size_t at = error.find(marker);
  ASSERT_NE(at, std::string::npos) << error;
  const fs::path kept = error.substr(at + marker.size(), error.find(',', at) - at - marker.size());
  EXPECT_EQ(readFile(kept / "a.txt"), "hello\nhalf\n");
  EXPECT_EQ(worktreeCount(), 2U);
  EXPECT_NE(oeBranches().find("oe/" + run_id + "/edit"), std::string::npos);
  EXPECT_EQ(readFile(dir_.path() / "a.txt"), "hello\n");
  EXPECT_EQ(porcelainStatus(), "");

  // The next run of the chain (a resume) clears it before the node runs again.
  writeExecutable("edit.sh", "#!/bin/sh\ncat >/dev/null\necho whole >> a.txt\n"
                             "echo '{\"state_delta\":{}}'\n");
  ASSERT_EQ(git({"commit", "-q", "-am", "fixed tool"}).exit_code, 0);
  auto resumed = oe({"resume", run_id, "--json"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_FALSE(fs::exists(kept));
  EXPECT_EQ(worktreeCount(), 1U);
  EXPECT_EQ(oeBranches(), "");
}

TEST_F(WorkspaceTest, ParallelItemsOfACliAgentGetSeparateDiffs) {
  dir_.write("a.txt", "a\n");
  dir_.write("b.txt", "b\n");
  // The fake claude edits the file its prompt names, after both items have started (a barrier
  // on files in a shared folder), so the two really run at the same time.
  const fs::path barrier = dir_.path() / ".barrier";
  fs::create_directories(barrier);
  writeExecutable("bin/claude",
                  "#!/bin/sh\nfor arg; do case \"$arg\" in edit*) f=${arg#edit };; esac; done\n"
                  "touch \"$BARRIER/$f\"\nn=0\nwhile [ $(ls \"$BARRIER\" | wc -l) -lt 2 ] && "
                  "[ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done\n"
                  "echo \"by $f\" >> \"$f\"\necho done\n");
  writeExecutable("seed.sh", "#!/bin/sh\ncat >/dev/null\n"
                             "echo '{\"state_delta\":{\"files\":[\"a.txt\",\"b.txt\"]}}'\n");
  writeExperience(
      "name: ws\nversion: 0.1.0\nstate:\n  schema:\n    files: { type: array }\ngraph:\n"
      "  nodes:\n    - { id: seed, kind: tool, impl: ./seed.sh, writes: [files] }\n"
      "    - id: edit\n      kind: cli-agent\n      provider: claude-code\n"
      "      prompt: \"edit {{$item}}\"\n      for_each: { source: $.files, concurrency: 2 }\n"
      "      workspace: worktree\n  edges:\n    - { from: seed, to: edit }\n");
  commitAll();
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
  auto r = oe({"run", dir_.path().string(), "--json"},
              {{"PATH", (dir_.path() / "bin").string() + ":" + (path != nullptr ? path : "/bin")},
               {"BARRIER", barrier.string()}});
  auto run = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_EQ(run.value("status", ""), "success") << r.out << r.err;
  auto found = diffs(run["run_id"]);
  ASSERT_EQ(found.size(), 2U);
  std::sort(found.begin(), found.end(),
            [](const auto& x, const auto& y) { return x["item"] < y["item"]; });
  EXPECT_EQ(found[0]["files"], nlohmann::json({"a.txt"}));
  EXPECT_EQ(found[1]["files"], nlohmann::json({"b.txt"}));
  EXPECT_NE(found[0]["artifact"], found[1]["artifact"]);
  EXPECT_EQ(readFile(dir_.path() / "a.txt"), "a\n");
  EXPECT_EQ(readFile(dir_.path() / "b.txt"), "b\n");
  EXPECT_EQ(worktreeCount(), 1U);
  EXPECT_EQ(oeBranches(), "");
  auto applied = oe({"apply-diff", run["run_id"], "edit", "--item", "1"});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(readFile(dir_.path() / "b.txt"), "b\nby b.txt\n");
  EXPECT_EQ(readFile(dir_.path() / "a.txt"), "a\n");
}

TEST_F(WorkspaceTest, AKilledAttemptLeavesNoWorktreeBehindAfterResume) {
  // The tool's markers live outside the repository, so they are no change of its. Without the
  // gate (the first attempt) the tool edits a.txt, writes a file only that attempt writes, says
  // where it runs and blocks; with it (the attempt after the resume) it edits a.txt and ends.
  TempDir marks;
  const std::map<std::string, std::string> env = {{"OE_PLUGIN_PATH", ""},
                                                  {"MARKS", marks.path().string()}};
  dir_.write("a.txt", "hello\n");
  writeExecutable("edit.sh", R"(#!/bin/sh
cat >/dev/null
echo fresh >> a.txt
if [ ! -e "$MARKS/gate" ]; then
  echo killed > killed-only.txt
  echo $$ > "$MARKS/tool.pid"
  pwd > "$MARKS/where" && mv "$MARKS/where" "$MARKS/reached"
  while [ ! -e "$MARKS/gate" ]; do sleep 0.05; done
fi
echo '{"state_delta":{}}'
)");
  writeExperience(kToolYaml);
  commitAll();

  BackgroundProcess first({OE_EXE, "run", dir_.path().string(), "-q"}, env, dir_.path(),
                          marks / "first");
  ASSERT_TRUE(waitForFile(marks / "reached")) << first.err();
  std::string where = readFile(marks / "reached");
  where.erase(where.find_last_not_of('\n') + 1);
  const fs::path killed = where;
  // The attempt runs in its worktree, .git/oe-worktrees/<chain>/<run>/edit, and has edited it.
  const std::string run_id = killed.parent_path().filename().string();
  EXPECT_EQ(killed, dir_.path() / ".git" / "oe-worktrees" / run_id / run_id / "edit");
  EXPECT_TRUE(fs::exists(dir_.path() / ".openexpertise" / "runs" / (run_id + ".jsonl")));
  EXPECT_EQ(readFile(killed / "a.txt"), "hello\nfresh\n");

  first.signal(SIGKILL);
  EXPECT_EQ(first.wait(), 128 + SIGKILL);
  // Whatever oe did with its tool, the tool is gone before the resume, as after a reboot.
  const pid_t tool = pidIn(marks / "tool.pid");
  ASSERT_GT(tool, 0);
  ::kill(tool, SIGKILL);
  ASSERT_TRUE(processGone(tool));
  // What the killed attempt left: its half-edited worktree and its branch.
  EXPECT_TRUE(fs::exists(killed / "killed-only.txt"));
  EXPECT_EQ(worktreeCount(), 2U);
  EXPECT_NE(oeBranches().find("oe/" + run_id + "/edit"), std::string::npos);

  marks.write("gate", "");
  auto resumed = oe({"resume", run_id, "--json"}, env);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const auto summary = nlohmann::json::parse(resumed.out, nullptr, false);
  ASSERT_EQ(summary.value("status", ""), "success") << resumed.out;
  const std::string resume_id = summary["run_id"];
  ASSERT_NE(resume_id, run_id);

  // The diff is a fresh attempt's: one line added to a.txt, nothing of the killed attempt's.
  auto found = diffs(resume_id);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0]["files"], nlohmann::json({"a.txt"}));
  EXPECT_EQ(found[0]["insertions"], 1);
  EXPECT_EQ(found[0]["deletions"], 0);
  EXPECT_EQ(found[0]["branch"], "oe/" + resume_id + "/edit");
  const std::string text = readFile(dir_.path() / ".openexpertise" / "artifacts" /
                                    (found[0]["artifact"].get<std::string>() + ".diff"));
  EXPECT_NE(text.find(" hello\n+fresh\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("killed-only"), std::string::npos) << text;
  // Nothing left: the killed worktree, its branch and the resume's own are gone.
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_EQ(worktreeCount(), 1U);
  EXPECT_EQ(oeBranches(), "");
  EXPECT_EQ(porcelainStatus(), "");
  auto listed = oe({"inspect", resume_id});
  EXPECT_NE(listed.out.find("    edit  1 file  +1 -0  .openexpertise/artifacts/" +
                            found[0]["artifact"].get<std::string>() + ".diff\n"),
            std::string::npos)
      << listed.out;
  // Applied, it makes the one edit of one attempt.
  auto applied = oe({"apply-diff", resume_id, "edit"});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(readFile(dir_.path() / "a.txt"), "hello\nfresh\n");
  EXPECT_FALSE(fs::exists(dir_.path() / "killed-only.txt"));
}

}  // namespace
}  // namespace oe::test
