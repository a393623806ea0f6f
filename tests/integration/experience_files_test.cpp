// Two YAML files in one folder (docs/storage.md, "One folder, several experience files"): each
// keeps its own state, cache, run history, pins, spec snapshot and lock, and every command that
// takes --experience FILE reads that file's, while experience.yaml keeps upstream's paths.
#include <map>
#include <set>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

// Appends its node id to the counter file (outside the experience folder, so no part of any
// cache key), then writes `value` to `field`.
constexpr std::string_view kFileStepMjs = R"(import fs from 'node:fs';
export default (args) => {
  fs.appendFileSync(args.counter, args.node + '\n');
  return { state_delta: { [args.field]: args.value } };
};
)";

// `shared` is the same node, with the same inputs, in every file: a cache shared by two files
// would replay one file's run of it in the other.
std::string yamlOf(std::string_view name, std::string_view own_field,
                   const std::filesystem::path& counter) {
  const std::string c = counter.string();
  std::string y = "name: " + std::string(name) + "\nversion: 0.1.0\nstate:\n  schema:\n" +
                  "    v: { type: number }\n    " + std::string(own_field) +
                  ": { type: string }\ngraph:\n  nodes:\n";
  y += "    - { id: shared, kind: tool, impl: ./tools/step.mjs, writes: [v], args: { node: shared, "
       "field: v, value: 1, counter: \"" +
       c + "\" } }\n";
  y += "    - { id: own, kind: tool, impl: ./tools/step.mjs, writes: [" + std::string(own_field) +
       "], args: { node: own_" + std::string(name) + ", field: " + std::string(own_field) +
       ", value: " + std::string(name) + ", counter: \"" + c + "\" } }\n";
  y += "  edges: []\n";
  return y;
}

class ExperienceFiles : public OeTest {
 protected:
  void SetUp() override {
    dir_.write("tools/step.mjs", kFileStepMjs);
    dir_.write("a.yaml", yamlOf("a", "only_a", counter_.path() / "runs.txt"));
    dir_.write("b.yaml", yamlOf("b", "only_b", counter_.path() / "runs.txt"));
  }
  std::string file(std::string_view name) const { return (dir_.path() / name).string(); }
  json run(std::string_view name) {
    auto r = oe({"run", file(name), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }
  json jsonOf(std::vector<std::string> args) {
    auto r = oe(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }
  std::map<std::string, int> executions() const {
    std::map<std::string, int> n;
    std::istringstream in(readFile(counter_.path() / "runs.txt"));
    for (std::string line; std::getline(in, line);) {
      ++n[line];
    }
    return n;
  }
  std::filesystem::path workspace() const { return dir_.path() / ".openexpertise"; }

  TempDir counter_;
};

TEST_F(ExperienceFiles, EachFileHasItsOwnStateCacheAndRunsAndEveryCommandReadsIt) {
  const json run_a = run("a.yaml");
  const json run_b = run("b.yaml");
  ASSERT_EQ(run_a["status"], "success");
  ASSERT_EQ(run_b["status"], "success");
  // b's `shared` ran: a's cache entry of the same node is not b's.
  EXPECT_EQ(run_b["nodes"]["ran"], 2) << run_b.dump();
  EXPECT_EQ(executions(), (std::map<std::string, int>{{"shared", 2}, {"own_a", 1}, {"own_b", 1}}));

  // The files: experience.yaml's layout stays upstream's; b.yaml's lives in its own folder.
  const std::string id_b = run_b["run_id"];
  EXPECT_TRUE(std::filesystem::exists(workspace() / "b.yaml" / "state.sqlite"));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "b.yaml" / "state.sqlite.lock"));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "b.yaml" / "cache" / "cache.sqlite"));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "b.yaml" / "runs" / (id_b + ".jsonl")));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "b.yaml" / "runs" / (id_b + ".pin.json")));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "b.yaml" / "b.yaml.spec-snapshot"));
  EXPECT_FALSE(std::filesystem::exists(workspace() / "state.sqlite"));
  EXPECT_FALSE(std::filesystem::exists(workspace() / "runs" / (id_b + ".jsonl")));

  // oe state
  const json state_a = jsonOf({"state", "--json", "--experience", file("a.yaml")});
  const json state_b = jsonOf({"state", "--json", "--experience", file("b.yaml")});
  EXPECT_EQ(state_a, json({{"v", 1}, {"only_a", "a"}}));
  EXPECT_EQ(state_b, json({{"v", 1}, {"only_b", "b"}}));

  // oe runs
  const json runs_a = jsonOf({"runs", "--json", "--experience", file("a.yaml")});
  ASSERT_EQ(runs_a.size(), 1u) << runs_a.dump();
  EXPECT_EQ(runs_a[0]["run_id"], run_a["run_id"]);
  const json runs_b = jsonOf({"runs", "--json", "--experience", file("b.yaml")});
  ASSERT_EQ(runs_b.size(), 1u) << runs_b.dump();
  EXPECT_EQ(runs_b[0]["run_id"], id_b);

  // oe inspect --last: b's run, with b's own node.
  const json inspected = jsonOf({"inspect", "--last", "--json", "--experience", file("b.yaml")});
  std::set<std::string> inspected_runs;
  for (const auto& event : inspected) {
    inspected_runs.insert(event.value("run_id", ""));
  }
  EXPECT_EQ(inspected_runs, std::set<std::string>{id_b}) << inspected.dump();

  // oe resume --last: resumes a's run, not b's (the newer one), replaying a's nodes.
  auto resumed = oe({"resume", "--last", "--json", "--experience", file("a.yaml")});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const json resumed_a = json::parse(resumed.out);
  EXPECT_EQ(resumed_a["nodes"]["cached"], 2) << resumed.out;
  EXPECT_NE(resumed.err.find(run_a["run_id"].get<std::string>()), std::string::npos) << resumed.err;
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", file("a.yaml")}).size(), 2u);
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", file("b.yaml")}).size(), 1u);

  // oe cache ls
  auto nodes_of = [](const json& entries) {
    std::multiset<std::string> out;
    for (const auto& e : entries) {
      out.insert(e["node_id"].get<std::string>());
    }
    return out;
  };
  EXPECT_EQ(nodes_of(jsonOf({"cache", "ls", "--json", "--experience", file("a.yaml")})),
            (std::multiset<std::string>{"shared", "own"}));
  EXPECT_EQ(nodes_of(jsonOf({"cache", "ls", "--json", "--experience", file("b.yaml")})),
            (std::multiset<std::string>{"shared", "own"}));

  // oe gc --keep 0 on b: b's run and entries go, a's stay.
  auto gc = oe({"gc", "--keep", "0", "--experience", file("b.yaml")});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", file("b.yaml")}).size(), 0u);
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", file("a.yaml")}).size(), 2u);
  EXPECT_EQ(jsonOf({"cache", "ls", "--json", "--experience", file("b.yaml")}).size(), 0u);
  EXPECT_EQ(jsonOf({"cache", "ls", "--json", "--experience", file("a.yaml")}).size(), 2u);

  // oe reset-state on b leaves a's state alone; oe cache clear on b leaves a's cache alone.
  auto reset = oe({"reset-state", "--yes", "--experience", file("b.yaml")});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() / "b.yaml" / "state.sqlite"));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "a.yaml" / "state.sqlite"));
  EXPECT_EQ(jsonOf({"state", "--json", "--experience", file("a.yaml")}), state_a);
  auto cleared = oe({"cache", "clear", "--yes", "--experience", file("b.yaml")});
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_EQ(jsonOf({"cache", "ls", "--json", "--experience", file("a.yaml")}).size(), 2u);
}

