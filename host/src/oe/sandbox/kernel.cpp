// Probes what the kernel offers oe-sandbox. Each namespace is tried for real in a forked child
// that only calls unshare and _exit, so the answer is the kernel's, whatever sysctls say.
#include "oe/sandbox/kernel.hpp"

#include <linux/landlock.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace oe::sandbox {
namespace {

// Whether a child of this process may unshare `flags` (CLONE_NEWUSER added when not root, as
// oe-sandbox does).
bool canUnshare(int flags) {
  const pid_t pid = fork();
  if (pid < 0) {
    return false;
  }
  if (pid == 0) {
    _exit(unshare(flags) == 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return false;
    }
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

bool isKernelRoot() {
  const uid_t euid = geteuid();
  if (euid != 0) {
    return false;
  }
  // Root of a user namespace is kernel uid 0 only if the map says so: "inside outside count".
  std::ifstream map("/proc/self/uid_map");
  unsigned long inside = 0;
  unsigned long outside = 0;
  unsigned long count = 0;
  while (map >> inside >> outside >> count) {
    if (inside == 0 && count > 0) {
      return outside == 0;
    }
  }
  return true;  // no /proc: assume the worst for RLIMIT_NPROC
}

bool hasPerNamespacePidMax() {
  utsname u{};
  if (uname(&u) != 0) {
    return false;
  }
  int major = 0;
  int minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) {
    return false;
  }
  return major > 6 || (major == 6 && minor >= 14);
}

int landlockAbi(std::string& note) {
  const char* no_landlock = std::getenv("OE_SANDBOX_NO_LANDLOCK");  // NOLINT(concurrency-mt-unsafe)
  if (no_landlock != nullptr && std::string(no_landlock) == "1") {
    note = "OE_SANDBOX_NO_LANDLOCK=1 hides Landlock";
    return 0;
  }
  const long abi =
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi > 0) {
    return static_cast<int>(abi);
  }
  if (errno == ENOSYS) {
    note = "the kernel is built without Landlock";
  } else if (errno == EOPNOTSUPP) {
    note = "Landlock is not enabled at boot (lsm= does not list it)";
  } else {
    note = std::string("landlock_create_ruleset: ") + std::strerror(errno);
  }
  return 0;
}

KernelFeatures probeKernel() {
  KernelFeatures f;
  f.landlock_abi = landlockAbi(f.landlock_note);
  const int user = geteuid() == 0 ? 0 : CLONE_NEWUSER;
  f.user_ns = canUnshare(CLONE_NEWUSER);
  f.net_ns = canUnshare(user | CLONE_NEWNET);
  f.mount_ns = canUnshare(user | CLONE_NEWNS);
  f.pid_ns = canUnshare(user | CLONE_NEWPID);
  f.cgroup_v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
  return f;
}

}  // namespace oe::sandbox
