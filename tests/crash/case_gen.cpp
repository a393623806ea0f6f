// The generator (case_gen.hpp): a seed, a plan of the constructs, then the main pass node by
// node in topological order, keeping per field who wrote and who read it so that every choice
// keeps the final state a function of the definition alone.
#include "crash/case_gen.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "crash/rng.hpp"

namespace oe::crash {
namespace {

std::string mergeName(Merge merge) {
  switch (merge) {
    case Merge::kArrayAppend:
      return "array_append";
    case Merge::kSetOnce:
      return "set_once";
    default:
      return "last_wins";
  }
}

std::string typeName(FieldType type) {
  switch (type) {
    case FieldType::kNumber:
      return "number";
    case FieldType::kArray:
      return "array";
    default:
      return "string";
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

// What the generator knows of a field while it builds the main pass.
struct FieldBook {
  Field field;
  std::vector<int> writers;  // main-pass node indices
  std::vector<int> readers;  // readers, `when` conditions and nested children that see it
  bool written_once = false; // a set_once field with a single, input-derived value
  bool constant = false;     // a set_once field written with `const`
  bool counter = false;      // a loop counter
  bool blob = false;
  bool list = false;
  bool sequential_write = false;  // written after the main pass (a stage, a loop body)
};

class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& options) : rng_(seed), options_(options) {
    case_.seed = seed;
  }

  Case run() {
    case_.deterministic = rng_.chance(50);
    case_.concurrency = rng_.range(1, 4);
    case_.first_run_no_cache = rng_.chance(10);
    case_.late_writes = rng_.chance(30);
    case_.nested_successors = rng_.chance(30);
    case_.fan_in_edges = rng_.chance(30);
    const int span = std::max(0, options_.max_nodes - options_.min_nodes);
    // Skewed towards small graphs: a case is faster, and a failing one easier to read.
    const int total = options_.min_nodes + rng_.below(1 + rng_.below(span + 1));
    int stages = 0;
    int loops = 0;
    if (total >= 6 && rng_.chance(35)) {
      stages = rng_.range(1, 3);
    }
    if (total - stages >= 5 && rng_.chance(40)) {
      loops = rng_.chance(25) ? 2 : 1;
    }
    const int main_nodes = total - stages - loops;
    for (int i = 0; i < main_nodes; ++i) {
      mainNode(i);
    }
    if (stages > 0) {
      pipeline(stages);
    }
    for (int l = 0; l < loops; ++l) {
      loop(l);
    }
    for (auto& book : book_) {
      case_.fields.push_back(book.field);
    }
    return std::move(case_);
  }

 private:
  // ---- fields ---------------------------------------------------------------------------

  int newField(char prefix, Merge merge, FieldType type) {
    const int n = counts_[prefix]++;
    FieldBook book;
    book.field = Field{std::string(1, prefix) + std::to_string(n), merge, type};
    book_.push_back(std::move(book));
    return static_cast<int>(book_.size()) - 1;
  }
  bool ancestor(int a, int i) const { return anc_[static_cast<size_t>(i)].count(a) != 0; }
  bool allAncestors(const std::vector<int>& nodes, int i) const {
    return std::all_of(nodes.begin(), nodes.end(), [&](int a) { return ancestor(a, i); });
  }
  // Node i sees the field's final main-pass value: every writer is its ancestor.
  bool readable(const FieldBook& book, int i) const {
    return !book.writers.empty() && allAncestors(book.writers, i) && !book.blob && !book.counter;
  }
  // A write of node i comes after every read of the field (and, with late writes off, there is
  // none: nothing read it, not even node i itself); a last_wins write also after every write.
  bool afterReads(const FieldBook& book, int i, const Node& node) const {
    if (case_.late_writes) {
      return allAncestors(book.readers, i);
    }
    return book.readers.empty() &&
           std::find(node.reads.begin(), node.reads.end(), book.field.name) == node.reads.end();
  }
  bool appendable(const FieldBook& book, int i, const Node& node) const {
    return book.field.merge == Merge::kArrayAppend && afterReads(book, i, node);
  }
  bool overwritable(const FieldBook& book, int i, const Node& node, FieldType type) const {
    return book.field.merge == Merge::kLastWins && book.field.type == type && !book.list &&
           !book.counter && !book.blob && afterReads(book, i, node) &&
           allAncestors(book.writers, i);
  }
  std::vector<int> fieldsWhere(const std::function<bool(const FieldBook&)>& keep) const {
    std::vector<int> out;
    for (size_t f = 0; f < book_.size(); ++f) {
      if (keep(book_[f])) {
        out.push_back(static_cast<int>(f));
      }
    }
    return out;
  }
  const std::string& name(int f) const { return book_[static_cast<size_t>(f)].field.name; }
  // An array_append field's order is known when its writers so far ran one after the other.
  static bool orderKnown(const FieldBook& book) {
    return book.field.merge != Merge::kArrayAppend || book.field.ordered;
  }
  // A node hashes lists in sorted order when one it reads has an order that varies.
  bool sortsWhatItReads(const Node& node) const {
    return std::any_of(node.reads.begin(), node.reads.end(), [&](const std::string& field) {
      return std::any_of(book_.begin(), book_.end(), [&](const FieldBook& b) {
        return b.field.name == field && !orderKnown(b);
      });
    });
  }

  // ---- the main pass --------------------------------------------------------------------

  Flavour toolFlavour() { return rng_.chance(50) ? Flavour::kMjs : Flavour::kExe; }

  void mainNode(int i) {
    Node node;
    node.id = "n" + std::to_string(i);
    std::set<int> preds;
    if (i > 0) {
      if (rng_.chance(75)) {
        preds.insert(i - 1);
      }
      if (i > 1 && rng_.chance(40)) {
        preds.insert(rng_.below(i - 1));
      }
      if (preds.empty() && rng_.chance(70)) {
        preds.insert(rng_.below(i));
      }
      if (!case_.nested_successors) {
        std::erase_if(preds, [&](int p) {
          return case_.nodes[static_cast<size_t>(p)].flavour == Flavour::kExperience;
        });
      }
    }
    std::set<int> anc;
    for (int p : preds) {
      anc.insert(p);
      anc.insert(anc_[static_cast<size_t>(p)].begin(), anc_[static_cast<size_t>(p)].end());
    }
    anc_.push_back(anc);

    if (i == 0) {
      node.flavour = toolFlavour();
      const int list = newField('l', Merge::kLastWins, FieldType::kArray);
      book_[static_cast<size_t>(list)].list = true;
      node.writes.push_back({name(list), "list:" + std::to_string(rng_.range(2, 5))});
      node.writes.push_back({name(newField('a', Merge::kArrayAppend, FieldType::kArray)), "item"});
      toolExtras(node);
      commit(i, node, {});
      return;
    }

    if (options_.nested && children_ < 2 && rng_.chance(8)) {
      node.flavour = Flavour::kExperience;
      experienceNode(i, node);
    } else {
      node.flavour = options_.agents && rng_.chance(20) ? Flavour::kAgent : toolFlavour();
      plainNode(i, node);
    }
    std::vector<std::string> when_reads;
    if (!preds.empty() && rng_.chance(20)) {
      whenEdge(i, node, preds, when_reads);
    }
    for (int p : preds) {
      const Node& pred = case_.nodes[static_cast<size_t>(p)];
      const bool edge_known =
          (pred.flavour == Flavour::kMjs || pred.flavour == Flavour::kExe) &&
          (!pred.for_each || case_.deterministic);
      if (edge_known && node.flavour != Flavour::kAgent) {
        node.hash_edges.push_back(pred.id);
      }
      bool has_edge = false;
      for (const auto& edge : case_.edges) {
        has_edge = has_edge || (edge.from == pred.id && edge.to == node.id);
      }
      if (!has_edge) {
        case_.edges.push_back({pred.id, node.id, std::nullopt});
      }
    }
    commit(i, node, when_reads);
  }

  void plainNode(int i, Node& node) {
    const bool agent = node.flavour == Flavour::kAgent;
    // for_each over a list an ancestor wrote.
    if (rng_.chance(30)) {
      auto lists = fieldsWhere([&](const FieldBook& b) { return b.list && readable(b, i); });
      if (!lists.empty()) {
        node.for_each = name(rng_.pick(lists));
        if (rng_.chance(50)) {
          node.for_each_concurrency = rng_.range(1, 4);
        }
      }
    }
    const bool fan = node.for_each.has_value();
    // Without item order, which item's edge_output a successor gets depends on timing.
    node.no_edge_output = fan && !case_.deterministic && !case_.fan_in_edges;
    // Reads.
    auto readable_fields = fieldsWhere([&](const FieldBook& b) {
      // An agent renders what it reads into its prompt as it is: no list whose order varies.
      return readable(b, i) &&
             !(agent && !orderKnown(b));
    });
    for (int k = rng_.below(3); k > 0 && !readable_fields.empty(); --k) {
      const int f = rng_.pick(readable_fields);
      if (std::find(node.reads.begin(), node.reads.end(), name(f)) == node.reads.end()) {
        node.reads.push_back(name(f));
      }
    }
    node.sort_arrays = sortsWhatItReads(node);
    // Most nodes append their identity somewhere; the others write last_wins fields alone, whose
    // writes carry no landed-write mark (docs/storage.md) and are applied again on resume.
    const bool lone = (!fan || case_.deterministic) && rng_.chance(20);
    if (!lone) {
      // Not a field the node reads when its items run side by side: an item that starts when a
      // sibling finishes sees as many of its siblings' appends as the schedule let land first,
      // and after a stop, all of them. No run, interrupted or not, fixes what such an item
      // reads, so it is no property of resume (docs/testing.md, "What it generates").
      const bool items_in_parallel = fan && node.for_each_concurrency.value_or(1) > 1;
      auto appendable_fields = fieldsWhere([&](const FieldBook& b) {
        return appendable(b, i, node) &&
               !(items_in_parallel && std::find(node.reads.begin(), node.reads.end(),
                                                b.field.name) != node.reads.end());
      });
      const int item = !appendable_fields.empty() && rng_.chance(65)
                           ? rng_.pick(appendable_fields)
                           : newField('a', Merge::kArrayAppend, FieldType::kArray);
      node.writes.push_back({name(item), "item"});
    }
    // A last_wins string or number: overwriting the one an ancestor wrote makes a chain. A
    // for_each's items settle in item order only under runtime.deterministic.
    if (lone || ((!fan || case_.deterministic) && rng_.chance(45))) {
      const FieldType type = rng_.chance(50) ? FieldType::kString : FieldType::kNumber;
      auto chain =
          fieldsWhere([&](const FieldBook& b) { return overwritable(b, i, node, type); });
      const int f = !chain.empty() && rng_.chance(60)
                        ? rng_.pick(chain)
                        : newField(type == FieldType::kString ? 's' : 'v', Merge::kLastWins, type);
      node.writes.push_back({name(f), type == FieldType::kString ? "value" : "number"});
    }
    if (!fan && !agent && rng_.chance(15)) {
      const int list = newField('l', Merge::kLastWins, FieldType::kArray);
      book_[static_cast<size_t>(list)].list = true;
      node.writes.push_back({name(list), "list:" + std::to_string(rng_.range(1, 4))});
    }
    if (!lone && rng_.chance(12)) {
      auto constants = fieldsWhere([&](const FieldBook& b) {
        return b.constant && afterReads(b, i, node);
      });
      if (fan || rng_.chance(40)) {
        int f = -1;
        if (!constants.empty() && rng_.chance(60)) {
          f = rng_.pick(constants);
        } else {
          f = newField('o', Merge::kSetOnce, FieldType::kString);
          book_[static_cast<size_t>(f)].constant = true;
        }
        node.writes.push_back({name(f), "const"});
      } else {
        const int f = newField('o', Merge::kSetOnce, FieldType::kString);
        book_[static_cast<size_t>(f)].written_once = true;
        node.writes.push_back({name(f), "value"});
      }
    }
    if (!agent && rng_.chance(5)) {
      const int f = newField('b', Merge::kLastWins, FieldType::kString);
      book_[static_cast<size_t>(f)].blob = true;
      node.writes.push_back({name(f), rng_.chance(50) ? "blob:4096" : "blob:65536"});
    }
    if (!agent) {
      toolExtras(node);
    }
  }

  void toolExtras(Node& node) {
    if (rng_.chance(12)) {
      node.retry = true;
      node.fail_first = true;
    } else if (rng_.chance(5)) {
      node.retry = true;
    }
    node.sleep_ms = rng_.chance(60) ? rng_.range(1, 40) : 0;
  }

  void whenEdge(int i, Node& node, const std::set<int>& preds,
                std::vector<std::string>& when_reads) {
    // The condition is a read before the node's own writes: with late writes off, not of a
    // field the node writes (a resume would test it against the node's own write).
    auto own = [&](const FieldBook& b) {
      return !case_.late_writes &&
             std::any_of(node.writes.begin(), node.writes.end(),
                         [&](const Write& w) { return w.field == b.field.name; });
    };
    auto numbers = fieldsWhere([&](const FieldBook& b) {
      return readable(b, i) && b.field.type == FieldType::kNumber && !b.counter && !own(b);
    });
    auto lists = fieldsWhere([&](const FieldBook& b) {
      return readable(b, i) && b.field.merge == Merge::kArrayAppend && !own(b);
    });
    std::string condition;
    if (!numbers.empty() && (lists.empty() || rng_.chance(70))) {
      const int f = rng_.pick(numbers);
      condition = "$." + name(f) + (rng_.chance(50) ? " >= " : " < ") +
                  std::to_string(rng_.range(20, 80));
      when_reads.push_back(name(f));
    } else if (!lists.empty()) {
      const int f = rng_.pick(lists);
      condition = "length($." + name(f) + ") > " + std::to_string(rng_.range(0, 3));
      when_reads.push_back(name(f));
    } else {
      return;
    }
    std::vector<int> from(preds.begin(), preds.end());
    case_.edges.push_back({case_.nodes[static_cast<size_t>(rng_.pick(from))].id, node.id,
                           condition});
  }

  void experienceNode(int i, Node& node) {
    ChildSpec child;
    child.shared = rng_.chance(50);
    ++children_;
    auto appendable_fields =
        fieldsWhere([&](const FieldBook& b) { return appendable(b, i, node); });
    const int target = !appendable_fields.empty() && rng_.chance(60)
                           ? rng_.pick(appendable_fields)
                           : newField('a', Merge::kArrayAppend, FieldType::kArray);
    auto seen = fieldsWhere([&](const FieldBook& b) {
      return readable(b, i) && !b.list && b.field.merge != Merge::kArrayAppend;
    });
    const int read = !seen.empty() && rng_.chance(70) ? rng_.pick(seen) : -1;
    // Not the field the child reads: a child that reads what it overwrites is a late write (and
    // its schema would declare the field twice).
    auto chain = fieldsWhere([&](const FieldBook& b) {
      return overwritable(b, i, node, FieldType::kString) &&
             (read < 0 || b.field.name != name(read));
    });
    int overwrite = -1;
    if (rng_.chance(40)) {
      overwrite = !chain.empty() && rng_.chance(60)
                      ? rng_.pick(chain)
                      : newField('s', Merge::kLastWins, FieldType::kString);
    }
    const int count = rng_.range(1, 3);
    for (int k = 0; k < count; ++k) {
      ChildSpec::ChildNode cn;
      cn.id = "c" + std::to_string(k);
      cn.flavour = toolFlavour();
      cn.sleep_ms = rng_.chance(50) ? rng_.range(1, 30) : 0;
      child.nodes.push_back(cn);
    }
    if (child.shared) {
      child.fields.push_back(book_[static_cast<size_t>(target)].field);
      if (read >= 0) {
        child.fields.push_back(book_[static_cast<size_t>(read)].field);
        child.reads.push_back(name(read));  // seen by the child, not a `reads:` of the node
      }
      if (overwrite >= 0) {
        child.fields.push_back(book_[static_cast<size_t>(overwrite)].field);
      }
      child.fields.push_back(Field{"x", Merge::kArrayAppend, FieldType::kArray});
      for (auto& cn : child.nodes) {
        cn.writes.push_back({name(target), "item"});
        if (read >= 0 && rng_.chance(70)) {
          cn.reads.push_back(name(read));
        }
        if (rng_.chance(40)) {
          cn.writes.push_back({"x", "item"});
        }
      }
      if (overwrite >= 0) {
        child.nodes.back().writes.push_back({name(overwrite), "value"});
        node.writes.push_back({name(overwrite), "value"});
      }
      node.writes.insert(node.writes.begin(), {name(target), "item"});
    } else {
      child.fields.push_back(Field{"out", Merge::kArrayAppend, FieldType::kArray});
      child.fields.push_back(Field{"res", Merge::kLastWins, FieldType::kString});
      for (auto& cn : child.nodes) {
        cn.writes.push_back({"out", "item"});
      }
      child.nodes.back().writes.push_back({"res", "value"});
      if (read >= 0) {
        node.reads.push_back(name(read));
        child.inputs = "{ x: $." + name(read) + " }";
      }
      child.outputs = "{ " + name(target) + ": $.out";
      node.writes.push_back({name(target), "item"});
      if (overwrite >= 0) {
        child.outputs += ", " + name(overwrite) + ": $.res";
        node.writes.push_back({name(overwrite), "value"});
      }
      child.outputs += " }";
    }
    node.child = std::move(child);
  }

  // Records node i's reads and writes (and a `when`'s field) for the nodes after it.
  void commit(int i, Node& node, const std::vector<std::string>& when_reads) {
    auto book = [&](const std::string& field) -> FieldBook& {
      for (auto& b : book_) {
        if (b.field.name == field) {
          return b;
        }
      }
      throw std::logic_error("no field " + field);
    };
    std::vector<std::string> reads = node.reads;
    reads.insert(reads.end(), when_reads.begin(), when_reads.end());
    if (node.for_each) {
      reads.push_back(*node.for_each);
    }
    if (node.child) {
      reads.insert(reads.end(), node.child->reads.begin(), node.child->reads.end());
    }
    for (const auto& field : reads) {
      book(field).readers.push_back(i);
    }
    for (const auto& write : node.writes) {
      FieldBook& b = book(write.field);
      // D16 orders a for_each's items, not the appends of nodes that run side by side.
      if (b.field.merge == Merge::kArrayAppend &&
          (!case_.deterministic || !allAncestors(b.writers, i))) {
        b.field.ordered = false;
      }
      b.writers.push_back(i);
    }
    case_.nodes.push_back(std::move(node));
  }

  // ---- after the main pass: sequential, so any field is settled --------------------------

  // With late writes off, what a stage or a body reads no stage or body writes (a pipeline
  // item's or an iteration's read would otherwise see an earlier item's write).
  std::vector<int> anyReadable(bool agent) const {
    return fieldsWhere([&](const FieldBook& b) {
      return !b.writers.empty() && !b.blob && !b.counter &&
             (case_.late_writes || !b.sequential_write) &&
             !(agent && !orderKnown(b));
    });
  }
  bool sequentialMayWrite(const FieldBook& b, const Node& node) const {
    return case_.late_writes ||
           (b.readers.empty() &&
            std::find(node.reads.begin(), node.reads.end(), b.field.name) == node.reads.end());
  }
  void commitSequential(const Node& node) {
    for (auto& b : book_) {
      if (std::find(node.reads.begin(), node.reads.end(), b.field.name) != node.reads.end()) {
        b.readers.push_back(-1);  // after the main pass: only "was read" matters
      }
      for (const auto& w : node.writes) {
        if (w.field == b.field.name) {
          if (b.field.merge == Merge::kArrayAppend && !case_.deterministic) {
            b.field.ordered = false;
          }
          b.writers.push_back(-1);
          b.sequential_write = true;
        }
      }
    }
  }

  void sequentialNode(Node& node, bool agent_ok) {
    node.flavour = agent_ok && options_.agents && rng_.chance(25) ? Flavour::kAgent : toolFlavour();
    const bool agent = node.flavour == Flavour::kAgent;
    auto readable_fields = anyReadable(agent);
    for (int k = rng_.below(3); k > 0 && !readable_fields.empty(); --k) {
      const int f = rng_.pick(readable_fields);
      if (std::find(node.reads.begin(), node.reads.end(), name(f)) == node.reads.end()) {
        node.reads.push_back(name(f));
      }
    }
    node.sort_arrays = sortsWhatItReads(node);
    const bool lone = rng_.chance(20);
    if (!lone) {
      auto appendable_fields = fieldsWhere([&](const FieldBook& b) {
        return b.field.merge == Merge::kArrayAppend && sequentialMayWrite(b, node);
      });
      const int item = !appendable_fields.empty() && rng_.chance(70)
                           ? rng_.pick(appendable_fields)
                           : newField('a', Merge::kArrayAppend, FieldType::kArray);
      node.writes.push_back({name(item), "item"});
    }
    if (lone || rng_.chance(35)) {
      const FieldType type = rng_.chance(50) ? FieldType::kString : FieldType::kNumber;
      auto chain = fieldsWhere([&](const FieldBook& b) {
        return b.field.merge == Merge::kLastWins && b.field.type == type && !b.list &&
               !b.counter && !b.blob && sequentialMayWrite(b, node);
      });
      const int f = !chain.empty() && rng_.chance(60)
                        ? rng_.pick(chain)
                        : newField(type == FieldType::kString ? 's' : 'v', Merge::kLastWins, type);
      node.writes.push_back({name(f), type == FieldType::kString ? "value" : "number"});
    }
    if (!agent) {
      toolExtras(node);
    }
  }

  void pipeline(int stages) {
    Pipeline p;
    p.id = "p0";
    auto lists = fieldsWhere([](const FieldBook& b) { return b.list && !b.writers.empty(); });
    p.items = name(rng_.pick(lists));
    std::string prev;
    for (int s = 0; s < stages; ++s) {
      Node node;
      node.id = "p0s" + std::to_string(s);
      node.role = Role::kStage;
      // A stage without edge_output (an agent's) ends its item's chain: only the last may be one.
      sequentialNode(node, s == stages - 1);
      if (!prev.empty()) {
        node.hash_edges.push_back(prev);
      }
      prev = node.id;
      p.stages.push_back(node.id);
      commitSequential(node);
      case_.nodes.push_back(std::move(node));
    }
    case_.pipelines.push_back(std::move(p));
  }

  void loop(int l) {
    Loop loop;
    loop.id = "loop" + std::to_string(l);
    Node node;
    node.id = "b" + std::to_string(l);
    node.role = Role::kBody;
    sequentialNode(node, /*agent_ok=*/false);
    // A counter the body reads and increments is a late write by construction.
    if (case_.late_writes && rng_.chance(65)) {
      const int counter = newField('c', Merge::kLastWins, FieldType::kNumber);
      book_[static_cast<size_t>(counter)].counter = true;
      node.reads.push_back(name(counter));
      node.writes.push_back({name(counter), "count"});
      loop.until = "$." + name(counter) + " >= " + std::to_string(rng_.range(1, 4));
      if (rng_.chance(50)) {
        loop.max_iters = rng_.range(1, 5);
      }
    } else {
      loop.max_iters = rng_.range(1, 4);
    }
    loop.body = node.id;
    commitSequential(node);
    case_.nodes.push_back(std::move(node));
    case_.loops.push_back(std::move(loop));
  }

  Rng rng_;
  GenOptions options_;
  Case case_;
  std::vector<FieldBook> book_;
  std::vector<std::set<int>> anc_;
  std::map<char, int> counts_;
  int children_ = 0;
};

std::string writesArgs(const std::vector<Write>& writes) {
  std::string out = "{ ";
  bool first = true;
  for (const auto& w : writes) {
    out += (first ? "" : ", ") + w.field + ": \"" + w.mode + "\"";
    first = false;
  }
  return out + " }";
}

std::vector<std::string> fieldNames(const std::vector<Write>& writes) {
  std::vector<std::string> out;
  for (const auto& w : writes) {
    if (std::find(out.begin(), out.end(), w.field) == out.end()) {
      out.push_back(w.field);
    }
  }
  return out;
}

std::string toolImpl(Flavour flavour) {
  return flavour == Flavour::kMjs ? "./tools/step.mjs" : "./tools/crash_tool";
}

std::string toolArgs(const std::string& id, const std::vector<Write>& writes, int sleep_ms,
                     bool fail_first, const std::vector<std::string>& edges, bool sort,
                     bool quiet = false) {
  return "{ id: \"" + id + "\", w: " + writesArgs(writes) + ", s: " + std::to_string(sleep_ms) +
         ", f: " + (fail_first ? "1" : "0") + ", e: [" + joined(edges) +
         "], o: " + (sort ? "1" : "0") + (quiet ? ", q: 1" : "") + " }";
}

void schemaLines(std::ostringstream& out, const std::vector<Field>& fields) {
  for (const auto& f : fields) {
    out << "    " << f.name << ": { type: " << typeName(f.type);
    if (f.merge != Merge::kLastWins) {
      out << ", merge: " << mergeName(f.merge);
    }
    out << " }\n";
  }
}

std::string agentPrompt(const Node& node) {
  std::ostringstream out;
  out << "oe-crash agent\nid: " << node.id
      << "\nindex: {{$index}}\nitem: {{$item}}\npipeline: {{$pipeline}}\niter: {{$iter}}\n";
  for (const auto& field : node.reads) {
    out << "read " << field << ": {{" << field << "}}\n";
  }
  for (const auto& w : node.writes) {
    out << "w " << w.field << " " << w.mode << "\n";
  }
  return out.str();
}

std::string childYaml(const Node& node) {
  const ChildSpec& child = *node.child;
  std::ostringstream out;
  out << "# The nested experience of node " << node.id << " (state_scope: "
      << (child.shared ? "shared" : "isolated") << ").\n";
  out << "name: child-" << node.id << "\nversion: 0.1.0\nstate:\n  schema:\n";
  schemaLines(out, child.fields);
  out << "graph:\n  nodes:\n";
  for (const auto& cn : child.nodes) {
    out << "    - id: " << cn.id << "\n      kind: tool\n      impl: " << toolImpl(cn.flavour)
        << "\n";
    if (!cn.reads.empty()) {
      out << "      reads: [" << joined(cn.reads) << "]\n";
    }
    out << "      writes: [" << joined(fieldNames(cn.writes)) << "]\n";
    out << "      args: "
        << toolArgs(node.id + "." + cn.id, cn.writes, cn.sleep_ms, false, {}, true) << "\n";
  }
  out << "  edges:\n";
  if (child.nodes.size() < 2) {
    out << "    []\n";
  }
  for (size_t k = 1; k < child.nodes.size(); ++k) {
    out << "    - { from: " << child.nodes[k - 1].id << ", to: " << child.nodes[k].id << " }\n";
  }
  return out.str();
}

void writeFile(const std::filesystem::path& path, std::string_view text, bool executable = false) {
  std::filesystem::create_directories(path.parent_path());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      throw std::runtime_error("cannot write " + path.string());
    }
  }
  if (executable) {
    std::filesystem::permissions(path, std::filesystem::perms::owner_all |
                                           std::filesystem::perms::group_read |
                                           std::filesystem::perms::group_exec |
                                           std::filesystem::perms::others_read |
                                           std::filesystem::perms::others_exec);
  }
}

