// The checks of `oe validate` beyond the structure (D8, D9); see validate.hpp.
#include "oe/spec/validate.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include "oe/common/glob.hpp"
#include "oe/expr/condition.hpp"
#include "oe/expr/state_path.hpp"
#include "oe/secrets/resolve.hpp"
#include "oe/spec/file_check.hpp"
#include "oe/spec/locate.hpp"
#include "oe/spec/nested_check.hpp"
#include "oe/spec/schema.hpp"
#include "oe/spec/schema_check.hpp"
#include "oe/spec/suggest.hpp"

namespace oe::spec {

namespace {

using IdIndex = std::unordered_map<std::string_view, size_t>;

struct Cycle {
  std::vector<size_t> nodes;  // node indexes, first repeated at the end
  size_t closing_edge = 0;    // the edge that closes it (back to the first node)
};

IdIndex indexIds(const Experience& exp) {
  IdIndex ids;
  ids.reserve(exp.nodes.size());
  for (size_t i = 0; i < exp.nodes.size(); ++i) {
    ids.emplace(exp.nodes[i].id, i);  // the first declaration wins
  }
  return ids;
}

// Iterative depth-first search (no recursion: 100k-node chains must not overflow the stack).
std::vector<Cycle> cyclesOf(const Experience& exp, const IdIndex& ids, size_t limit) {
  const size_t n = exp.nodes.size();
  std::vector<std::vector<std::pair<size_t, size_t>>> succ(n);  // (node, edge index)
  for (size_t e = 0; e < exp.edges.size(); ++e) {
    auto from = ids.find(exp.edges[e].from);
    auto to = ids.find(exp.edges[e].to);
    if (from != ids.end() && to != ids.end()) {
      succ[from->second].emplace_back(to->second, e);
    }
  }
  enum : uint8_t { kWhite, kGray, kBlack };
  std::vector<uint8_t> color(n, kWhite);
  std::vector<size_t> stack_pos(n, 0);
  std::vector<std::pair<size_t, size_t>> stack;  // (node, next successor position)
  std::vector<Cycle> cycles;
  for (size_t start = 0; start < n && cycles.size() < limit; ++start) {
    if (color[start] != kWhite) {
      continue;
    }
    color[start] = kGray;
    stack_pos[start] = 0;
    stack.emplace_back(start, 0);
    while (!stack.empty() && cycles.size() < limit) {
      auto& [u, next] = stack.back();
      if (next == succ[u].size()) {
        color[u] = kBlack;
        stack.pop_back();
        continue;
      }
      auto [v, edge] = succ[u][next++];
      if (color[v] == kGray) {
        Cycle c;
        for (size_t k = stack_pos[v]; k < stack.size(); ++k) {
          c.nodes.push_back(stack[k].first);
        }
        c.nodes.push_back(v);
        c.closing_edge = edge;
        cycles.push_back(std::move(c));
      } else if (color[v] == kWhite) {
        color[v] = kGray;
        stack_pos[v] = stack.size();
        stack.emplace_back(v, 0);
      }
    }
    stack.clear();
  }
  return cycles;
}

std::string quoteList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    out += (out.empty() ? "" : ", ") + s;
  }
  return out.empty() ? "none" : out;
}

std::string indexed(const char* prefix, size_t i) { return prefix + std::to_string(i); }

// `problem`, a did-you-mean (a sentence of its own, ending in "?") if any, then `advice`: no
// "?." or ".;" where the pieces meet.
std::string withHint(const std::string& problem, const std::string& hint,
                     const std::string& advice) {
  if (hint.empty()) {
    return problem + ". " + advice;
  }
  return problem + hint + " " + advice;
}

// False when the file's `raw` lacks `key` or holds something else than a string there: a
// structural error the loader reported already, which the reference checks do not report
// again as a reference to "". True when there is no raw JSON to tell (a compacted node).
bool givenString(const Json& raw, const char* key) {
  if (raw.is_null()) {
    return true;
  }
  if (!raw.is_object()) {
    return false;
  }
  auto it = raw.find(key);
  return it != raw.end() && it->is_string();
}

class Validator {
 public:
  Validator(const Experience& exp, const KindCatalog& kinds, bool strict, bool check_files,
            ProgramCheck missing_program, NestingTrail& trail)
      : exp_(exp),
        trail_(trail),
        kinds_(kinds),
        strict_(strict),
        check_files_(check_files),
        missing_program_(missing_program),
        ids_(indexIds(exp)) {
    node_ids_.reserve(exp.nodes.size());
    for (const auto& n : exp.nodes) {
      node_ids_.push_back(n.id);
    }
    for (const auto& f : exp.state.fields) {
      field_names_.push_back(f.name);
    }
    for (const auto& [name, info] : kinds) {
      kind_names_.push_back(name);
    }
    for (const auto& p : exp.phases) {
      phase_ids_.insert(p.id);
    }
  }

  std::vector<Diagnostic> run() {
    checkEdges();
    checkNodes();
    checkPipelines();
    checkLoops();
    checkPolicies();
    checkWorkspaces();
    checkSecrets();
    checkApprovals();
    checkTriggers();
    checkCycles();
    std::stable_sort(out_.begin(), out_.end(), [](const Diagnostic& a, const Diagnostic& b) {
      // Unknown positions last; otherwise file order.
      int la = a.line > 0 ? a.line : INT32_MAX;
      int lb = b.line > 0 ? b.line : INT32_MAX;
      return la != lb ? la < lb : a.column < b.column;
    });
    return std::move(out_);
  }

