// compare.hpp: state and execution comparisons, with diagnoses a reader can act on.
#include "crash/compare.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

namespace oe::crash {
namespace {

std::string clip(const Json& value, size_t limit = 160) {
  std::string text = value.dump();
  if (text.size() > limit) {
    text = text.substr(0, limit) + "...(" + std::to_string(text.size()) + " bytes)";
  }
  return text;
}

// "n3#2:1a2b3c4d" -> "n3#2" (items and values written by the generated nodes).
std::string identityOf(const Json& item) {
  if (!item.is_string()) {
    return item.dump();
  }
  const std::string text = item.get<std::string>();
  const size_t colon = text.rfind(':');
  return colon == std::string::npos ? text : text.substr(0, colon);
}

std::map<std::string, int> countBy(const Json& list, bool by_identity) {
  std::map<std::string, int> out;
  if (list.is_array()) {
    for (const auto& item : list) {
      ++out[by_identity ? identityOf(item) : item.dump()];
    }
  }
  return out;
}

std::string listOf(const std::vector<std::string>& items, size_t limit = 12) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < limit; ++i) {
    out += (i == 0 ? "" : ", ") + items[i];
  }
  if (items.size() > limit) {
    out += ", ... (" + std::to_string(items.size()) + " in all)";
  }
  return out;
}

void compareAppend(const std::string& field, const Json& expected, const Json& got,
                   bool ordered, std::vector<std::string>& out) {
  const auto want = countBy(expected, true);
  const auto have = countBy(got, true);
  std::vector<std::string> twice;
  std::vector<std::string> lost;
  std::vector<std::string> extra;
  for (const auto& [ident, n] : have) {
    const int expected_n = want.count(ident) != 0 ? want.at(ident) : 0;
    if (expected_n == 0) {
      extra.push_back(ident);
    } else if (n > expected_n) {
      twice.push_back(ident + " x" + std::to_string(n));
    }
  }
  for (const auto& [ident, n] : want) {
    const int got_n = have.count(ident) != 0 ? have.at(ident) : 0;
    if (got_n < n) {
      lost.push_back(ident);
    }
  }
  const std::string where = "field " + field + " (array_append): ";
  if (!twice.empty()) {
    out.push_back(where + "applied more than once: " + listOf(twice));
  }
  if (!lost.empty()) {
    out.push_back(where + "lost: " + listOf(lost));
  }
  if (!extra.empty()) {
    out.push_back(where + "written by calls the uninterrupted run never made: " + listOf(extra));
  }
  if (!twice.empty() || !lost.empty() || !extra.empty()) {
    return;
  }
  if (countBy(expected, false) != countBy(got, false)) {
    std::vector<std::string> changed;
    const auto want_items = countBy(expected, false);
    for (const auto& [item, n] : countBy(got, false)) {
      if (want_items.count(item) == 0) {
        changed.push_back(item);
      }
    }
    out.push_back(where + "the same writers, items computed from other inputs: " +
                  listOf(changed, 6));
    return;
  }
  if (ordered && expected != got) {
    out.push_back(where + "the same items in another order (runtime.deterministic): got " +
                  clip(got) + ", expected " + clip(expected));
  }
}

}  // namespace