// The .mjs flavour of the crash tool; tool_main.cpp is the executable flavour. Both compute a
// node's writes from a hash of everything it was given (case_gen.hpp lists the write modes).
constexpr std::string_view kMjsTool = R"JS(// oe crash harness tool (tests/crash): a deterministic function of its input.
import fs from 'node:fs';
// exec.log and markers/: in $OE_CRASH_LOG_DIR when the harness sets it (off the experience's
// file system, which its disk-full fault fills), else in the experience folder.
const root = process.env.OE_CRASH_LOG_DIR ? process.env.OE_CRASH_LOG_DIR + '/'
  : new URL('@ROOT@', import.meta.url).pathname;
function canon(v, sort) {
  if (Array.isArray(v)) {
    const items = v.map((x) => canon(x, sort));
    if (sort) items.sort();
    return '[' + items.join(',') + ']';
  }
  if (v !== null && typeof v === 'object') {
    return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canon(v[k], sort)).join(',') + '}';
  }
  return JSON.stringify(v);
}
function fnv(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; ++i) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h >>> 0;
}
export default async function (input) {
  const { _state = {}, _edge_inputs = {}, ...args } = input;
  let ident = args.id;
  if (args.$index !== undefined) ident += '#' + args.$index;
  if (args.$pipeline !== undefined) ident += '@' + args.$pipeline;
  if (args.$iter !== undefined) ident += '~' + args.$iter;
  const edges = {};
  for (const e of args.e ?? []) if (e in _edge_inputs) edges[e] = _edge_inputs[e];
  const hash = fnv(canon({ a: args, s: _state, e: edges }, args.o === 1));
  const hex = hash.toString(16).padStart(8, '0');
  if (args.f === 1) {
    const marker = root + 'markers/' + ident;
    if (!fs.existsSync(marker)) {
      fs.mkdirSync(root + 'markers', { recursive: true });
      fs.writeFileSync(marker, '');
      throw new Error(`${ident} fails its first attempt`);
    }
  }
  if (args.s > 0) await new Promise((r) => setTimeout(r, args.s));
  const delta = {};
  for (const [field, mode] of Object.entries(args.w ?? {})) {
    if (mode === 'item') delta[field] = [`${ident}:${hex}`];
    else if (mode === 'value') delta[field] = `${ident}:${hex}`;
    else if (mode === 'number') delta[field] = hash % 100;
    else if (mode === 'const') delta[field] = `once:${field}`;
    else if (mode === 'count') delta[field] = (_state[field] ?? 0) + 1;
    else if (mode.startsWith('list:')) {
      const n = 1 + (hash % Number(mode.slice(5)));
      delta[field] = Array.from({ length: n }, (_, k) => `${ident}.${k}`);
    } else if (mode.startsWith('blob:')) delta[field] = 'x'.repeat(Number(mode.slice(5)));
  }
  fs.appendFileSync(root + 'exec.log', `${ident} ${process.ppid}\n`);
  return args.q === 1 ? { state_delta: delta } : { state_delta: delta, edge_output: { from: ident, h: hex } };
}
)JS";

}  // namespace

