// The typed model of an experience.yaml (reference §1), with the source position of every part
// so that later stages (validation, the run) can point at the user's file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/secrets/resolve.hpp"
#include "oe/spec/approval.hpp"
#include "oe/spec/plugin_isolation.hpp"
#include "oe/spec/policy.hpp"
#include "oe/spec/trigger.hpp"

namespace oe::spec {

struct Mark {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based
};

// JSON pointer -> Mark for every value of a document (a 10,000-node graph has ~250,000):
// the pointers live in one arena and the index is open addressing, so an entry costs ~40
// bytes and no allocation of its own (a std::unordered_map<std::string, Mark> cost ~100 bytes
// and two allocations, which showed in both the load time and the memory of a run).
class MarkIndex {
 public:
  void reserve(size_t entries);
  // Keeps the first mark of a pointer, like unordered_map::emplace.
  void emplace(std::string_view pointer, Mark mark);
  [[nodiscard]] const Mark* find(std::string_view pointer) const;
  [[nodiscard]] size_t size() const { return entries_.size(); }
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  // Frees everything (source positions are dropped once a run no longer needs them).
  void clear();
  template <class F>
  void forEach(F&& f) const {
    for (const Entry& e : entries_) {
      f(std::string_view(arena_).substr(e.offset, e.size), e.mark);
    }
  }

 private:
  struct Entry {
    uint32_t offset = 0;
    uint32_t size = 0;
    Mark mark;
  };
  void rehash(size_t slots);
  [[nodiscard]] size_t slotOf(std::string_view pointer) const;

  std::string arena_;
  std::vector<Entry> entries_;
  std::vector<uint32_t> slots_;  // entry index + 1; 0 = free. Size: a power of two, or 0.
};

enum class FieldType { kAny, kString, kNumber, kBoolean, kObject, kArray, kNull };
enum class MergeStrategy { kLastWins, kArrayAppend, kSetOnce };

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::kAny;  // kAny: no `type` (or a $ref-only field): no type check
  MergeStrategy merge = MergeStrategy::kLastWins;
  Mark mark;
};

struct StateSpec {
  std::vector<FieldSpec> fields;                  // declaration order
  std::unordered_map<std::string, size_t> index;  // name -> position in fields
  std::optional<std::string> store;               // D14: path of the SQLite file, relative to dir

  [[nodiscard]] const FieldSpec* find(std::string_view name) const {
    auto it = index.find(std::string(name));
    return it == index.end() ? nullptr : &fields[it->second];
  }
};

enum class ErrorPolicy { kSkip, kFailRun, kRetry };
enum class Backoff { kLinear, kExponential };

struct OnError {
  ErrorPolicy policy = ErrorPolicy::kSkip;  // absent on_error behaves like skip (reference §1.7)
  int attempts = 1;                         // total attempts; >1 only with retry
  Backoff backoff = Backoff::kLinear;
  int64_t base_ms = 100;
};

struct ForEach {
  std::string source;  // a `$.path` (reference §2.2); anything else yields zero iterations
  int concurrency = 1;
  Mark mark;
};

// `cache:` of a node (an oe addition, docs/durability.md "What the cache key covers"):
// `cache: false` never replays the node from the cache nor stores its output; `cache: {inputs:
// [glob, ...]}` adds the content of the files the globs match (relative to the experience
// folder) to its key.
struct CacheSpec {
  bool enabled = true;
  std::vector<std::string> inputs;
};

// `workspace:` of a node (docs/workspaces.md). The only mode is worktree.
struct WorkspaceSpec {
  std::string repo;  // `repo:` as written, relative to the experience folder; empty: the
                     // repository that holds the experience folder
};