// The issue as reported: `oe resume --last --experience b.yaml` resumed a.yaml's run, the newest
// of the folder. It resumes b's own last run, however new a's is.
TEST_F(ExperienceFiles, ResumeLastOfOneFileNeverResumesTheOthersNewerRun) {
  const json run_b = run("b.yaml");
  const json run_a = run("a.yaml");
  ASSERT_EQ(run_b["status"], "success");
  ASSERT_EQ(run_a["status"], "success");
  auto resumed = oe({"resume", "--last", "--json", "--experience", file("b.yaml")});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find(run_b["run_id"].get<std::string>()), std::string::npos) << resumed.err;
  EXPECT_EQ(resumed.err.find(run_a["run_id"].get<std::string>()), std::string::npos) << resumed.err;
  const json resumed_b = json::parse(resumed.out);
  EXPECT_EQ(resumed_b["final_state"], json({{"v", 1}, {"only_b", "b"}})) << resumed.out;
  EXPECT_EQ(resumed_b["nodes"]["cached"], 2) << resumed.out;
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", file("a.yaml")}).size(), 1u);
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", file("b.yaml")}).size(), 2u);
}

TEST_F(ExperienceFiles, ExperienceYamlKeepsUpstreamsPaths) {
  dir_.write("experience.yaml", yamlOf("main", "only_main", counter_.path() / "runs.txt"));
  const json first = runJson();
  ASSERT_EQ(first["status"], "success") << last_stderr_;
  const std::string id = first["run_id"];
  EXPECT_TRUE(std::filesystem::exists(workspace() / "state.sqlite"));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "state.sqlite.lock"));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "cache" / "cache.sqlite"));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "runs" / (id + ".jsonl")));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "runs" / (id + ".pin.json")));
  EXPECT_TRUE(std::filesystem::exists(workspace() / "experience.yaml.spec-snapshot"));
  EXPECT_FALSE(std::filesystem::exists(workspace() / "experience.yaml"));
  // Given as the folder or as the file, it is the same experience.
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", file("experience.yaml")}).size(), 1u);
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", dir_.path().string()}).size(), 1u);
  // A run of b.yaml in the same folder neither sees nor touches it.
  const json run_b = run("b.yaml");
  EXPECT_EQ(run_b["nodes"]["ran"], 2);
  EXPECT_EQ(jsonOf({"runs", "--json", "--experience", dir_.path().string()}).size(), 1u);
  EXPECT_EQ(jsonOf({"state", "--json", "--experience", dir_.path().string()}),
            json({{"v", 1}, {"only_main", "main"}}));
}

}  // namespace
}  // namespace oe::test
