#include "oe/spec/plugin_isolation.hpp"

#include <yaml-cpp/yaml.h>

namespace oe::spec {

namespace {

// The lines of the top-level `plugins:` key: its own line and the indented, blank or comment
// lines after it, up to the next top-level key or document marker. Empty when there is none.
std::string pluginsBlock(std::string_view text) {
  std::string block;
  bool inside = false;
  size_t start = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    start = 3;  // a UTF-8 byte order mark
  }
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    const bool top_level = !line.empty() && line.front() != ' ' && line.front() != '\t' &&
                           line.front() != '#' && line.front() != '\r';
    if (top_level) {
      if (inside) {
        break;
      }
      inside = line.substr(0, 8) == "plugins:";
    }
    if (inside) {
      block.append(line).push_back('\n');
    }
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  return block;
}

bool flowDocument(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) {
        return false;
      }
    } else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      return c == '{';
    }
  }
  return false;
}

}  // namespace

std::string PluginIsolationSpec::forPlugin(std::string_view id) const {
  if (auto it = by_id.find(id); it != by_id.end()) {
    return it->second;
  }
  return all;
}

PluginIsolationSpec pluginIsolationFrom(const Json& plugins) {
  PluginIsolationSpec spec;
  if (!plugins.is_object()) {
    return spec;
  }
  const auto isolation = plugins.find("isolation");
  if (isolation == plugins.end()) {
    return spec;
  }
  if (isolation->is_string()) {
    spec.all = isolation->get<std::string>();
  } else if (isolation->is_object()) {
    for (const auto& [id, mode] : isolation->items()) {
      if (mode.is_string()) {
        spec.by_id[id] = mode.get<std::string>();
      }
    }
  }
  return spec;
}

PluginIsolationSpec scanPluginIsolation(std::string_view yaml_text) {
  PluginIsolationSpec spec;
  try {
    const YAML::Node root =
        YAML::Load(flowDocument(yaml_text) ? std::string(yaml_text) : pluginsBlock(yaml_text));
    if (!root.IsMap()) {
      return spec;
    }
    const YAML::Node isolation = root["plugins"]["isolation"];
    if (!isolation) {
      return spec;
    }
    if (isolation.IsScalar()) {
      spec.all = isolation.as<std::string>();
    } else if (isolation.IsMap()) {
      for (const auto& entry : isolation) {
        if (entry.second.IsScalar()) {
          spec.by_id[entry.first.as<std::string>()] = entry.second.as<std::string>();
        }
      }
    }
  } catch (const YAML::Exception&) {
    return PluginIsolationSpec{};  // the full parse names the error and its line
  }
  return spec;
}

}  // namespace oe::spec
