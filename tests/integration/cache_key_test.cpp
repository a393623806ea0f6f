// What the cache key covers, end to end with the real `oe`, tool plugin and Node.js/Python tools
// (docs/durability.md, "What the cache key covers"): a file named in args, a tool's imported
// module, `cache.inputs`, `cache: false`, a file the node writes, and the plugin behind a kind.
// Every change re-runs exactly the nodes that depend on it (and what their new outputs reach).
#include <set>
#include <sstream>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

// Each tool appends its node id to the counter file named in its args (outside the experience
// folder, so not part of any key), then writes one field.
constexpr std::string_view kReadMjs = R"(import fs from 'node:fs';
export default (args) => {
  fs.appendFileSync(args.counter, args.node + '\n');
  const text = fs.readFileSync(new URL('../' + args.file, import.meta.url), 'utf8');
  return { state_delta: { [args.field]: text }, edge_output: text };
};
)";
constexpr std::string_view kUpperMjs = R"(import fs from 'node:fs';
export default (args) => {
  fs.appendFileSync(args.counter, args.node + '\n');
  return { state_delta: { ua: args._state.a.toUpperCase() } };
};
)";
constexpr std::string_view kUsesLibMjs = R"(import fs from 'node:fs';
import { twice } from './lib/util.mjs';
export default (args) => {
  fs.appendFileSync(args.counter, args.node + '\n');
  return { state_delta: { u: twice(21) } };
};
)";
constexpr std::string_view kUtilMjs = "export const twice = (n) => n * 2;\n";
constexpr std::string_view kPlainMjs = R"(import fs from 'node:fs';
export default (args) => {
  fs.appendFileSync(args.counter, args.node + '\n');
  return { state_delta: { [args.field]: 1 } };
};
)";
constexpr std::string_view kAppendMjs = R"(import fs from 'node:fs';
export default (args) => {
  fs.appendFileSync(args.counter, args.node + '\n');
  const out = new URL('../' + args.out, import.meta.url);
  fs.mkdirSync(new URL('.', out), { recursive: true });
  fs.appendFileSync(out, 'ran\n');
  return { state_delta: { l: 1 } };
};
)";

// One tool node: `extra` adds fields after `writes`, `args` adds args after node and counter.
std::string toolNode(const std::filesystem::path& counter, const std::string& id,
                     const std::string& impl, const std::string& field, const std::string& args,
                     const std::string& extra = "") {
  return "    - { id: " + id + ", kind: tool, impl: ./tools/" + impl + ", writes: [" + field + "]" +
         extra + ", args: { node: " + id + ", counter: \"" + counter.string() + "\"" + args +
         " } }\n";
}

std::string cacheKeyYaml(const std::filesystem::path& counter) {
  std::string yaml = R"(name: cache-key
version: 0.1.0
state:
  schema:
    a: { type: string }
    b: { type: string }
    ua: { type: string }
    u: { type: number }
    p: { type: number }
    q: { type: number }
    g: { type: number }
    l: { type: number }
graph:
  nodes:
)";
  yaml += toolNode(counter, "read_a", "read.mjs", "a", ", file: data/a.txt, field: a");
  yaml += toolNode(counter, "upper_a", "upper.mjs", "ua", "", ", reads: [a]");
  yaml += toolNode(counter, "read_b", "read.mjs", "b", ", file: data/b.txt, field: b");
  yaml += toolNode(counter, "imp", "uses_lib.mjs", "u", "");
  yaml += toolNode(counter, "plain", "plain.mjs", "p", ", field: p");
  yaml += toolNode(counter, "always", "plain.mjs", "q", ", field: q", ", cache: false");
  yaml += toolNode(counter, "globbed", "plain.mjs", "g", ", field: g",
                   ", cache: { inputs: [\"conf/*.json\"] }");
  yaml += toolNode(counter, "log", "append.mjs", "l", ", out: out/log.txt");
  yaml += "  edges:\n    - { from: read_a, to: upper_a }\n";
  return yaml;
}

class CacheKeyCli : public OeTest {
 protected:
  void SetUp() override {
    writeExperience(cacheKeyYaml(counter_.path() / "runs.txt"));
    writeTool("read.mjs", kReadMjs);
    writeTool("upper.mjs", kUpperMjs);
    writeTool("uses_lib.mjs", kUsesLibMjs);
    writeTool("lib/util.mjs", kUtilMjs);
    writeTool("plain.mjs", kPlainMjs);
    writeTool("append.mjs", kAppendMjs);
    dir_.write("data/a.txt", "alpha");
    dir_.write("data/b.txt", "beta");
    dir_.write("conf/base.json", "{}");
  }
  // The nodes that executed since the last call.
  std::multiset<std::string> executed() {
    std::istringstream in(readFile(counter_.path() / "runs.txt"));
    std::multiset<std::string> fresh;
    size_t n = 0;
    for (std::string line; std::getline(in, line); ++n) {
      if (n >= seen_) {
        fresh.insert(line);
      }
    }
    seen_ = n;
    return fresh;
  }
  json runOk() {
    json r = runJson();
    EXPECT_EQ(r["status"], "success") << last_stderr_;
    return r;
  }

