// `$.path` resolution inside node args; see args_template.hpp.
#include "oe/expr/args_template.hpp"

namespace oe::expr {

void ArgsTemplate::collect(const Json& value, std::vector<Step>& steps, std::vector<Leaf>& leaves) {
  if (value.is_string()) {
    if (auto path = StatePath::parse(value.get_ref<const std::string&>())) {
      leaves.push_back(Leaf{steps, std::move(*path)});
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      steps.push_back(Step{{}, i, true});
      collect(value[i], steps, leaves);
      steps.pop_back();
    }
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      steps.push_back(Step{it.key(), 0, false});
      collect(it.value(), steps, leaves);
      steps.pop_back();
    }
  }
}

ArgsTemplate ArgsTemplate::compile(const Json& args) {
  ArgsTemplate t;
  t.constant_ = args;
  std::vector<Step> steps;
  collect(t.constant_, steps, t.leaves_);
  return t;
}

ArgsTemplate ArgsTemplate::view(const Json& args) {
  ArgsTemplate t;
  t.viewed_ = &args;
  std::vector<Step> steps;
  collect(args, steps, t.leaves_);
  return t;
}

Json ArgsTemplate::resolve(const StateReader& state) const {
  if (leaves_.empty()) {
    return source();
  }
  Json out = source();
  for (const Leaf& leaf : leaves_) {
    std::optional<Json> value = leaf.path.resolve(state);
    if (leaf.steps.empty()) {
      out = value ? std::move(*value) : Json(nullptr);
      continue;
    }
    Json* parent = &out;
    for (size_t i = 0; i + 1 < leaf.steps.size(); ++i) {
      const Step& s = leaf.steps[i];
      parent = s.is_index ? &(*parent)[s.index] : &(*parent)[s.key];
    }
    const Step& last = leaf.steps.back();
    if (last.is_index) {
      (*parent)[last.index] = value ? std::move(*value) : Json(nullptr);
    } else if (value) {
      (*parent)[last.key] = std::move(*value);
    } else {
      parent->erase(last.key);
    }
  }
  return out;
}

}  // namespace oe::expr