const Field* Case::field(const std::string& name) const {
  for (const auto& f : fields) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

const Node* Case::node(const std::string& id) const {
  for (const auto& n : nodes) {
    if (n.id == id) {
      return &n;
    }
  }
  return nullptr;
}

int Case::agentNodes() const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(),
                                        [](const Node& n) { return n.flavour == Flavour::kAgent; }));
}

std::string Case::summary() const {
  int mjs = 0;
  int exe = 0;
  int agent = 0;
  int fan = 0;
  int retry = 0;
  std::string nested;
  for (const auto& n : nodes) {
    mjs += n.flavour == Flavour::kMjs ? 1 : 0;
    exe += n.flavour == Flavour::kExe ? 1 : 0;
    agent += n.flavour == Flavour::kAgent ? 1 : 0;
    fan += n.for_each ? 1 : 0;
    retry += n.fail_first ? 1 : 0;
    if (n.child) {
      nested += std::string(nested.empty() ? "" : "+") + (n.child->shared ? "shared" : "isolated");
    }
  }
  const auto whens =
      std::count_if(edges.begin(), edges.end(), [](const Edge& e) { return e.when.has_value(); });
  std::ostringstream out;
  out << nodes.size() << " nodes (" << mjs << " mjs, " << exe << " exe, " << agent << " agent"
      << (nested.empty() ? "" : ", nested " + nested) << "), " << fan << " for_each, " << whens
      << " when, " << retry << " fail-first, " << pipelines.size() << " pipeline, "
      << loops.size() << " loop, " << (deterministic ? "deterministic" : "unordered")
      << ", concurrency " << concurrency << (first_run_no_cache ? ", first run --no-cache" : "")
      << (late_writes ? ", late writes" : "")
      << (nested_successors ? ", nested successors" : "")
      << (fan_in_edges && !deterministic ? ", fan-in edges" : "");
  return out.str();
}

