// The confinement's JSON form: written by whoever builds a node's policy, read by oe-sandbox.
#include "oe/sandbox/confinement.hpp"

#include <initializer_list>
#include <string_view>

namespace oe::sandbox {
namespace {

Error fieldError(const std::string& field, const std::string& what) {
  return makeError("confinement." + field + ": " + what);
}

// An error naming the first key of `object` that is not in `known`.
std::optional<Error> unknownKey(const Json& object, const std::string& field,
                                std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (const auto k : known) {
      found = found || key == k;
    }
    if (!found) {
      std::string list;
      for (const auto k : known) {
        list += list.empty() ? "" : ", ";
        list += k;
      }
      const std::string where = field.empty() ? key : field + "." + key;
      return fieldError(where, "unknown key; expected one of " + list);
    }
  }
  return std::nullopt;
}

Result<std::vector<std::string>> readPaths(const Json& parent, const std::string& field,
                                           std::string_view key, bool allow_tmp) {
  std::vector<std::string> out;
  const auto it = parent.find(key);
  if (it == parent.end()) {
    return out;
  }
  const std::string name = field + "." + std::string(key);
  if (!it->is_array()) {
    return fieldError(name, "expected an array of absolute paths");
  }
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& entry = (*it)[i];
    const std::string at = name + "[" + std::to_string(i) + "]";
    if (!entry.is_string()) {
      return fieldError(at, "expected a string (an absolute path)");
    }
    auto path = entry.get<std::string>();
    const bool is_tmp = allow_tmp && path == kTmpPlaceholder;
    if (!is_tmp && (path.empty() || path.front() != '/')) {
      return fieldError(at, "\"" + path + "\" is not an absolute path" +
                                (allow_tmp ? " (nor \"$TMP\")" : ""));
    }
    out.push_back(std::move(path));
  }
  return out;
}

Result<std::optional<std::uint64_t>> readLimit(const Json& limits, std::string_view key) {
  const auto it = limits.find(key);
  if (it == limits.end()) {
    return std::optional<std::uint64_t>{};
  }
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0) {
    return fieldError("limits." + std::string(key), "expected a positive integer");
  }
  return std::optional<std::uint64_t>{it->get<std::uint64_t>()};
}

}  // namespace

std::string_view networkModeName(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kNone:
      return "none";
    case NetworkMode::kLoopback:
      return "loopback";
    case NetworkMode::kProxy:
      return "proxy";
    case NetworkMode::kFull:
    default:
      return "full";
  }
}

Json toJson(const Confinement& c) {
  Json out = Json::object();
  out["enforce"] = c.enforce == Enforce::kRequired ? "required" : "best_effort";
  if (c.fs) {
    out["fs"] = {{"read", c.fs->read}, {"write", c.fs->write}, {"read_only", c.fs->read_only}};
  }
  Json network = {{"mode", networkModeName(c.network.mode)}};
  if (!c.network.proxy_socket.empty()) {
    network["proxy_socket"] = c.network.proxy_socket;
  }
  out["network"] = std::move(network);
  if (c.env) {
    out["env"] = {{"keep", c.env->keep}, {"set", c.env->set}};
  }
  Json limits = Json::object();
  const auto put = [&limits](const char* key, const std::optional<std::uint64_t>& v) {
    if (v) {
      limits[key] = *v;
    }
  };
  put("cpu_seconds", c.limits.cpu_seconds);
  put("memory_mb", c.limits.memory_mb);
  put("processes", c.limits.processes);
  put("file_size_mb", c.limits.file_size_mb);
  put("open_files", c.limits.open_files);
  if (!limits.empty()) {
    out["limits"] = std::move(limits);
  }
  return out;
}

