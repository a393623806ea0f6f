// The experience kind's fields and mappings (mapping.hpp).
#include "mapping.hpp"

#include <algorithm>
#include <charconv>

namespace oe::experience {

std::optional<Path> parsePath(std::string_view text) {
  if (text == "$") {
    return Path{std::string(text), {}};
  }
  if (!text.starts_with("$.") || text.size() == 2) {
    return std::nullopt;
  }
  Path path{std::string(text), {}};
  std::string_view rest = text.substr(2);
  while (true) {
    const size_t dot = rest.find('.');
    const std::string_view segment = rest.substr(0, dot);
    if (segment.empty()) {
      return std::nullopt;  // "$.a..b" or a trailing dot
    }
    path.segments.emplace_back(segment);
    if (dot == std::string_view::npos) {
      return path;
    }
    rest.remove_prefix(dot + 1);
  }
}

std::optional<Json> lookUp(const Json& root, const Path& path) {
  const Json* at = &root;
  for (const std::string& segment : path.segments) {
    if (at->is_object()) {
      auto it = at->find(segment);
      if (it == at->end()) {
        return std::nullopt;
      }
      at = &*it;
    } else if (at->is_array()) {
      size_t index = 0;
      const char* end = segment.data() + segment.size();
      auto [ptr, ec] = std::from_chars(segment.data(), end, index);
      if (ec != std::errc() || ptr != end || index >= at->size()) {
        return std::nullopt;
      }
      at = &(*at)[index];
    } else {
      return std::nullopt;
    }
  }
  return *at;
}

namespace {

std::vector<std::string> stringList(const Json& node, const char* key) {
  std::vector<std::string> out;
  if (auto it = node.find(key); it != node.end() && it->is_array()) {
    for (const Json& item : *it) {
      if (item.is_string()) {
        out.push_back(item.get<std::string>());
      }
    }
  }
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace

SpecOrError readNodeSpec(const Json& node) {
  NodeSpec spec;
  spec.id = node.value("id", "");
  const std::string who = "Experience \"" + spec.id + "\"";
  auto impl = node.find("impl");
  if (impl == node.end() || !impl->is_string() || impl->get<std::string>().empty()) {
    return {std::nullopt, who +
                              " requires impl: the path of the nested experience.yaml (or its "
                              "folder), relative to this experience"};
  }
  spec.impl = impl->get<std::string>();
  if (auto scope = node.find("state_scope"); scope != node.end()) {
    if (!scope->is_string() || (*scope != "isolated" && *scope != "shared")) {
      return {std::nullopt, who + ": state_scope must be \"isolated\" (the default) or \"shared\""};
    }
    spec.scope = scope->get<std::string>();
  }
  const std::vector<std::string> reads = stringList(node, "reads");
  const std::vector<std::string> writes = stringList(node, "writes");
  if (auto inputs = node.find("inputs"); inputs != node.end()) {
    if (!inputs->is_object()) {
      return {std::nullopt, who +
                                ": inputs must map the child's args to $.paths of this "
                                "experience's state (or to literal values)"};
    }
    for (const auto& [name, value] : inputs->items()) {
      if (value.is_string() && value.get<std::string>().starts_with("$")) {
        auto path = parsePath(value.get<std::string>());
        if (!path || path->segments.empty()) {
          return {std::nullopt, who + ": inputs." + name + ": \"" + value.get<std::string>() +
                                    "\" is not a $.path into a state field (write $.field or "
                                    "$.field.key)"};
        }
        if (!contains(reads, path->segments.front())) {
          return {std::nullopt, who + ": inputs." + name + " reads $." + path->segments.front() +
                                    ", which is not in the node's reads: add \"" +
                                    path->segments.front() + "\" to reads"};
        }
      }
      spec.inputs.emplace_back(name, value);
    }
  }
  if (auto outputs = node.find("outputs"); outputs != node.end()) {
    if (!outputs->is_object()) {
      return {std::nullopt, who +
                                ": outputs must map fields of this node's writes to $.paths of "
                                "the child's final state"};
    }
    for (const auto& [field, value] : outputs->items()) {
      std::optional<Path> path =
          value.is_string() ? parsePath(value.get<std::string>()) : std::nullopt;
      if (!path) {
        return {std::nullopt, who + ": outputs." + field +
                                  " must be a $.path into the child's "
                                  "final state, such as \"$.summary\""};
      }
      if (!contains(writes, field)) {
        return {std::nullopt, who + ": outputs." + field + " writes \"" + field +
                                  "\", which is not in the node's writes: add it to writes"};
      }
      spec.outputs.emplace_back(field, std::move(*path));
    }
  }
  return {std::move(spec), {}};
}

Json childArgs(const NodeSpec& spec, const Json& bundle_args, const Json& state_view) {
  Json args = bundle_args.is_object() ? bundle_args : Json::object();
  for (const auto& [name, value] : spec.inputs) {
    if (!value.is_string() || !value.get<std::string>().starts_with("$")) {
      args[name] = value;
      continue;
    }
    if (auto found = lookUp(state_view, *parsePath(value.get<std::string>()))) {
      args[name] = std::move(*found);
    }
  }
  return args;
}

Json outputDelta(const NodeSpec& spec, const Json& final_state, std::vector<std::string>& missing) {
  Json delta = Json::object();
  for (const auto& [field, path] : spec.outputs) {
    if (auto found = lookUp(final_state, path)) {
      delta[field] = std::move(*found);
    } else {
      missing.push_back(field + " (" + path.text + ")");
    }
  }
  return delta;
}

}  // namespace oe::experience