struct NodeSpec {
  std::string id;
  std::string kind;
  std::optional<std::string> phase;
  std::vector<std::string> reads;
  std::vector<std::string> writes;
  // `writes` is in the definition (even empty): its state writes are checked against it (a
  // write outside it is a warning, or refused under runtime.strict_writes). A node without
  // `writes` declares nothing and is not checked, as upstream never checked.
  bool writes_declared = false;
  OnError on_error;
  std::optional<ForEach> for_each;
  std::optional<int64_t> timeout_ms;  // oe extension for every kind (cli-agent already had it)
  // The work queue its attempts go to under `oe run --workers` (docs/scale-out.md); unset:
  // "default". `oe worker --queue NAME` serves a queue.
  std::optional<std::string> queue;
  CacheSpec cache;
  // `policy:` of the node (docs/policy.md); null for the many nodes without one (a pointer keeps
  // NodeSpec small for 10,000-node graphs).
  std::shared_ptr<const PolicySpec> policy;
  // `workspace: worktree` (docs/workspaces.md): each attempt in a git worktree of its own; null
  // for the nodes without one (a pointer, as policy).
  std::shared_ptr<const WorkspaceSpec> workspace;
  // `approval:` or kind approval (docs/policy.md, "Approvals"): a person decides before the node
  // runs; null for the nodes without one (a pointer, as policy).
  std::shared_ptr<const ApprovalSpec> approval;
  Json args = Json::object();         // unresolved; may contain `$.path` strings
  Json raw;                           // the whole node as JSON (null once compacted)
  // The whole node as canonical JSON (sorted keys, compact): what the plugin, the cache key and
  // the pin see. Set by compactNodes(), which drops `raw` for a run: a DOM per node costs
  // ~1 KiB of the run's memory, its text a third of that.
  std::string text;
  // With `text`: pathCandidates() of the definition, the strings that may name a file (D4).
  std::vector<std::string> path_candidates;
  // Files the node's kind reads that the definition does not name (x-oe-reads-file, relative
  // to dir): part of its key and pin even when missing. Set by attachReadFiles (loader.hpp).
  std::vector<std::string> read_files;
  Mark mark;  // position of the node's mapping
};

struct EdgeSpec {
  std::string from;
  std::string to;
  std::optional<std::string> when;
  Mark mark;
  Mark when_mark;
};

struct PipelineSpec {
  std::string id;
  std::string items;
  std::vector<std::string> stages;
  std::optional<std::string> phase;
  Mark mark;
};

struct LoopSpec {
  std::string id;
  std::string body;
  std::optional<std::string> until;
  std::optional<int> max_iters;
  std::optional<int64_t> budget;  // reserved, not enforced (as upstream)
  std::optional<std::string> phase;
  Mark mark;
  Mark until_mark;
};

struct RuntimeSpec {
  std::optional<int> concurrency;
  bool deterministic = false;  // D16
  // oe: a node's write to a field outside its `writes` is refused (the node fails) instead of
  // applied with a warning.
  bool strict_writes = false;
};

struct Phase {
  std::string id;
  std::optional<std::string> title;
};

struct Experience {
  std::string name;
  std::string description;
  std::string version;
  StateSpec state;
  std::vector<Phase> phases;
  std::vector<NodeSpec> nodes;
  std::vector<EdgeSpec> edges;
  std::vector<PipelineSpec> pipelines;
  std::vector<LoopSpec> loops;
  RuntimeSpec runtime;
  std::shared_ptr<const PolicySpec> policy;  // `policy:` (docs/policy.md); null without one
  // `plugins: { override: [...] }` (docs/trust.md): kinds and LLM provider names a plugin that
  // is not built in may take from a built-in one.
  std::vector<std::string> plugin_overrides;
  // `plugins: { isolation: ... }` (docs/trust.md, "Process isolation"); a run reads it before
  // the plugins load (scanPluginIsolation), validation from here.
  PluginIsolationSpec plugin_isolation;
  // `secrets:` (docs/policy.md, "Secrets"): where each secret's value is read at run start.
  std::vector<secrets::Declaration> secrets;
  // `triggers:` (docs/serve.md, "Triggers"): what starts runs under `oe serve`.
  std::vector<TriggerSpec> triggers;

  std::filesystem::path file;  // absolute path of the yaml
  std::filesystem::path dir;   // experienceDir: the folder holding the yaml
  std::string source_name;     // the yaml path as the user gave it; diagnostics print this
  Json raw;                    // the whole document as JSON
  // JSON pointer ("/graph/nodes/0/impl") -> position of that value in the file (for a scalar,
  // its first content character: after an opening quote, on the first line of a `|` block).
  MarkIndex marks;
  // JSON pointer of a mapping member -> position of its key (unknown-key warnings point here).
  MarkIndex key_marks;
  // node id -> position in `nodes` (the first node when ids are duplicated).
  std::unordered_map<std::string, size_t> node_index;

  // The position of the value at `json_pointer`, or of its nearest ancestor that has one.
  [[nodiscard]] Mark markOf(const std::string& json_pointer) const;
  // The position of the key of the member at `json_pointer`; falls back to markOf.
  [[nodiscard]] Mark keyMarkOf(const std::string& json_pointer) const;
  // O(1) through node_index when it is filled (the loader fills it), else a scan.
  [[nodiscard]] const NodeSpec* findNode(std::string_view id) const;
};

}  // namespace oe::spec