  TempDir counter_;
  size_t seen_ = 0;  // lines of the counter file already returned by executed()
};

TEST_F(CacheKeyCli, EachChangeRerunsTheNodesThatDependOnItAndNoOther) {
  runOk();
  EXPECT_EQ(executed().size(), 8u);
  // Nothing changed: only `cache: false` runs; `log`, which appended to the file its args
  // name, replays (its output was stored under the key of the file as it left it too).
  runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"always"}));
  EXPECT_EQ(readFile(dir_ / "out/log.txt"), "ran\n");

  dir_.write("data/a.txt", "alpha, edited");  // named in read_a's args; upper_a reads its text
  json r = runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"read_a", "upper_a", "always"}));
  EXPECT_EQ(r["final_state"]["ua"], "ALPHA, EDITED");

  writeTool("lib/util.mjs", "export const twice = (n) => n * 2 + 1;\n");  // imported by imp
  r = runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"imp", "always"}));
  EXPECT_EQ(r["final_state"]["u"], 43);

  dir_.write("conf/extra.json", "{\"x\": 1}");  // a new match of globbed's cache.inputs
  runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"globbed", "always"}));
  dir_.write("conf/notes.txt", "not a match");
  runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"always"}));

  dir_.write("out/log.txt", "edited by hand\n");  // log's own output file, changed by someone else
  runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"log", "always"}));
}

TEST_F(CacheKeyCli, ResumeNamesTheNodesWhoseArgsFilesOrImportsChanged) {
  const json first = runOk();
  executed();
  dir_.write("data/b.txt", "beta, edited");
  writeTool("lib/util.mjs", "export const twice = (n) => n * 3;\n");
  auto r = oe({"resume", first["run_id"], "--json", "--experience", dir_.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json resumed = json::parse(r.out);
  EXPECT_EQ(resumed["definition_changes"]["changed"], json({"read_b", "imp"})) << r.err;
  // Their writes had landed in the run it resumes: a resume keeps them (docs/durability.md, a
  // landed call is done); a new run executes exactly the changed nodes.
  EXPECT_EQ(executed(), (std::multiset<std::string>{"always"}));
  runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"read_b", "imp", "always"}));
}

// A Python tool's local imports, reached through a helper module and a package, and a folder
// its args name: a change to any of them re-runs that node; the other nodes replay.
constexpr std::string_view kSumPy = R"(#!/usr/bin/env python3
import json, os, sys
from helpers import scale
args = json.load(sys.stdin)
with open(args["counter"], "a") as counter:
    counter.write(args["node"] + "\n")
total = 0
for name in sorted(os.listdir(args["folder"])):
    with open(os.path.join(args["folder"], name)) as f:
        total += len(f.read())
json.dump({"state_delta": {"s": scale(total)}}, sys.stdout)
)";
constexpr std::string_view kAlonePy = R"(#!/usr/bin/env python3
import json, sys
args = json.load(sys.stdin)
with open(args["counter"], "a") as counter:
    counter.write(args["node"] + "\n")
json.dump({"state_delta": {"t": 1}}, sys.stdout)
)";

TEST_F(CacheKeyCli, PythonImportsAndAFolderNamedInArgsRerunTheirNodeOnly) {
  const auto counter = counter_.path() / "runs.txt";
  writeExperience(
      "name: py-key\nversion: 0.1.0\nstate:\n  schema:\n    s: { type: number }\n"
      "    t: { type: number }\n    p: { type: number }\ngraph:\n  nodes:\n" +
      toolNode(counter, "sum", "sum.py", "s", ", folder: docs") +
      toolNode(counter, "alone", "alone.py", "t", "") +
      toolNode(counter, "plain", "plain.mjs", "p", ", field: p") + "  edges: []\n");
  writeExecutable("tools/sum.py", kSumPy);
  writeExecutable("tools/alone.py", kAlonePy);
  dir_.write("tools/helpers.py",
             "from pkg.factor import FACTOR\n\ndef scale(n):\n"
             "    return n * FACTOR\n");
  dir_.write("tools/pkg/__init__.py", "");
  dir_.write("tools/pkg/factor.py", "FACTOR = 1\n");
  dir_.write("docs/a.md", "abc");
  runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"sum", "alone", "plain"}));
  runOk();
  EXPECT_TRUE(executed().empty());

  dir_.write("tools/pkg/factor.py", "FACTOR = 10\n");  // imported by helpers.py, imported by sum
  json r = runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"sum"}));
  EXPECT_EQ(r["final_state"]["s"], 30);

  dir_.write("docs/b.md", "de");  // a new file in the folder sum's args name
  r = runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"sum"}));
  EXPECT_EQ(r["final_state"]["s"], 50);
  dir_.write("docs/a.md", "xyz");  // same size, other content
  runOk();
  EXPECT_EQ(executed(), (std::multiset<std::string>{"sum"}));
  runOk();
  EXPECT_TRUE(executed().empty());
}