Case generateCase(uint64_t seed, const GenOptions& options) {
  return Generator(seed, options).run();
}

std::string experienceYaml(const Case& c) {
  std::ostringstream out;
  out << "# Generated by the oe crash harness (tests/crash), seed " << c.seed << ": "
      << c.summary() << ".\n";
  out << "name: crash-" << c.seed << "\nversion: 0.1.0\n";
  out << "runtime: { concurrency: " << c.concurrency
      << ", deterministic: " << (c.deterministic ? "true" : "false") << " }\n";
  out << "state:\n  schema:\n";
  schemaLines(out, c.fields);
  out << "graph:\n  nodes:\n";
  for (const auto& n : c.nodes) {
    out << "    - id: " << n.id << "\n";
    switch (n.flavour) {
      case Flavour::kAgent: {
        out << "      kind: agent\n      prompt: ./prompts/" << n.id << ".md\n";
        // A small answer limit keeps each call's budget reservation small (kBudget faults).
        out << "      max_tokens: 64\n";
        out << "      schema: { type: object, required: [" << joined(fieldNames(n.writes))
            << "], properties: { ";
        bool first = true;
        for (const auto& w : n.writes) {
          const Field* f = c.field(w.field);
          out << (first ? "" : ", ") << w.field << ": { type: "
              << typeName(f != nullptr ? f->type : FieldType::kString) << " }";
          first = false;
        }
        out << " } }\n";
        break;
      }
      case Flavour::kExperience:
        out << "      kind: experience\n      impl: ./" << n.id << "\n      state_scope: "
            << (n.child->shared ? "shared" : "isolated") << "\n";
        if (!n.child->inputs.empty()) {
          out << "      inputs: " << n.child->inputs << "\n";
        }
        if (!n.child->outputs.empty()) {
          out << "      outputs: " << n.child->outputs << "\n";
        }
        break;
      default:
        out << "      kind: tool\n      impl: " << toolImpl(n.flavour) << "\n";
        out << "      args: "
            << toolArgs(n.id, n.writes, n.sleep_ms, n.fail_first, n.hash_edges, n.sort_arrays,
                        n.no_edge_output)
            << "\n";
        break;
    }
    if (!n.reads.empty()) {
      out << "      reads: [" << joined(n.reads) << "]\n";
    }
    // A shared child writes the parent's fields itself; the node declares none.
    if (!(n.child && n.child->shared)) {
      out << "      writes: [" << joined(fieldNames(n.writes)) << "]\n";
    }
    if (n.for_each) {
      out << "      for_each: { source: $." << *n.for_each;
      if (n.for_each_concurrency) {
        out << ", concurrency: " << *n.for_each_concurrency;
      }
      out << " }\n";
    }
    if (n.retry) {
      out << "      on_error: { policy: retry, attempts: 3, base_ms: 5 }\n";
    }
  }
  out << "  edges:\n";
  if (c.edges.empty()) {
    out << "    []\n";
  }
  for (const auto& e : c.edges) {
    out << "    - { from: " << e.from << ", to: " << e.to;
    if (e.when) {
      out << ", when: '" << *e.when << "'";
    }
    out << " }\n";
  }
  if (!c.pipelines.empty()) {
    out << "  pipelines:\n";
    for (const auto& p : c.pipelines) {
      out << "    - { id: " << p.id << ", items: $." << p.items << ", stages: ["
          << joined(p.stages) << "] }\n";
    }
  }
  if (!c.loops.empty()) {
    out << "  loops:\n";
    for (const auto& l : c.loops) {
      out << "    - { id: " << l.id << ", body: " << l.body;
      if (l.until) {
        out << ", until: '" << *l.until << "'";
      }
      if (l.max_iters) {
        out << ", max_iters: " << *l.max_iters;
      }
      out << " }\n";
    }
  }
  return out.str();
}

