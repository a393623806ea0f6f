// The crash harness's generator: a seed becomes a random experience (3 to 40 nodes of `.mjs`
// and executable tools, fake-LLM agents and nested experiences, every merge rule, for_each,
// `when` edges, pipelines, loops, retries, sleeps, runtime.deterministic on or off) whose final
// state is a deterministic function of its definition, so that one uninterrupted run of it is
// the oracle of every interrupted one (docs/testing.md, "The crash harness").
//
// Determinism is by construction: a node reads a field only when every node that writes it is
// one of its ancestors, a last_wins field is written by nodes in a chain, a node that writes a
// field comes after every node that read it, and every value is a hash of the writer's inputs
// (arrays hashed in sorted order when the run does not keep item order). Each array_append item
// carries its writer's identity (`node`, `node#item`, `stage@pipeline#item`, `body~iteration`)
// so a duplicated or a lost write is visible in the state itself.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace oe::crash {

enum class Merge { kLastWins, kArrayAppend, kSetOnce };
enum class FieldType { kNumber, kString, kArray };

struct Field {
  std::string name;
  Merge merge = Merge::kLastWins;
  FieldType type = FieldType::kString;
  // array_append: its items land in an order every run repeats (runtime.deterministic, and its
  // writers ran one after the other: D16 orders a for_each's items, not parallel nodes).
  bool ordered = true;
};

// How a node computes the value it writes to one field (the tools and the fake LLM share it):
//   item    array_append: [<identity>:<hash>]
//   value   a string <identity>:<hash> (last_wins, set_once)
//   number  <hash> % 100 (last_wins; what `when` conditions test)
//   list:N  a list of 0..N strings <identity>.<k> (last_wins; for_each and pipeline sources)
//   count   the field's current value + 1 (a loop's counter; the node reads the field)
//   const   once:<field> (set_once written by several nodes: the later writes are no-ops)
//   blob:N  N bytes of text (a slower state write and cache put)
struct Write {
  std::string field;
  std::string mode;
};

enum class Flavour { kMjs, kExe, kAgent, kExperience };
enum class Role { kMain, kStage, kBody };

struct ChildSpec {
  bool shared = false;
  std::vector<Field> fields;          // the child's state.schema (parent fields first if shared)
  std::vector<std::string> reads;     // the experience node's reads (shared: read by the child)
  std::string inputs;                 // isolated: the node's `inputs:` mapping, as YAML
  std::string outputs;                // isolated: the node's `outputs:` mapping, as YAML
  struct ChildNode {
    std::string id;
    Flavour flavour = Flavour::kMjs;
    std::vector<std::string> reads;
    std::vector<Write> writes;
    int sleep_ms = 0;
  };
  std::vector<ChildNode> nodes;       // a chain
};

struct Node {
  std::string id;
  Flavour flavour = Flavour::kMjs;
  Role role = Role::kMain;
  std::vector<std::string> reads;
  std::vector<Write> writes;
  std::optional<std::string> for_each;          // the source field
  std::optional<int> for_each_concurrency;
  bool retry = false;                           // on_error: retry
  bool fail_first = false;                      // each call fails its first attempt
  int sleep_ms = 0;
  std::vector<std::string> hash_edges;          // predecessors whose edge_output is hashed
  bool sort_arrays = false;                     // hash arrays order-insensitively
  bool no_edge_output = false;                  // the tool returns no edge_output
  std::optional<ChildSpec> child;               // kExperience
};

struct Edge {
  std::string from;
  std::string to;
  std::optional<std::string> when;
};

struct Pipeline {
  std::string id;
  std::string items;  // field
  std::vector<std::string> stages;
};

struct Loop {
  std::string id;
  std::string body;
  std::optional<std::string> until;
  std::optional<int> max_iters;
};

struct Case {
  uint64_t seed = 0;
  bool deterministic = false;
  int concurrency = 1;
  bool first_run_no_cache = false;  // the first (faulted) run passes --no-cache
  // A field is written after a node read it: a later node appends to or overwrites what an
  // earlier one read, a node reads what it writes, a loop body increments its counter. Off, a
  // field is read only once every write of it is done (the cases that avoid the stale-read
  // divergence of `oe resume`, docs/testing.md).
  bool late_writes = false;
  // Nodes may have an edge from a nested experience node, whose edge_output carries the child's
  // run id (new on every run: such a successor misses the cache on resume). Off, experience
  // nodes have no successors.
  bool nested_successors = false;
  // Without runtime.deterministic, a for_each's items return edge_output, and its successors get
  // the one of whichever item finished last (so their cache keys differ from run to run). Off,
  // such a fan-out returns none.
  bool fan_in_edges = false;
  std::vector<Field> fields;
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  std::vector<Pipeline> pipelines;
  std::vector<Loop> loops;

  [[nodiscard]] const Field* field(const std::string& name) const;
  [[nodiscard]] const Node* node(const std::string& id) const;
  [[nodiscard]] int agentNodes() const;
  // One line: nodes, kinds and constructs, for the harness's output.
  [[nodiscard]] std::string summary() const;
};

struct GenOptions {
  int min_nodes = 3;
  int max_nodes = 40;
  bool agents = true;     // needs the fake LLM server
  bool nested = true;
};

Case generateCase(uint64_t seed, const GenOptions& options = {});

// The experience.yaml text of a case (deterministic: the same case gives the same bytes).
std::string experienceYaml(const Case& c);

// Writes the case into `dir` (experience.yaml, tools/, prompts/, nested folders). `tool_binary`
// is the oe_crash_tool executable the executable-flavour tools exec.
void writeCase(const Case& c, const std::filesystem::path& dir,
               const std::filesystem::path& tool_binary);

// The executable flavour's wrapper and the .mjs flavour's source (the same function), for an
// experience `depth` folders below the one whose exec.log and markers/ they use.
std::string toolWrapper(const std::filesystem::path& tool_binary, int depth);
std::string mjsTool(int depth);

}  // namespace oe::crash