// The issue as reported: examples/python-tool served its old word_count after input.txt changed.
TEST_F(CacheKeyCli, PythonToolExampleCountsTheEditedInput) {
  const auto example = std::filesystem::path(OE_SOURCE_DIR) / "examples" / "python-tool";
  TempDir copy;
  std::filesystem::copy(example, copy.path(), std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(copy / ".openexpertise");
  auto run = [&] {
    auto r = oe({"run", copy.path().string(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  };
  const json first = run();
  const int words = first["final_state"]["word_count"];
  EXPECT_EQ(run()["nodes"]["cached"], 3);
  copy.write("input.txt", readFile(copy / "input.txt") + "Two more.\n");
  const json edited = run();
  EXPECT_EQ(edited["final_state"]["word_count"], words + 2) << edited.dump();
  EXPECT_EQ(edited["nodes"]["ran"], 3);
}

// The plugin behind a kind: a rebuilt library, or a new version, re-runs its nodes only.
TEST_F(CacheKeyCli, ARebuiltOrUpgradedPluginRerunsItsNodesOnly) {
  const auto so = std::filesystem::path(OE_BINARY_DIR) / "tests" / "abi" / "fixtures" / "c_upper" /
                  "c_upper.so";
  ASSERT_TRUE(std::filesystem::exists(so)) << so;
  TempDir exp;
  exp.write("experience.yaml", std::string(R"(name: plugin-key
version: 0.1.0
state: { schema: { shout: { type: string }, p: { type: number } } }
graph:
  nodes:
    - { id: up, kind: text-upper, args: { text: hi }, writes: [shout] }
)") + toolNode(counter_.path() / "runs.txt", "plain", "plain.mjs", "p", ", field: p") +
                                   "  edges: []\n");
  exp.write("tools/plain.mjs", kPlainMjs);
  std::filesystem::create_directories(exp / "plugins");
  const auto plugin = exp / "plugins" / "c_upper.so";
  std::filesystem::copy_file(so, plugin);
  trust(exp.path());
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--json", "--experience", exp.path().string()});
    auto r = oe(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  };
  auto runExp = [&] {
    auto r = oe({"run", exp.path().string(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  };
  EXPECT_EQ(runExp()["nodes"]["ran"], 2);
  EXPECT_EQ(runExp()["nodes"]["cached"], 2);

  // Rebuilt, same version: bytes appended to an ELF library leave it loadable.
  std::string bytes = readFile(plugin);
  exp.write("plugins/c_upper.so", bytes + "rebuilt");
  trust(plugin);  // other bytes: trusted anew (docs/trust.md)
  json rebuilt = runExp();
  EXPECT_EQ(rebuilt["nodes"]["ran"], 1) << rebuilt.dump();
  EXPECT_EQ(rebuilt["nodes"]["cached"], 1);

  // Upgraded: its version string says 0.2.0. The resume names the node as changed.
  bytes = readFile(plugin);
  const std::string old_version("0.1.0\0", 6);
  const size_t at = bytes.find(old_version);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, old_version.size(), std::string("0.2.0\0", 6));
  const json last = run({"runs"});
  ASSERT_FALSE(last.empty());
  exp.write("plugins/c_upper.so", bytes);
  trust(plugin);
  // `oe plugins` reads its manifest (the builder's tool writes it from the library).
  ASSERT_EQ(runProcess({std::string(OE_BINARY_DIR) + "/bin/oe-plugin-manifest", plugin.string()})
                .exit_code,
            0);
  auto plugins = oe({"plugins", "--json"}, {{"OE_PLUGIN_PATH", (exp / "plugins").string()}});
  EXPECT_NE(plugins.out.find("0.2.0"), std::string::npos) << plugins.out;
  const json resumed = run({"resume", last[0]["run_id"].get<std::string>()});
  EXPECT_EQ(resumed["definition_changes"]["changed"], json({"up"})) << resumed.dump();
  // Its write had landed in the run it resumes: kept (a landed call is done); a new run
  // executes it with the upgraded plugin, and only it.
  EXPECT_EQ(resumed["nodes"]["ran"], 0);
  EXPECT_EQ(resumed["nodes"]["cached"], 2);
  const json upgraded = runExp();
  EXPECT_EQ(upgraded["nodes"]["ran"], 1) << upgraded.dump();
  EXPECT_EQ(upgraded["nodes"]["cached"], 1);
}

}  // namespace
}  // namespace oe::test
