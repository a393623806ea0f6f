// A node's policy at run time (docs/policy.md): the sandbox member of its create config, the
// filtering proxy of a network allow-list, and the policy.applied / policy.denied events.
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): mkdtemp

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string_view>

#include "oe/run/engine.hpp"
#include "oe/run/policy_confinement.hpp"
#include "oe/spec/policy.hpp"

namespace oe::run::engine {

namespace {

// OE_SANDBOX_PROXY_HOSTS="name=10.0.0.5,other.test=127.0.0.1": names the proxy resolves to these
// addresses before asking DNS, as /etc/hosts lines would. It changes where an allowed name
// leads, never which names are allowed (the allow-list is matched on the name).
std::map<std::string, std::string> proxyHostsFromEnvironment() {
  std::map<std::string, std::string> out;
  const char* text = std::getenv("OE_SANDBOX_PROXY_HOSTS");  // NOLINT(concurrency-mt-unsafe)
  std::string_view rest = text != nullptr ? text : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (const size_t eq = entry.find('='); eq != std::string_view::npos && eq > 0) {
      out.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
  }
  return out;
}

}  // namespace

Run::PrivateDir::~PrivateDir() {
  if (!path.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
}

std::string Run::sandboxMember(NodeRuntime& node) {
  if (!exp_.policy && !node.spec->policy) {
    return {};
  }
  std::lock_guard lock(policy_mutex_);
  if (auto known = sandbox_members_.find(node.index); known != sandbox_members_.end()) {
    return known->second;
  }
  const auto policy = spec::effectivePolicy(exp_.policy.get(), node.spec->policy.get());
  std::string socket;
  if (policy->network == spec::NetworkRule::kAllow) {
    if (proxy_dir_.path.empty()) {
      std::string pattern = (std::filesystem::temp_directory_path() / "oe-proxy-XXXXXX").string();
      if (::mkdtemp(pattern.data()) != nullptr) {
        proxy_dir_.path = pattern;
      }
    }
    sandbox::ProxyOptions options;
    options.socket_path = proxy_dir_.path + "/" + std::to_string(node.index) + ".sock";
    for (const auto& entry : policy->allow) {
      if (auto rule = sandbox::parseProxyRule(entry)) {
        options.allow.push_back(std::move(rule).value());
      }
    }
    options.resolve_overrides = proxyHostsFromEnvironment();
    const std::string node_id = node.spec->id;
    options.on_denied = [this, node_id](const sandbox::ProxyDenial& denial) {
      const Json fields = {{"rule", "network.allow"},
                           {"host", denial.host},
                           {"port", denial.port},
                           {"reason", denial.reason}};
      (void)log_.nodeEvent("policy.denied", node_id, fields.dump());
    };
    if (auto proxy = sandbox::ConnectProxy::start(std::move(options))) {
      proxies_.push_back(std::move(proxy).value());
      socket = proxy_dir_.path + "/" + std::to_string(node.index) + ".sock";
    }
    // No proxy: the socket stays empty, oe-sandbox finds nothing to relay to, and the node's
    // processes reach no host at all (never more than the policy allows).
  }
  Json sandbox = Json::object();
  sandbox["exe"] = sandboxExecutable().value_or("");
  sandbox::Confinement confinement = confinementFor(*policy, exp_.dir, socket);
  if (node.worktrees != nullptr && confinement.fs) {
    // Its attempts run in worktrees made inside this run's folder of them (made by
    // prepareWorkspaces): writable, while the repository's .git, which holds it, is not
    // otherwise. docs/workspaces.md, "With a policy".
    const std::string folder =
        (workspace::chainFolder(node.worktrees->repo(), chain_id_) / log_.runId()).string();
    auto& write = confinement.fs->write;
    if (std::find(write.begin(), write.end(), folder) == write.end()) {
      write.push_back(folder);
    }
  }
  sandbox["confinement"] = sandbox::toJson(confinement);
  std::string member = ",\"sandbox\":" + sandbox.dump();
  sandbox_members_.emplace(node.index, member);
  return member;
}

void Run::logPolicyApplied(const NodeRuntime& node, int attempt) {
  if (!exp_.policy && !node.spec->policy) {
    return;
  }
  const auto policy = spec::effectivePolicy(exp_.policy.get(), node.spec->policy.get());
  Json in_force = spec::policyJson(*policy);
  in_force["enforce"] = policy->required.value_or(true) ? "required" : "best_effort";
  const Json fields = {{"attempt", attempt}, {"policy", std::move(in_force)}};
  (void)log_.nodeEvent("policy.applied", node.spec->id, fields.dump());
}

}  // namespace oe::run::engine