std::vector<std::string> compareStates(const Case& c, const Json& oracle, const Json& faulted) {
  std::vector<std::string> out;
  std::vector<std::string> names;
  for (const auto& [name, value] : oracle.items()) {
    names.push_back(name);
  }
  for (const auto& [name, value] : faulted.items()) {
    if (!oracle.contains(name)) {
      names.push_back(name);
    }
  }
  for (const auto& name : names) {
    const Field* field = c.field(name);
    if (!faulted.contains(name)) {
      out.push_back("field " + name + ": missing, expected " + clip(oracle[name]));
      continue;
    }
    if (!oracle.contains(name)) {
      out.push_back("field " + name + ": " + clip(faulted[name]) +
                    ", which the uninterrupted run never wrote");
      continue;
    }
    const Json& expected = oracle[name];
    const Json& got = faulted[name];
    if (field != nullptr && field->merge == Merge::kArrayAppend) {
      compareAppend(name, expected, got, field->ordered, out);
      continue;
    }
    if (expected == got) {
      continue;
    }
    std::string line = "field " + name + ": " + clip(got) + " instead of " + clip(expected);
    if (expected.is_string() && got.is_string()) {
      const std::string want = identityOf(expected);
      const std::string have = identityOf(got);
      if (want == have) {
        line += " (the same writer, from other inputs)";
      } else {
        // Which writer comes first in the definition: an earlier one means a rollback.
        auto position = [&](const std::string& ident) {
          const std::string node = ident.substr(0, ident.find_first_of("#@~."));
          for (size_t i = 0; i < c.nodes.size(); ++i) {
            if (c.nodes[i].id == node) {
              return static_cast<int>(i);
            }
          }
          return -1;
        };
        const int w = position(want);
        const int h = position(have);
        if (h >= 0 && w >= 0 && h < w) {
          line += " (an earlier writer's value: rolled back)";
        } else if (h >= 0 && w >= 0) {
          line += " (another writer's value)";
        }
      }
    }
    out.push_back(line);
  }
  return out;
}

namespace {

// Calls `line` for every line of every exec.log under `dir` (.openexpertise excluded).
void forEachExecLine(const std::filesystem::path& dir,
                     const std::function<void(const std::string&)>& line_of) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      break;
    }
    if (it->is_directory() && it->path().filename() == ".openexpertise") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename() == "exec.log") {
      std::ifstream in(it->path());
      std::string line;
      while (std::getline(in, line)) {
        if (!line.empty()) {
          line_of(line);
        }
      }
    }
  }
}

}  // namespace

std::map<std::string, int> readExecutions(const std::filesystem::path& dir,
                                          const std::map<std::string, int>& agent_calls) {
  std::map<std::string, int> out = agent_calls;
  forEachExecLine(dir, [&](const std::string& line) { ++out[line.substr(0, line.find(' '))]; });
  return out;
}

std::map<std::string, std::vector<long>> executionsByProcess(const std::filesystem::path& dir) {
  std::map<std::string, std::vector<long>> out;
  forEachExecLine(dir, [&](const std::string& line) {
    const size_t space = line.find(' ');
    long pid = 0;
    if (space != std::string::npos) {
      pid = std::strtol(line.c_str() + space + 1, nullptr, 10);
    }
    out[line.substr(0, space)].push_back(pid);
  });
  return out;
}

ExecutionCheck checkExecutions(const std::map<std::string, int>& oracle,
                               const std::map<std::string, int>& faulted, int extra) {
  ExecutionCheck check;
  std::vector<std::string> never;
  std::vector<std::string> too_often;
  std::vector<std::string> unexpected;
  for (const auto& [ident, n] : oracle) {
    const int got = faulted.count(ident) != 0 ? faulted.at(ident) : 0;
    if (got == 0) {
      never.push_back(ident);
    } else if (got > n + extra) {
      too_often.push_back(ident + " x" + std::to_string(got));
    }
    check.re_executions += std::max(0, got - n);
  }
  for (const auto& [ident, n] : faulted) {
    if (oracle.count(ident) == 0) {
      unexpected.push_back(ident + " x" + std::to_string(n));
    }
  }
  if (!never.empty()) {
    check.problems.push_back("executions: never executed (the state cannot hold their writes): " +
                             listOf(never));
  }
  if (!too_often.empty()) {
    check.problems.push_back("executions: more than the faults explain (at most " +
                             std::to_string(extra) + " more than once): " + listOf(too_often));
  }
  if (!unexpected.empty()) {
    check.problems.push_back("executions: calls the uninterrupted run never made: " +
                             listOf(unexpected));
  }
  return check;
}

}  // namespace oe::crash
