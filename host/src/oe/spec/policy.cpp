// The policy model, narrowing and the policy in force; see policy.hpp.
#include "oe/spec/policy.hpp"

#include <algorithm>
#include <cctype>

namespace oe::spec {

namespace {

std::optional<std::vector<std::string>> stringList(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) {
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& item : *it) {
    if (item.is_string()) {
      out.push_back(item.get<std::string>());
    }
  }
  return out;
}

const char* networkName(NetworkRule rule) {
  switch (rule) {
    case NetworkRule::kNone:
      return "none";
    case NetworkRule::kLoopback:
      return "loopback";
    case NetworkRule::kAllow:
      return "an allow-list";
    case NetworkRule::kFull:
    default:
      return "full";
  }
}

// True when `path` is `root` or below it (both absolute and lexically normal).
bool within(const std::string& path, const std::string& root) {
  if (root == "/") {
    return true;
  }
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

struct AllowParts {
  std::string host;  // lower case, no trailing dot; "*.suffix" for a wildcard
  std::optional<std::string> port;
};

AllowParts splitAllow(const std::string& entry) {
  AllowParts parts;
  std::string host = entry;
  if (auto colon = entry.rfind(':'); colon != std::string::npos) {
    parts.port = entry.substr(colon + 1);
    host = entry.substr(0, colon);
  }
  if (!host.empty() && host.back() == '.') {
    host.pop_back();
  }
  parts.host = lower(host);
  return parts;
}

// The ports a rule admits: its own, or 443 and 80 when it names none.
std::vector<std::string> portsOf(const AllowParts& parts) {
  if (parts.port) {
    return {*parts.port};
  }
  return {"443", "80"};
}

bool hostCovers(const std::string& outer, const std::string& inner) {
  if (outer == inner) {
    return true;
  }
  if (outer.rfind("*.", 0) != 0) {
    return false;
  }
  const std::string suffix = outer.substr(1);  // ".github.com"
  // "*.a.com" covers "x.a.com" and "*.x.a.com", never "a.com".
  const std::string bare = inner.rfind("*.", 0) == 0 ? inner.substr(1) : inner;
  return bare.size() > suffix.size() &&
         bare.compare(bare.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <class T>
void narrowList(const std::optional<std::vector<std::string>>& node,
                const std::optional<std::vector<std::string>>& experience, const char* where,
                T&& problem, std::vector<PolicyWidening>& out) {
  if (!experience || !node) {
    return;
  }
  for (size_t i = 0; i < node->size(); ++i) {
    if (std::string message = problem((*node)[i]); !message.empty()) {
      out.push_back({std::string(where) + "/" + std::to_string(i), std::move(message)});
    }
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out.empty() ? "nothing" : out;
}

}  // namespace

PolicySpec policyFrom(const Json& raw) {
  PolicySpec policy;
  if (!raw.is_object()) {
    return policy;
  }
  if (auto enforce = raw.find("enforce"); enforce != raw.end() && enforce->is_string()) {
    policy.required = enforce->get<std::string>() != "best_effort";
  }
  if (auto fs = raw.find("fs"); fs != raw.end() && fs->is_object()) {
    policy.fs_read = stringList(*fs, "read");
    policy.fs_write = stringList(*fs, "write");
  }
  if (auto network = raw.find("network"); network != raw.end()) {
    if (network->is_string()) {
      const std::string mode = network->get<std::string>();
      policy.network = mode == "none"       ? NetworkRule::kNone
                       : mode == "loopback" ? NetworkRule::kLoopback
                                            : NetworkRule::kFull;
    } else if (network->is_object()) {
      policy.network = NetworkRule::kAllow;
      policy.allow = stringList(*network, "allow").value_or(std::vector<std::string>{});
    }
  }
  policy.env = stringList(raw, "env");
  if (auto limits = raw.find("limits"); limits != raw.end() && limits->is_object()) {
    for (const char* key : kPolicyLimits) {
      if (auto value = limits->find(key); value != limits->end() && value->is_number_integer()) {
        policy.limits.emplace(key, value->get<int64_t>());
      }
    }
  }
  return policy;
}

Json policyJson(const PolicySpec& policy) {
  Json out = Json::object();
  if (policy.required) {
    out["enforce"] = *policy.required ? "required" : "best_effort";
  }
  if (policy.fs_read || policy.fs_write) {
    Json fs = Json::object();
    if (policy.fs_read) {
      fs["read"] = *policy.fs_read;
    }
    if (policy.fs_write) {
      fs["write"] = *policy.fs_write;
    }
    out["fs"] = std::move(fs);
  }
  if (policy.network) {
    if (*policy.network == NetworkRule::kAllow) {
      out["network"] = Json{{"allow", policy.allow}};
    } else {
      out["network"] = networkName(*policy.network);
    }
  }
  if (policy.env) {
    out["env"] = *policy.env;
  }
  if (!policy.limits.empty()) {
    Json limits = Json::object();
    for (const auto& [key, value] : policy.limits) {
      limits[key] = value;
    }
    out["limits"] = std::move(limits);
  }
  return out;
}

std::optional<PolicySpec> effectivePolicy(const PolicySpec* experience, const PolicySpec* node) {
  if (experience == nullptr && node == nullptr) {
    return std::nullopt;
  }
  if (node == nullptr) {
    return *experience;
  }
  if (experience == nullptr) {
    return *node;
  }
  PolicySpec out = *experience;
  if (node->required) {
    out.required = node->required;
  }
  if (node->fs_read) {
    out.fs_read = node->fs_read;
  }
  if (node->fs_write) {
    out.fs_write = node->fs_write;
  }
  if (node->network) {
    out.network = node->network;
    out.allow = node->allow;
  }
  if (node->env) {
    out.env = node->env;
  }
  for (const auto& [key, value] : node->limits) {
    out.limits[key] = value;
  }
  return out;
}

std::string policyPath(const std::string& written, const std::filesystem::path& dir) {
  if (written == "$TMP") {
    return written;
  }
  std::filesystem::path path(written);
  if (path.is_relative()) {
    path = dir / path;
  }
  std::string normal = path.lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') {
    normal.pop_back();
  }
  return normal;
}

std::string allowEntryProblem(const std::string& entry) {
  const AllowParts parts = splitAllow(entry);
  if (parts.port) {
    const std::string& port = *parts.port;
    const bool digits =
        !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
      return "\"" + entry + "\" has port \"" + port + "\"; write host:port with a port 1-65535";
    }
  }
  std::string host = parts.host;
  if (host.rfind("*.", 0) == 0) {
    host = host.substr(2);
  }
  const bool valid = !host.empty() && host.size() <= 253 && host.find('*') == std::string::npos &&
                     std::all_of(host.begin(), host.end(), [](unsigned char c) {
                       return std::isalnum(c) != 0 || c == '-' || c == '.';
                     });
  if (!valid) {
    return "\"" + entry +
           "\" is not a host name; write \"api.example.com\", \"api.example.com:443\" or "
           "\"*.example.com\" (a wildcard only as the first label)";
  }
  return "";
}

bool allowCovers(const std::string& outer, const std::string& inner) {
  const AllowParts o = splitAllow(outer);
  const AllowParts i = splitAllow(inner);
  if (!hostCovers(o.host, i.host)) {
    return false;
  }
  const std::vector<std::string> outer_ports = portsOf(o);
  for (const auto& port : portsOf(i)) {
    if (std::find(outer_ports.begin(), outer_ports.end(), port) == outer_ports.end()) {
      return false;
    }
  }
  return true;
}

std::vector<PolicyWidening> widerThan(const PolicySpec& node, const PolicySpec& experience,
                                      const std::filesystem::path& dir) {
  std::vector<PolicyWidening> out;
  if (node.required && !*node.required && experience.required.value_or(true)) {
    out.push_back({"enforce",
                   "enforce: best_effort is wider than the experience's enforce: required; "
                   "remove it from the node"});
  }
  auto inside = [&](const std::optional<std::vector<std::string>>& roots, const char* what) {
    return [&roots, &dir, what](const std::string& written) -> std::string {
      const std::string path = policyPath(written, dir);
      for (const auto& root : *roots) {
        if (policyPath(root, dir) == path ||
            (path != "$TMP" && within(path, policyPath(root, dir)))) {
          return "";
        }
      }
      return "\"" + written + "\" is outside the experience's fs." + what + " (" + joined(*roots) +
             "); a node's policy can only narrow the experience's";
    };
  };
  narrowList(node.fs_read, experience.fs_read, "fs/read", inside(experience.fs_read, "read"), out);
  narrowList(node.fs_write, experience.fs_write, "fs/write", inside(experience.fs_write, "write"),
             out);
  if (node.network && experience.network) {
    if (*node.network < *experience.network) {
      out.push_back({"network", std::string("network: ") + networkName(*node.network) +
                                    " is wider than the experience's network: " +
                                    networkName(*experience.network) +
                                    "; a node's policy can only narrow the experience's"});
    } else if (*node.network == NetworkRule::kAllow && *experience.network == NetworkRule::kAllow) {
      for (size_t i = 0; i < node.allow.size(); ++i) {
        const bool covered = std::any_of(
            experience.allow.begin(), experience.allow.end(),
            [&](const std::string& outer) { return allowCovers(outer, node.allow[i]); });
        if (!covered) {
          out.push_back({"network/allow/" + std::to_string(i),
                         "\"" + node.allow[i] +
                             "\" is not allowed by the experience's "
                             "network.allow (" +
                             joined(experience.allow) +
                             "); a node's policy can only narrow the experience's"});
        }
      }
    }
  }
  narrowList(
      node.env, experience.env, "env",
      [&](const std::string& name) -> std::string {
        const auto& names = *experience.env;
        if (std::find(names.begin(), names.end(), name) != names.end()) {
          return "";
        }
        return "\"" + name + "\" is not in the experience's env (" + joined(names) +
               "); a node's policy can only narrow the experience's";
      },
      out);
  for (const auto& [key, value] : node.limits) {
    auto outer = experience.limits.find(key);
    if (outer != experience.limits.end() && value > outer->second) {
      out.push_back({"limits/" + key, key + ": " + std::to_string(value) +
                                          " is more than the experience's " +
                                          std::to_string(outer->second) +
                                          "; a node's policy can only narrow the experience's"});
    }
  }
  return out;
}

}  // namespace oe::spec