Result<Confinement> fromJson(const Json& json) {
  if (!json.is_object()) {
    return makeError("confinement: expected a JSON object");
  }
  if (auto e = unknownKey(json, "", {"enforce", "fs", "network", "env", "limits"})) {
    return *e;
  }
  Confinement c;
  const auto enforce = json.find("enforce");
  if (enforce == json.end()) {
    return fieldError("enforce", "missing; say \"required\" or \"best_effort\"");
  }
  if (*enforce == "required") {
    c.enforce = Enforce::kRequired;
  } else if (*enforce == "best_effort") {
    c.enforce = Enforce::kBestEffort;
  } else {
    return fieldError("enforce", "expected \"required\" or \"best_effort\", got " + enforce->dump());
  }

  if (const auto fs = json.find("fs"); fs != json.end()) {
    if (!fs->is_object()) {
      return fieldError("fs", "expected an object with read, write, read_only");
    }
    if (auto e = unknownKey(*fs, "fs", {"read", "write", "read_only"})) {
      return *e;
    }
    FsRules rules;
    auto read = readPaths(*fs, "fs", "read", false);
    if (!read) {
      return std::move(read).error();
    }
    auto write = readPaths(*fs, "fs", "write", true);
    if (!write) {
      return std::move(write).error();
    }
    auto read_only = readPaths(*fs, "fs", "read_only", false);
    if (!read_only) {
      return std::move(read_only).error();
    }
    rules.read = std::move(read).value();
    rules.write = std::move(write).value();
    rules.read_only = std::move(read_only).value();
    c.fs = std::move(rules);
  }

  if (const auto net = json.find("network"); net != json.end()) {
    if (!net->is_object()) {
      return fieldError("network", "expected an object with mode (and proxy_socket)");
    }
    if (auto e = unknownKey(*net, "network", {"mode", "proxy_socket"})) {
      return *e;
    }
    const std::string mode = stringField(*net, "mode");
    if (mode == "full") {
      c.network.mode = NetworkMode::kFull;
    } else if (mode == "none") {
      c.network.mode = NetworkMode::kNone;
    } else if (mode == "loopback") {
      c.network.mode = NetworkMode::kLoopback;
    } else if (mode == "proxy") {
      c.network.mode = NetworkMode::kProxy;
    } else {
      return fieldError("network.mode",
                        "expected \"none\", \"loopback\", \"full\" or \"proxy\", got " +
                            (net->contains("mode") ? (*net)["mode"].dump() : "nothing"));
    }
    if (const auto sock = net->find("proxy_socket"); sock != net->end()) {
      if (!sock->is_string() || sock->get<std::string>().empty() ||
          sock->get<std::string>().front() != '/') {
        return fieldError("network.proxy_socket", "expected the absolute path of a Unix socket");
      }
      c.network.proxy_socket = sock->get<std::string>();
    }
    if (c.network.mode == NetworkMode::kProxy && c.network.proxy_socket.empty()) {
      return fieldError("network.proxy_socket", "required when mode is \"proxy\"");
    }
  }

  if (const auto env = json.find("env"); env != json.end()) {
    if (!env->is_object()) {
      return fieldError("env", "expected an object with keep and set");
    }
    if (auto e = unknownKey(*env, "env", {"keep", "set"})) {
      return *e;
    }
    EnvRules rules;
    if (const auto keep = env->find("keep"); keep != env->end()) {
      if (!keep->is_array()) {
        return fieldError("env.keep", "expected an array of variable names");
      }
      for (std::size_t i = 0; i < keep->size(); ++i) {
        const Json& name = (*keep)[i];
        if (!name.is_string() || name.get<std::string>().empty() ||
            name.get<std::string>().find('=') != std::string::npos) {
          return fieldError("env.keep[" + std::to_string(i) + "]",
                            "expected a variable name (a non-empty string without '=')");
        }
        rules.keep.push_back(name.get<std::string>());
      }
    }
    if (const auto set = env->find("set"); set != env->end()) {
      if (!set->is_object()) {
        return fieldError("env.set", "expected an object of NAME: \"value\"");
      }
      for (const auto& [name, value] : set->items()) {
        if (name.empty() || name.find('=') != std::string::npos || !value.is_string()) {
          return fieldError("env.set." + name,
                            "expected a string value under a name without '='");
        }
        rules.set[name] = value.get<std::string>();
      }
    }
    c.env = std::move(rules);
  }

  if (const auto limits = json.find("limits"); limits != json.end()) {
    if (!limits->is_object()) {
      return fieldError("limits", "expected an object of positive integers");
    }
    if (auto e = unknownKey(*limits, "limits", {"cpu_seconds", "memory_mb", "processes",
                                                 "file_size_mb", "open_files"})) {
      return *e;
    }
    struct Slot {
      const char* key;
      std::optional<std::uint64_t>* out;
    };
    for (const Slot slot : {Slot{"cpu_seconds", &c.limits.cpu_seconds},
                            Slot{"memory_mb", &c.limits.memory_mb},
                            Slot{"processes", &c.limits.processes},
                            Slot{"file_size_mb", &c.limits.file_size_mb},
                            Slot{"open_files", &c.limits.open_files}}) {
      auto v = readLimit(*limits, slot.key);
      if (!v) {
        return std::move(v).error();
      }
      *slot.out = *v;
    }
  }
  return c;
}

}  // namespace oe::sandbox