 private:
  void error(const std::string& pointer, std::string message, bool at_key = false) {
    out_.push_back(diagnosticAt(exp_, pointer, std::move(message), Severity::kError, at_key));
  }
  void warning(const std::string& pointer, std::string message, bool at_key = false) {
    out_.push_back(diagnosticAt(exp_, pointer, std::move(message), Severity::kWarning, at_key));
  }

  bool known(std::string_view id) const { return ids_.count(id) != 0; }
  bool declared(const std::string& field) const { return exp_.state.find(field) != nullptr; }

  void unknownKey(const std::string& pointer, const std::string& key,
                  const std::vector<std::string>& known_keys) {
    std::string message = "unknown key \"" + key + "\"" + didYouMean(key, known_keys);
    message += strict_                 ? " (unknown keys are errors under --strict)"
               : message.back() == '?' ? " It is ignored (an error under --strict)."
                                       : ". It is ignored (an error under --strict).";
    out_.push_back(diagnosticAt(exp_, pointer, std::move(message),
                                strict_ ? Severity::kError : Severity::kWarning, true));
  }

  // Inside a kind field (a dataset `source`, say): warns about keys its subschema does not
  // list, where it lists its keys and does not say what to do with others (with
  // additionalProperties: false the schema check already reported them as errors).
  void walkUnknownKeys(const Json& value, const Json& root, const std::string& rel,
                       const std::string& abs) {
    const Json* schema = SchemaChecker::schemaAt(root, rel);
    if (schema == nullptr || !schema->is_object() || !value.is_object()) {
      return;
    }
    const bool open =
        !schema->contains("additionalProperties") && !schema->contains("patternProperties");
    std::vector<std::string> keys = SchemaChecker::knownKeys(root, *schema);
    for (auto it = value.begin(); it != value.end(); ++it) {
      std::string child_abs = abs;
      appendPointerSegment(child_abs, it.key());
      std::string child_rel = rel;
      appendPointerSegment(child_rel, it.key());
      if (open && !keys.empty() && std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
        unknownKey(child_abs, it.key(), keys);
        continue;
      }
      if (it.value().is_object()) {
        walkUnknownKeys(it.value(), root, child_rel, child_abs);
      }
    }
  }

  void checkEdges() {
    const Json* raw = graphArray("edges");
    for (size_t i = 0; i < exp_.edges.size(); ++i) {
      const EdgeSpec& e = exp_.edges[i];
      const std::string pointer = indexed("/graph/edges/", i);
      const Json* raw_edge = raw != nullptr && i < raw->size() ? &(*raw)[i] : nullptr;
      for (const auto* end : {&e.from, &e.to}) {
        const char* key = end == &e.from ? "from" : "to";
        if (raw_edge != nullptr && !givenString(*raw_edge, key)) {
          continue;
        }
        if (!known(*end)) {
          error(pointer + (end == &e.from ? "/from" : "/to"),
                "Edge references unknown node id \"" + *end + "\"" + didYouMean(*end, node_ids_));
        }
      }
      if (e.when) {
        checkCondition(*e.when, e.when_mark, pointer + "/when",
                       "when of edge \"" + e.from + "\" -> \"" + e.to + "\"");
      }
      if (raw != nullptr && i < raw->size()) {
        checkClosedKeys((*raw)[i], pointer, {"from", "to", "when"});
      }
    }
  }

