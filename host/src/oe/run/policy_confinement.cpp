// A node's policy as oe-sandbox's confinement; see attempt_policy.hpp.
#include "oe/run/policy_confinement.hpp"

#include <unistd.h>

#include <algorithm>
#include <system_error>

namespace oe::run {

namespace fs = std::filesystem;

namespace {

bool isExecutable(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

void addUnique(std::vector<std::string>& list, std::string path) {
  if (std::find(list.begin(), list.end(), path) == list.end()) {
    list.push_back(std::move(path));
  }
}

}  // namespace

std::optional<std::string> sandboxExecutable() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate :
         {self.parent_path() / "oe-sandbox",
          self.parent_path().parent_path() / "libexec" / "oe" / "oe-sandbox"}) {
      if (isExecutable(candidate)) {
        return candidate.lexically_normal().string();
      }
    }
  }
#ifdef OE_SANDBOX_BUILD_PATH
  if (isExecutable(OE_SANDBOX_BUILD_PATH)) {
    return std::string(OE_SANDBOX_BUILD_PATH);
  }
#endif
  return std::nullopt;
}

const std::vector<std::string>& baselineReadPaths() {
  static const std::vector<std::string> paths = {"/usr",
                                                 "/lib",
                                                 "/lib32",
                                                 "/lib64",
                                                 "/bin",
                                                 "/sbin",
                                                 "/etc/ld.so.cache",
                                                 "/etc/ld.so.conf",
                                                 "/etc/ld.so.conf.d",
                                                 "/etc/alternatives",
                                                 "/etc/localtime",
                                                 "/etc/timezone",
                                                 "/etc/nsswitch.conf",
                                                 "/etc/host.conf",
                                                 "/etc/gai.conf",
                                                 "/etc/hosts",
                                                 "/etc/resolv.conf",
                                                 "/etc/passwd",
                                                 "/etc/group",
                                                 "/etc/ssl",
                                                 "/etc/ca-certificates",
                                                 "/etc/mime.types",
                                                 "/dev/urandom",
                                                 "/dev/random"};
  return paths;
}

const std::vector<std::string>& baselineWritePaths() {
  static const std::vector<std::string> paths = {"/dev/null", "/dev/zero", "/dev/full"};
  return paths;
}

sandbox::Confinement confinementFor(const spec::PolicySpec& policy, const fs::path& experience_dir,
                                    const std::string& proxy_socket) {
  sandbox::Confinement out;
  out.enforce =
      policy.required.value_or(true) ? sandbox::Enforce::kRequired : sandbox::Enforce::kBestEffort;
  if (policy.fs_read || policy.fs_write) {
    sandbox::FsRules rules;
    rules.read = baselineReadPaths();
    rules.write = baselineWritePaths();
    for (const auto& written : policy.fs_read.value_or(std::vector<std::string>{})) {
      addUnique(rules.read, spec::policyPath(written, experience_dir));
    }
    for (const auto& written : policy.fs_write.value_or(std::vector<std::string>{})) {
      std::string path = spec::policyPath(written, experience_dir);
      std::error_code ec;
      if (path != sandbox::kTmpPlaceholder && fs::path(written).is_relative() &&
          !fs::exists(path, ec)) {
        fs::create_directories(path, ec);
      }
      addUnique(rules.write, path);
    }
    // A writable root keeps its repository and oe's own files read-only, as Codex keeps .git:
    // a tool that may edit the checkout may not rewrite its history or hooks, nor the state.
    const std::string own = (experience_dir / ".openexpertise").lexically_normal().string();
    for (const auto& root : rules.write) {
      if (root == sandbox::kTmpPlaceholder || root.rfind("/dev/", 0) == 0) {
        continue;
      }
      for (const fs::path& inner : {fs::path(root) / ".git", fs::path(root) / ".openexpertise"}) {
        std::error_code ec;
        if (fs::exists(inner, ec)) {
          addUnique(rules.read_only, inner.lexically_normal().string());
        }
      }
      std::error_code ec;
      if ((root == "/" || own.rfind(root + "/", 0) == 0) && fs::exists(own, ec)) {
        addUnique(rules.read_only, own);
      }
    }
    out.fs = std::move(rules);
  }
  if (policy.network) {
    switch (*policy.network) {
      case spec::NetworkRule::kNone:
        out.network.mode = sandbox::NetworkMode::kNone;
        break;
      case spec::NetworkRule::kLoopback:
        out.network.mode = sandbox::NetworkMode::kLoopback;
        break;
      case spec::NetworkRule::kAllow:
        out.network.mode = sandbox::NetworkMode::kProxy;
        out.network.proxy_socket = proxy_socket;
        break;
      case spec::NetworkRule::kFull:
      default:
        out.network.mode = sandbox::NetworkMode::kFull;
        break;
    }
  }
  if (policy.env) {
    out.env = sandbox::EnvRules{*policy.env, {}};
  }
  auto limit = [&policy](const char* key) -> std::optional<std::uint64_t> {
    auto it = policy.limits.find(key);
    return it == policy.limits.end() ? std::nullopt : std::optional<std::uint64_t>(it->second);
  };
  out.limits.cpu_seconds = limit("cpu_seconds");
  out.limits.memory_mb = limit("memory_mb");
  out.limits.processes = limit("processes");
  out.limits.file_size_mb = limit("file_size_mb");
  out.limits.open_files = limit("open_files");
  return out;
}

}  // namespace oe::run
