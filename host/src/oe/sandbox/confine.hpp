// The steps that confine the calling process, in the order oe-sandbox takes them: namespaces
// and mounts, the loopback and proxy forwarder, the PID window, rlimits, no_new_privs, Landlock.
// Each step is a value: an error says why the kernel refused, and the caller names the rule.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/sandbox/confinement.hpp"
#include "oe/sandbox/kernel.hpp"

namespace oe::sandbox {

// A rule the kernel will not enforce here, and why: "network mode none", "clone: ...".
struct Shortfall {
  std::string rule;
  std::string reason;
};

// The namespaces a confinement needs. A PID namespace comes with any other, so the program's
// descendants die with the sandbox's init; a user namespace when not root, to own the rest.
struct NamespaceSet {
  bool user = false;
  bool mount = false;
  bool net = false;
  bool pid = false;

  [[nodiscard]] bool any() const { return user || mount || net || pid; }
  [[nodiscard]] int cloneFlags() const;  // CLONE_NEW* of the members set
};

// What is decided before anything runs.
struct StartPlan {
  NamespaceSet namespaces;
  bool landlock = false;   // fs rules, and a kernel with Landlock
  bool pid_limit = false;  // limits.processes through the PID namespace's pid_max (root)
  std::vector<Shortfall> shortfalls;  // rules this kernel cannot enforce at all
};

// `kernel_root`: isKernelRoot(); `euid`: a user namespace is needed to own the others unless 0.
StartPlan planStart(const Confinement& confinement, const KernelFeatures& kernel,
                    bool kernel_root, uid_t euid);

// The rules that needed `namespaces`, for a clone that failed.
std::vector<Shortfall> namespaceShortfalls(const Confinement& confinement, bool pid_limit,
                                           const std::string& reason);

// In a fresh user namespace: maps `outer_uid`/`outer_gid` to themselves (setgroups denied first,
// as the kernel requires of an unprivileged gid_map).
Result<void> writeOwnIdMaps(uid_t outer_uid, gid_t outer_gid);

// In a fresh mount namespace: every mount made private, then each existing path bind-mounted
// over itself read-only (missing paths skipped). Returns the first path the kernel refused.
Result<void> makePathsReadOnly(const std::vector<std::string>& paths);

// In a fresh network namespace: `lo` up.
Result<void> bringLoopbackUp();

struct LoopbackListener {
  int fd = -1;  // close-on-exec, listening on 127.0.0.1:port
  std::uint16_t port = 0;
};
Result<LoopbackListener> listenOnLoopback();

// The proxy forwarder's loop: every connection accepted on `listen_fd` relayed byte for byte
// to a new connection to the Unix socket `unix_path`, both ways, half-closes included. Never
// returns; meant for a forked process inside the sandbox's network namespace.
[[noreturn]] void runForwarder(int listen_fd, const std::string& unix_path);

// In a fresh PID namespace, from its init (which must hold pid 1): only `processes` tasks
// (processes and threads) may exist besides the ones already there. See confine.cpp for how.
Result<void> limitPidNamespace(std::uint64_t processes);

// setrlimit for each limit set (RLIMIT_NPROC for processes when `set_nproc`); one shortfall per
// limit the kernel refused.
std::vector<Shortfall> applyRlimits(const Limits& limits, bool set_nproc);

Result<void> setNoNewPrivs();

// Landlock with every filesystem right `abi` knows handled: read paths get execute, read_file
// and read_dir; write paths (and `tmp_dir` for "$TMP") every right; /dev/null read and write;
// /dev/zero, /dev/random, /dev/urandom read. Missing paths are skipped. On ABI >= 6 the domain
// is also scoped for signals: the program cannot signal processes outside it.
Result<void> restrictFilesystem(const FsRules& fs, const std::string& tmp_dir, int abi);

// The program's environment: with `env` rules only the kept variables of `environ` plus the set
// ones; without, `environ` unchanged.
std::vector<std::string> confinedEnvironment(const std::optional<EnvRules>& env,
                                             const char* const* environ);
void setVariable(std::vector<std::string>& env, std::string_view name, std::string_view value);
void unsetVariable(std::vector<std::string>& env, std::string_view name);
std::optional<std::string> variable(const std::vector<std::string>& env, std::string_view name);

// `program` itself when it contains a '/', else the first executable file of that name on the
// PATH of `env` (/usr/local/bin:/usr/bin:/bin when it has none).
std::optional<std::string> findProgram(const std::string& program,
                                       const std::vector<std::string>& env);

}  // namespace oe::sandbox