  void checkClosedKeys(const Json& value, const std::string& pointer,
                       const std::vector<std::string>& keys) {
    if (!value.is_object()) {
      return;
    }
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
        std::string child = pointer;
        appendPointerSegment(child, it.key());
        unknownKey(child, it.key(), keys);
      }
    }
  }

  // D8: compiled now, so a syntax error shows before the run, at its column in the file.
  void checkCondition(const std::string& source, Mark mark, const std::string& pointer,
                      const std::string& what) {
    auto compiled = expr::Condition::compile(source);
    if (!compiled) {
      std::string message = compiled.error().message;
      int column = 0;
      if (message.rfind("column ", 0) == 0) {
        size_t colon = message.find(": ");
        column = std::atoi(message.c_str() + 7);
        message = message.substr(colon + 2);
      }
      Diagnostic d = diagnosticAt(exp_, pointer, "invalid " + what + ": " + message);
      if (mark.line > 0) {
        d.line = mark.line;
        d.column = mark.column + std::max(column, 1) - 1;
      }
      out_.push_back(std::move(d));
      return;
    }
    for (const auto& field : compiled->fields()) {
      if (!declared(field)) {
        warning(pointer, what + " reads \"$." + field + "\", but \"" + field +
                             "\" is not declared in state.schema, so it is always undefined" +
                             didYouMean(field, field_names_));
      }
    }
  }

  // for_each.source and pipelines.items: anything but a `$.path` gives zero iterations. The
  // diagnostic prints the field in front, so the message does not name it again.
  void checkSourcePath(const std::string& value, const std::string& pointer) {
    auto path = expr::StatePath::parse(value);
    if (!path) {
      warning(pointer,
              "\"" + value + "\" is not a $.path (such as $.items), so it gives zero iterations");
      return;
    }
    if (!declared(path->field())) {
      warning(pointer, "reads \"" + path->field() +
                           "\", which is not declared in state.schema, so it gives zero "
                           "iterations" +
                           didYouMean(path->field(), field_names_));
    }
  }

  void checkArgs(const Json& value, const std::string& pointer) {
    if (value.is_string()) {
      const auto& s = value.get_ref<const std::string&>();
      if (auto path = expr::StatePath::parse(s)) {
        if (!declared(path->field())) {
          warning(pointer, "\"" + s + "\" reads \"" + path->field() +
                               "\", which is not declared in state.schema, so it is always "
                               "undefined" +
                               didYouMean(path->field(), field_names_));
        }
      } else if (expr::StatePath::looksLikePath(s)) {
        warning(pointer, "\"" + s +
                             "\" is not a $.path ($.field.sub, letters, digits and _ only), so "
                             "it is passed as this literal string");
      }
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) {
        checkArgs(value[i], pointer + "/" + std::to_string(i));
      }
    } else if (value.is_object()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        std::string child = pointer;
        appendPointerSegment(child, it.key());
        checkArgs(it.value(), child);
      }
    }
  }

  struct KindCheck {
    std::optional<SchemaChecker> checker;
    std::vector<std::string> keys;       // base keys + the kind's properties
    std::vector<std::string> kind_keys;  // the kind schema's own properties
    bool lists_keys = false;             // the kind schema has `properties` at all
    bool reported = false;               // an invalid plugin schema is reported once
    std::string error;
  };

  KindCheck* kindCheck(const std::string& kind) {
    auto cached = kind_checks_.find(kind);
    if (cached != kind_checks_.end()) {
      return &cached->second;
    }
    KindCheck kc;
    auto it = kinds_.find(kind);
    if (it != kinds_.end() && it->second.schema) {
      auto compiled = SchemaChecker::compile(*it->second.schema);
      if (compiled) {
        kc.keys = baseKeys();
        auto kind_keys = SchemaChecker::knownKeys(*it->second.schema, *it->second.schema);
        kc.lists_keys = !kind_keys.empty();
        kc.kind_keys = kind_keys;
        for (auto& k : kind_keys) {
          if (std::find(kc.keys.begin(), kc.keys.end(), k) == kc.keys.end()) {
            kc.keys.push_back(std::move(k));
          }
        }
        kc.checker = std::move(compiled.value());
      } else {
        kc.error = compiled.error().message;
      }
    }
    return &kind_checks_.emplace(kind, std::move(kc)).first->second;
  }

  const std::vector<std::string>& baseKeys() {
    if (base_keys_.empty()) {
      Json schema = experienceValidationSchema();
      base_keys_ = SchemaChecker::knownKeys(schema, schema["definitions"]["node"]);
    }
    return base_keys_;
  }

  void checkNodes() {
    std::unordered_map<std::string_view, size_t> first_seen;
    first_seen.reserve(exp_.nodes.size());
    for (size_t i = 0; i < exp_.nodes.size(); ++i) {
      const NodeSpec& n = exp_.nodes[i];
      const std::string pointer = indexed("/graph/nodes/", i);
      // The diagnostic names the node (node "a": writes[0]: ...); the message does not again.
      for (size_t j = 0; j < n.writes.size(); ++j) {
        if (!declared(n.writes[j])) {
          error(pointer + "/writes/" + std::to_string(j),
                withHint("writes undeclared state field \"" + n.writes[j] + "\"",
                         didYouMean(n.writes[j], field_names_), "Declare it in state.schema."));
        }
      }
      for (size_t j = 0; j < n.reads.size(); ++j) {
        if (!declared(n.reads[j])) {
          error(pointer + "/reads/" + std::to_string(j),
                withHint("reads undeclared state field \"" + n.reads[j] + "\"",
                         didYouMean(n.reads[j], field_names_), "Declare it in state.schema."));
        }
      }
      auto [first, inserted] = givenString(n.raw, "id") ? first_seen.emplace(n.id, i)
                                                        : std::make_pair(first_seen.end(), true);
      if (!inserted) {
        const Mark m = exp_.nodes[first->second].mark;
        error(pointer + "/id", "Duplicate node ids in graph.nodes: \"" + n.id +
                                   "\" is already the id of the node at line " +
                                   std::to_string(m.line) + ". Node ids must be unique.");
      }
      if (n.phase && !phase_ids_.empty() && phase_ids_.count(*n.phase) == 0) {
        warning(pointer + "/phase", "\"" + *n.phase + "\" is not declared in phases" +
                                        didYouMean(*n.phase, phaseList()));
      }
      if (n.for_each &&
          givenString(
              n.raw.is_object() && n.raw.contains("for_each") ? n.raw.at("for_each") : Json(),
              "source")) {
        checkSourcePath(n.for_each->source, pointer + "/for_each/source");
      }
      checkArgs(n.args, pointer + "/args");
      checkKind(n, pointer);
      checkWritesFromKind(n, pointer);
      checkFiles(n, i, pointer);
      checkNodeKeys(n, pointer);
    }
  }

  std::vector<std::string> phaseList() const {
    std::vector<std::string> out;
    for (const auto& p : exp_.phases) {
      out.push_back(p.id);
    }
    return out;
  }

  void checkKind(const NodeSpec& n, const std::string& pointer) {
    if (!givenString(n.raw, "kind")) {
      return;
    }
    if (kinds_.find(n.kind) == kinds_.end()) {
      const std::string hint = didYouMean(n.kind, kind_names_);
      error(pointer + "/kind",
            "unknown node kind \"" + n.kind + "\"" + hint + (hint.empty() ? "; no" : " No") +
                " loaded plugin provides it (installed kinds: " + quoteList(kind_names_) +
                "). Run `oe plugins` to see what is installed.");
      return;
    }
    KindCheck* kc = kindCheck(n.kind);
    if (!kc->error.empty()) {
      if (!kc->reported) {
        error(pointer + "/kind", "the plugin providing kind \"" + n.kind +
                                     "\" declares an invalid schema for its nodes: " + kc->error);
        kc->reported = true;
      }
      return;
    }
    if (!kc->checker) {
      return;
    }
    // The kind schema describes the kind's own fields: a closed one (additionalProperties)
    // must not reject the common fields, so those it does not list are left out of the check.
    const Json& kind_schema = kc->checker->schema();
    const Json* checked = &n.raw;
    Json stripped;
    if (kind_schema.is_object() && kind_schema.contains("additionalProperties") &&
        n.raw.is_object()) {
      stripped = n.raw;
      for (const auto& key : baseKeys()) {
        if (std::find(kc->kind_keys.begin(), kc->kind_keys.end(), key) == kc->kind_keys.end()) {
          stripped.erase(key);
        }
      }
      checked = &stripped;
    }
    for (const SchemaIssue& issue : kc->checker->check(*checked)) {
      out_.push_back(diagnosticAt(exp_, pointer + issue.pointer, issue.message, Severity::kError,
                                  issue.at_key));
    }
  }

  // A kind whose schema marks a field with "x-oe-writes": "properties" writes the top-level
  // properties of the JSON Schema that field holds (agent, skill, cli-agent: the structured
  // answer is the state delta). A property the node does not list in its `writes` would be
  // written outside them: a warning at run time, refused under runtime.strict_writes.
  void checkWritesFromKind(const NodeSpec& n, const std::string& pointer) {
    if (!n.writes_declared || !n.raw.is_object()) {
      return;
    }
    auto kind = kinds_.find(n.kind);
    if (kind == kinds_.end() || !kind->second.schema || !kind->second.schema->is_object()) {
      return;
    }
    auto fields = kind->second.schema->find("properties");
    if (fields == kind->second.schema->end() || !fields->is_object()) {
      return;
    }
    for (const auto& [field, field_schema] : fields->items()) {
      if (!field_schema.is_object() || field_schema.value("x-oe-writes", "") != "properties") {
        continue;
      }
      auto value = n.raw.find(field);
      if (value == n.raw.end() || !value->is_object()) {
        continue;
      }
      auto props = value->find("properties");
      if (props == value->end() || !props->is_object()) {
        continue;
      }
      for (const auto& [name, unused] : props->items()) {
        if (std::find(n.writes.begin(), n.writes.end(), name) != n.writes.end()) {
          continue;
        }
        std::string at = pointer;
        appendPointerSegment(at, field);
        at += "/properties";
        appendPointerSegment(at, name);
        warning(at, "property \"" + name + "\" of the node's " + field +
                        " is written to the state (the structured answer is the node's state "
                        "delta), but it is not in the node's writes (" +
                        quoteList(n.writes) +
                        "); add it to writes, or the run warns about the write (and refuses it "
                        "under runtime.strict_writes)");
      }
    }
  }

  // Some node can run before node `i`: an edge leads to it, or it is a later pipeline stage or
  // a loop body (an earlier iteration).
  bool hasPredecessors(size_t i) {
    if (!predecessors_) {
      predecessors_.emplace(exp_.nodes.size(), false);
      auto mark = [this](const std::string& id) {
        if (auto it = ids_.find(id); it != ids_.end()) {
          (*predecessors_)[it->second] = true;
        }
      };
      for (const auto& e : exp_.edges) {
        mark(e.to);
      }
      for (const auto& p : exp_.pipelines) {
        for (size_t k = 1; k < p.stages.size(); ++k) {
          mark(p.stages[k]);
        }
      }
      for (const auto& l : exp_.loops) {
        mark(l.body);
      }
    }
    return (*predecessors_)[i];
  }

  // The files the node names, and values its kind cannot run, as its kind's schema marks them
  // (file_check.hpp): known before the run, so reported before it.
  void checkFiles(const NodeSpec& n, size_t i, const std::string& pointer) {
    if (!check_files_ || !givenString(n.raw, "kind")) {
      return;
    }
    auto kind = kinds_.find(n.kind);
    if (kind == kinds_.end()) {
      return;
    }
    const Json* schema = kind->second.schema ? &*kind->second.schema : nullptr;
    for (FileFinding& f : checkFileFields(schema, n.raw, exp_.dir, hasPredecessors(i),
                                          missing_program_, programs_)) {
      out_.push_back(diagnosticAt(exp_, pointer + f.pointer, std::move(f.message), f.severity));
    }
    if (schema != nullptr && schema->is_object()) {
      if (auto nests = schema->find("x-oe-nests"); nests != schema->end() && nests->is_object()) {
        auto found =
            checkNested(exp_, n, pointer, *nests, kinds_, strict_, missing_program_, trail_);
        out_.insert(out_.end(), std::make_move_iterator(found.begin()),
                    std::make_move_iterator(found.end()));
      }
    }
  }

  void checkNodeKeys(const NodeSpec& n, const std::string& pointer) {
    if (!n.raw.is_object()) {
      return;
    }
    if (auto oe = n.raw.find("on_error"); oe != n.raw.end() && oe->is_object()) {
      checkClosedKeys(*oe, pointer + "/on_error", {"policy", "attempts", "backoff", "base_ms"});
      if (n.on_error.policy != ErrorPolicy::kRetry) {
        for (const char* key : {"attempts", "backoff", "base_ms"}) {
          if (oe->contains(key)) {
            warning(pointer + "/on_error/" + key,
                    std::string("\"") + key + "\" only applies to policy retry; it is ignored");
          }
        }
      }
    }
    if (auto fe = n.raw.find("for_each"); fe != n.raw.end()) {
      checkClosedKeys(*fe, pointer + "/for_each", {"source", "concurrency"});
    }
    if (auto cache = n.raw.find("cache"); cache != n.raw.end() && cache->is_object()) {
      checkClosedKeys(*cache, pointer + "/cache", {"inputs"});
      if (auto inputs = cache->find("inputs"); inputs != cache->end() && inputs->is_array()) {
        for (size_t j = 0; j < inputs->size(); ++j) {
          const Json& glob = (*inputs)[j];
          if (!glob.is_string()) {
            continue;  // the schema check reports it
          }
          if (std::string problem = globProblem(glob.get<std::string>()); !problem.empty()) {
            error(pointer + "/cache/inputs/" + std::to_string(j), std::move(problem));
          }
        }
      }
    }
    KindCheck* kc = kinds_.count(n.kind) != 0 ? kindCheck(n.kind) : nullptr;
    if (kc == nullptr || !kc->checker || !kc->lists_keys) {
      return;  // no schema, or one without properties: nothing says which keys the kind has
    }
    const Json& kind_schema = kc->checker->schema();
    if (kind_schema.is_object() && kind_schema.contains("additionalProperties")) {
      return;  // the plugin decided; the schema check reported what it rejects
    }
    for (auto it = n.raw.begin(); it != n.raw.end(); ++it) {
      std::string child = pointer;
      appendPointerSegment(child, it.key());
      if (std::find(kc->keys.begin(), kc->keys.end(), it.key()) == kc->keys.end()) {
        unknownKey(child, it.key(), kc->keys);
        continue;
      }
      // Inside a kind field, the kind schema's own properties lists (e.g. a dataset source).
      if (it.value().is_object()) {
        std::string rel;
        appendPointerSegment(rel, it.key());
        walkUnknownKeys(it.value(), kind_schema, rel, child);
      }
    }
  }

  // `policy:` (docs/policy.md): well-formed hosts, paths that exist, a node's policy no wider
  // than the experience's, and a coding CLI that could not reach its provider.
  void checkPolicy(const PolicySpec& policy, const std::string& pointer) {
    for (size_t i = 0; i < policy.allow.size(); ++i) {
      if (std::string problem = allowEntryProblem(policy.allow[i]); !problem.empty()) {
        error(pointer + "/network/allow/" + std::to_string(i), std::move(problem));
      }
    }
    if (!check_files_ || !policy.fs_read) {
      return;
    }
    for (size_t i = 0; i < policy.fs_read->size(); ++i) {
      const std::string path = policyPath((*policy.fs_read)[i], exp_.dir);
      std::error_code ec;
      if (path != "$TMP" && !std::filesystem::exists(path, ec)) {
        warning(pointer + "/fs/read/" + std::to_string(i), "\"" + (*policy.fs_read)[i] +
                                                               "\" does not exist (" + path +
                                                               "); nothing can be read there");
      }
    }
  }

  void checkPolicies() {
    if (exp_.policy) {
      checkPolicy(*exp_.policy, "/policy");
    }
    for (size_t i = 0; i < exp_.nodes.size(); ++i) {
      const NodeSpec& n = exp_.nodes[i];
      const std::string pointer = indexed("/graph/nodes/", i) + "/policy";
      if (n.policy) {
        checkPolicy(*n.policy, pointer);
        if (exp_.policy) {
          for (auto& widening : widerThan(*n.policy, *exp_.policy, exp_.dir)) {
            error(pointer + "/" + widening.where, "node \"" + n.id + "\": " + widening.message);
          }
        }
      }
      auto in_force = effectivePolicy(exp_.policy.get(), n.policy.get());
      if (n.kind == "cli-agent" && in_force && in_force->network &&
          (*in_force->network == NetworkRule::kNone ||
           *in_force->network == NetworkRule::kLoopback)) {
        warning(n.policy ? pointer : std::string("/policy"),
                "node \"" + n.id + "\" is a cli-agent under network: " +
                    (*in_force->network == NetworkRule::kNone ? "none" : "loopback") +
                    ": the coding CLI cannot reach its provider; allow its API host, e.g. "
                    "network: { allow: [\"api.anthropic.com:443\"] }");
      }
    }
  }

  // `secrets:` and `${secret:NAME}` (docs/policy.md, "Secrets"): every reference well-formed and
  // declared; with the files checked, every declared value readable now.
  void checkSecrets() {
    for (size_t i = 0; i < exp_.nodes.size(); ++i) {
      checkSecretRefs(exp_.nodes[i].raw, indexed("/graph/nodes/", i));
    }
    if (!check_files_) {
      return;
    }
    for (const secrets::Declaration& declaration : exp_.secrets) {
      std::string pointer = "/secrets";
      appendPointerSegment(pointer, declaration.name);
      if (auto value = secrets::readValue(declaration, exp_.dir); !value) {
        error(pointer, value.error().message, true);
      }
    }
  }

  void checkSecretRefs(const Json& value, const std::string& pointer) {
    if (value.is_object()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        std::string child = pointer;
        appendPointerSegment(child, it.key());
        checkSecretRefs(it.value(), child);
      }
    } else if (value.is_array()) {
      for (size_t k = 0; k < value.size(); ++k) {
        checkSecretRefs(value[k], pointer + "/" + std::to_string(k));
      }
    } else if (value.is_string()) {
      const auto& text = value.get_ref<const std::string&>();
      if (text.find("${secret:") == std::string::npos) {
        return;
      }
      if (size_t at = secrets::malformedAt(text); at != std::string::npos) {
        error(pointer, "\"" + text.substr(at, 24) +
                           "...\" is not a secret reference; write ${secret:NAME} with NAME of "
                           "letters, digits and _ (at most 128)");
      }
      for (const secrets::SecretRef& ref : secrets::findReferences(text)) {
        const bool declared = std::any_of(
            exp_.secrets.begin(), exp_.secrets.end(),
            [&ref](const secrets::Declaration& d) { return d.name == ref.name; });
        if (!declared) {
          std::vector<std::string> names;
          for (const secrets::Declaration& d : exp_.secrets) {
            names.push_back(d.name);
          }
          const std::string name(ref.name);
          const std::string hint = didYouMean(name, names);
          error(pointer, "unknown secret \"" + name + "\"" + hint +
                             (hint.empty() ? "." : "") + " Declare it under secrets: (" + name +
                             ": { env: VAR } or { file: path })");
        }
      }
    }
  }

  // `workspace: worktree` (docs/workspaces.md): on the kinds that run in a folder, in a git
  // repository. Whether it is one is a warning here (a repository may be made before the run);
  // the run refuses to start without it.
  void checkWorkspaces() {
    for (size_t i = 0; i < exp_.nodes.size(); ++i) {
      const NodeSpec& n = exp_.nodes[i];
      if (!n.workspace) {
        continue;
      }
      const std::string pointer = indexed("/graph/nodes/", i) + "/workspace";
      if (n.kind != "tool" && n.kind != "cli-agent") {
        error(pointer, "node \"" + n.id + "\" (kind " + n.kind +
                           "): workspace: worktree applies to tool and cli-agent nodes only; "
                           "remove it");
        continue;
      }
      if (!check_files_) {
        continue;
      }
      std::filesystem::path dir = n.workspace->repo.empty()
                                      ? exp_.dir
                                      : (exp_.dir / n.workspace->repo).lexically_normal();
      std::error_code ec;
      if (!n.workspace->repo.empty() && !std::filesystem::is_directory(dir, ec)) {
        error(pointer + "/repo", "node \"" + n.id + "\": workspace.repo " + dir.string() +
                                     " is not a folder");
        continue;
      }
      bool in_repo = false;
      for (std::filesystem::path at = std::filesystem::absolute(dir, ec); !at.empty();
           at = at.parent_path()) {
        if (std::filesystem::exists(at / ".git", ec)) {
          in_repo = true;
          break;
        }
        if (at == at.parent_path()) {
          break;
        }
      }
      if (!in_repo) {
        warning(pointer, "node \"" + n.id + "\": " + dir.string() +
                             " is not inside a git repository; a run refuses to start until it "
                             "is (git init and a first commit)");
      }
    }
  }

  // `triggers:` (docs/serve.md, "Triggers"): each one a cron schedule or a webhook, its
  // expression, zone, name, secret and args_from sound. The structure (types, unknown keys) is
  // the schema's; these are the checks it cannot express, with what to write instead.
  void checkTriggers() {
    const auto list = exp_.raw.is_object() ? exp_.raw.find("triggers") : exp_.raw.end();
    if (!exp_.raw.is_object() || list == exp_.raw.end() || !list->is_array()) {
      return;
    }
    std::map<std::string, std::string, std::less<>> hook_at;  // name -> "line N"
    for (size_t i = 0; i < list->size() && i < exp_.triggers.size(); ++i) {
      const Json& item = (*list)[i];
      const TriggerSpec& trigger = exp_.triggers[i];
      const std::string pointer = indexed("/triggers/", i);
      if (!item.is_object()) {
        continue;  // the schema's error
      }
      const bool is_cron = item.contains("cron");
      const bool is_hook = item.contains("webhook");
      if (is_cron == is_hook) {
        error(pointer, is_cron ? "trigger " + std::to_string(i + 1) +
                                     " has both cron: and webhook:; write each as a trigger of "
                                     "its own"
                               : "trigger " + std::to_string(i + 1) +
                                     " has neither cron: nor webhook:; add one, e.g. cron: \"0 7 * "
                                     "* 1-5\" or webhook: { name: NAME, secret: { env: VAR } }");
        continue;
      }
      if (is_cron) {
        if (const Json& cron = item["cron"]; cron.is_string()) {
          if (auto parsed = parseCron(cron.get<std::string>()); !parsed) {
            error(pointer + "/cron", parsed.error().message);
          }
        }
        if (auto zone = item.find("timezone"); zone != item.end() && zone->is_string()) {
          if (auto file = zoneFile(zone->get<std::string>()); !file) {
            error(pointer + "/timezone", file.error().message);
          }
        }
        if (item.contains("args_from")) {
          error(pointer + "/args_from", "args_from maps a webhook's payload to args; a cron "
                                        "trigger has no payload: give its args under args:",
                true);
        }
        continue;
      }
      for (const char* key : {"timezone", "missed"}) {
        if (item.contains(key)) {
          error(pointer + "/" + key, std::string(key) +
                                         " applies to cron triggers only; remove it from the "
                                         "webhook trigger",
                true);
        }
      }
      const Json& hook = item["webhook"];
      if (!hook.is_object() || !trigger.webhook) {
        continue;  // the schema's error
      }
      const WebhookTrigger& w = *trigger.webhook;
      const std::string hook_pointer = pointer + "/webhook";
      if (w.name.empty()) {
        error(hook_pointer, "the webhook has no name; add name: (letters, digits, _ . -), which "
                            "makes its address POST /hooks/" + exp_.name + "/<name>");
      } else if (w.name.size() > 64 ||
                 !std::all_of(w.name.begin(), w.name.end(), [](char c) {
                   return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' ||
                          c == '-' || c == '.';
                 })) {
        error(hook_pointer + "/name", "webhook name \"" + w.name +
                                          "\" is part of a URL: use at most 64 letters, digits, "
                                          "_, . and -");
      } else {
        const Mark at = exp_.markOf(hook_pointer + "/name");
        auto [first, inserted] = hook_at.emplace(w.name, "line " + std::to_string(at.line));
        if (!inserted) {
          error(hook_pointer + "/name", "webhook name \"" + w.name +
                                            "\" is used twice (first on " + first->second +
                                            "); each webhook of an experience needs its own name");
        }
      }
      const bool has_env = !w.secret.env.empty();
      const bool has_file = !w.secret.file.empty();
      if (!hook.contains("secret") || (!has_env && !has_file)) {
        error(hook_pointer, "the webhook has no secret; add secret: { env: VAR } or secret: { "
                            "file: path } holding the key its deliveries are signed with "
                            "(HMAC-SHA256): oe serve refuses unsigned deliveries");
      } else if (has_env && has_file) {
        error(hook_pointer + "/secret", "the webhook's secret names both env: and file:; keep "
                                        "one");
      } else if (check_files_) {
        if (auto value = secrets::readValue(w.secret, exp_.dir); !value) {
          warning(hook_pointer + "/secret",
                  value.error().message +
                      " (oe serve refuses every delivery of this webhook until it can read it)");
        }
      }
      for (const auto& [arg, path] : trigger.args_from) {
        std::string at = pointer + "/args_from";
        appendPointerSegment(at, arg);
        const auto parsed = expr::StatePath::parse(path);
        if (!parsed || (parsed->field() != "body" && parsed->field() != "headers")) {
          error(at, "args_from." + arg + " is \"" + path +
                        "\": write a $.path into the delivery, $.body.<field>... for its JSON "
                        "body or $.headers.<name> for a header (lower case, - as _), e.g. "
                        "$.body.issue.number");
        }
      }
    }
  }

  // Approvals (docs/policy.md, "Approvals"): a timeout that is a duration, what `show:` names,
  // and a gate that is one question. A pipeline stage or loop body may ask: it asks per item
  // or iteration.
  void checkApprovals() {
    for (size_t i = 0; i < exp_.nodes.size(); ++i) {
      const NodeSpec& n = exp_.nodes[i];
      if (!n.approval) {
        continue;
      }
      const bool gate = n.approval->gate;
      const std::string node_pointer = indexed("/graph/nodes/", i);
      const std::string pointer = gate ? node_pointer : node_pointer + "/approval";
      const std::string who = "node \"" + n.id + "\"";
      if (gate && n.raw.is_object() && n.raw.contains("approval")) {
        error(node_pointer + "/approval", who + " is an approval gate (kind approval): its "
                                                "prompt, show, timeout and on_timeout are its "
                                                "own keys; remove `approval:`");
      }
      if (gate && n.for_each) {
        error(node_pointer + "/for_each",
              who + " (kind approval) is one question, asked once: remove for_each (an "
                    "`approval:` on the for_each node asks once before all its items)");
      }
      if (gate && n.writes.size() > 1) {
        error(node_pointer + "/writes",
              who + " (kind approval) writes its decision to one field; it declares " +
                  std::to_string(n.writes.size()) + ": keep one");
      }
      const Json* block = nullptr;
      if (n.raw.is_object()) {
        block = gate ? &n.raw : (n.raw.contains("approval") ? &n.raw.at("approval") : nullptr);
      }
      if (block == nullptr || !block->is_object()) {
        continue;
      }
      if (auto t = block->find("timeout"); t != block->end() && t->is_string()) {
        if (auto ms = parseApprovalTimeout(t->get_ref<const std::string&>()); !ms) {
          error(pointer + "/timeout", who + ": " + ms.error().message);
        }
      } else if (block->contains("on_timeout")) {
        warning(pointer + "/on_timeout",
                who + ": on_timeout applies only with a timeout; without one the run waits for "
                      "a decision for as long as it takes");
      }
      if (auto show = block->find("show"); show != block->end() && show->is_array()) {
        for (size_t j = 0; j < show->size(); ++j) {
          const Json& entry = (*show)[j];
          if (!entry.is_string()) {
            continue;  // the schema check reports it
          }
          checkShowEntry(n, entry.get_ref<const std::string&>(),
                         pointer + "/show/" + std::to_string(j));
        }
      }
    }
  }

  void checkShowEntry(const NodeSpec& n, const std::string& entry, const std::string& pointer) {
    const std::string who = "node \"" + n.id + "\": show: \"" + entry + "\"";
    if (entry.rfind("$.", 0) == 0) {
      const std::string field = entry.substr(2, entry.find_first_of(".[", 2) - 2);
      if (!declared(field)) {
        error(pointer, who + " names state field \"" + field + "\", which state.schema does "
                                                              "not declare" +
                           didYouMean(field, field_names_));
      }
      return;
    }
    if (entry.rfind("diff:", 0) == 0) {
      const std::string id = entry.substr(5);
      const NodeSpec* target = exp_.findNode(id);
      if (target == nullptr) {
        error(pointer, who + " names no node of the graph" + didYouMean(id, node_ids_));
      } else if (!target->workspace) {
        error(pointer, who + ": node \"" + id +
                           "\" has no `workspace: worktree`, so it makes no diff to show");
      }
      return;
    }
    error(pointer, who + " is neither a state path ($.field) nor a node's diff (diff:NODE)");
  }

  void checkPipelines() {
    const Json* raw = graphArray("pipelines");
    for (size_t i = 0; i < exp_.pipelines.size(); ++i) {
      const PipelineSpec& p = exp_.pipelines[i];
      const std::string pointer = indexed("/graph/pipelines/", i);
      const Json* raw_pipeline = raw != nullptr && i < raw->size() ? &(*raw)[i] : nullptr;
      for (size_t j = 0; j < p.stages.size(); ++j) {
        if (!known(p.stages[j])) {
          error(pointer + "/stages/" + std::to_string(j),
                "Pipeline \"" + p.id + "\" references unknown stage node \"" + p.stages[j] + "\"" +
                    didYouMean(p.stages[j], node_ids_));
        }
      }
      if (raw_pipeline == nullptr || givenString(*raw_pipeline, "items")) {
        checkSourcePath(p.items, pointer + "/items");
      }
      if (raw != nullptr && i < raw->size()) {
        checkClosedKeys((*raw)[i], pointer, {"id", "items", "stages", "phase"});
      }
    }
  }

  void checkLoops() {
    const Json* raw = graphArray("loops");
    for (size_t i = 0; i < exp_.loops.size(); ++i) {
      const LoopSpec& l = exp_.loops[i];
      const std::string pointer = indexed("/graph/loops/", i);
      const Json* raw_loop = raw != nullptr && i < raw->size() ? &(*raw)[i] : nullptr;
      if ((raw_loop == nullptr || givenString(*raw_loop, "body")) && !known(l.body)) {
        error(pointer + "/body", "Loop \"" + l.id + "\" references unknown body node \"" + l.body +
                                     "\"" + didYouMean(l.body, node_ids_));
      }
      if (!l.until && !l.max_iters) {
        error(pointer, "Loop \"" + l.id + "\" must declare at least one of: until, max_iters");
      }
      if (l.until) {
        checkCondition(*l.until, l.until_mark, pointer + "/until",
                       "until of loop \"" + l.id + "\"");
      }
      if (raw != nullptr && i < raw->size()) {
        checkClosedKeys((*raw)[i], pointer,
                        {"id", "body", "until", "max_iters", "budget", "phase"});
      }
    }
    if (auto rt = exp_.raw.is_object() ? exp_.raw.find("runtime") : exp_.raw.end();
        exp_.raw.is_object() && rt != exp_.raw.end()) {
      checkClosedKeys(
          *rt, "/runtime",
          {"concurrency", "deterministic", "strict_writes", "limits", "budget", "prices", "store",
           "max_concurrent_runs"});
      if (auto limits = rt->is_object() ? rt->find("limits") : rt->end();
          rt->is_object() && limits != rt->end() && limits->is_object()) {
        for (const auto& [provider, entry] : limits->items()) {
          std::string at = "/runtime/limits";
          appendPointerSegment(at, provider);
          checkClosedKeys(entry, at,
                          {"max_in_flight", "requests_per_minute", "tokens_per_minute", "models"});
          if (auto models = entry.is_object() ? entry.find("models") : entry.end();
              entry.is_object() && models != entry.end() && models->is_object()) {
            for (const auto& [model, limit] : models->items()) {
              std::string model_at = at + "/models";
              appendPointerSegment(model_at, model);
              checkClosedKeys(limit, model_at,
                              {"max_in_flight", "requests_per_minute", "tokens_per_minute"});
            }
          }
        }
      }
    }
  }

  const Json* graphArray(const char* key) const {
    if (!exp_.raw.is_object() || !exp_.raw.contains("graph")) {
      return nullptr;
    }
    const Json& graph = exp_.raw["graph"];
    if (!graph.is_object() || !graph.contains(key) || !graph[key].is_array()) {
      return nullptr;
    }
    return &graph[key];
  }

  void checkCycles() {
    for (const Cycle& c : cyclesOf(exp_, ids_, 20)) {
      std::string path;
      for (size_t k : c.nodes) {
        path += (path.empty() ? "" : " -> ") + exp_.nodes[k].id;
      }
      error(indexed("/graph/edges/", c.closing_edge),
            "graph contains a cycle: " + path +
                ". Remove one of these edges; to repeat work, use graph.loops.");
    }
  }

  const Experience& exp_;
  NestingTrail& trail_;
  const KindCatalog& kinds_;
  bool strict_;
  bool check_files_;
  ProgramCheck missing_program_;
  ProgramCache programs_;
  std::optional<std::vector<bool>> predecessors_;
  IdIndex ids_;
  std::vector<std::string> node_ids_;
  std::vector<std::string> field_names_;
  std::vector<std::string> kind_names_;
  std::unordered_set<std::string> phase_ids_;
  std::vector<std::string> base_keys_;
  std::map<std::string, KindCheck, std::less<>> kind_checks_;
  std::vector<Diagnostic> out_;
};

}  // namespace

std::vector<std::vector<std::string>> findCycles(const Experience& exp, size_t limit) {
  std::vector<std::vector<std::string>> out;
  for (const Cycle& c : cyclesOf(exp, indexIds(exp), limit)) {
    std::vector<std::string> ids;
    ids.reserve(c.nodes.size());
    for (size_t k : c.nodes) {
      ids.push_back(exp.nodes[k].id);
    }
    out.push_back(std::move(ids));
  }
  return out;
}

std::vector<Diagnostic> validateExperience(const Experience& exp, const KindCatalog& kinds,
                                           bool strict, bool check_files,
                                           ProgramCheck missing_program) {
  NestingTrail trail;
  return validateExperience(exp, kinds, strict, check_files, missing_program, trail);
}

std::vector<Diagnostic> validateExperience(const Experience& exp, const KindCatalog& kinds,
                                           bool strict, bool check_files,
                                           ProgramCheck missing_program, NestingTrail& trail) {
  return Validator(exp, kinds, strict, check_files, missing_program, trail).run();
}

}  // namespace oe::spec
