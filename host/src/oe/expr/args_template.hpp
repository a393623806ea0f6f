// Node `args` with `$.path` leaves (reference §2.2), compiled once per node and resolved against
// the state each time the node is dispatched.
#pragma once

#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/expr/state_path.hpp"
#include "oe/expr/state_reader.hpp"

namespace oe::expr {

class ArgsTemplate {
 public:
  ArgsTemplate() = default;

  // Finds every string leaf that is a whole `$.path` (recursively through arrays and objects).
  static ArgsTemplate compile(const Json& args);
  // The same over `args` without a copy of it: `args` must outlive the template (a run's
  // templates view the node specs, which outlive the run).
  static ArgsTemplate view(const Json& args);

  // A fresh value with every path leaf replaced by a deep copy of the state value. An object
  // member whose path is undefined is omitted, an array element becomes null (JSON.stringify
  // semantics); a top-level path that is undefined gives null.
  [[nodiscard]] Json resolve(const StateReader& state) const;

  // No path anywhere: resolve() always returns the same value.
  [[nodiscard]] bool isConstant() const { return leaves_.empty(); }
  [[nodiscard]] const Json& source() const { return viewed_ != nullptr ? *viewed_ : constant_; }

 private:
  struct Step {
    std::string key;  // object member when !is_index
    size_t index = 0;
    bool is_index = false;
  };
  struct Leaf {
    std::vector<Step> steps;  // from the root to the leaf; empty = the root itself
    StatePath path;
  };

  static void collect(const Json& value, std::vector<Step>& steps, std::vector<Leaf>& leaves);

  Json constant_;                  // the args, owned (compile)
  const Json* viewed_ = nullptr;   // or viewed (view)
  std::vector<Leaf> leaves_;
};

}  // namespace oe::expr