std::string toolWrapper(const std::filesystem::path& tool_binary, int depth) {
  // The folder of exec.log and markers/, from where the wrapper is (tools/ of the experience).
  std::string root = "${0%/*}/..";
  for (int d = 1; d < depth; ++d) {
    root += "/..";
  }
  return "#!/bin/sh\nexec '" + tool_binary.string() + "' \"" + root + "\"\n";
}

std::string mjsTool(int depth) {
  std::string root;
  for (int d = 0; d < depth; ++d) {
    root += "../";
  }
  std::string text(kMjsTool);
  text.replace(text.find("@ROOT@"), 6, root);
  return text;
}

void writeCase(const Case& c, const std::filesystem::path& dir,
               const std::filesystem::path& tool_binary) {
  writeFile(dir / "experience.yaml", experienceYaml(c));
  // A nested experience's tools log to the parent's exec.log: a file that changes in the child's
  // folder would change the experience node's own cache key (its impl folder's files count).
  auto tools = [&](const std::filesystem::path& root, int depth) {
    writeFile(root / "tools" / "step.mjs", mjsTool(depth));
    writeFile(root / "tools" / "crash_tool", toolWrapper(tool_binary, depth), /*executable=*/true);
  };
  tools(dir, 1);
  for (const auto& n : c.nodes) {
    if (n.flavour == Flavour::kAgent) {
      writeFile(dir / "prompts" / (n.id + ".md"), agentPrompt(n));
    }
    if (n.child) {
      writeFile(dir / n.id / "experience.yaml", childYaml(n));
      tools(dir / n.id, 2);
    }
  }
}

}  // namespace oe::crash
