// What the running kernel can enforce for oe-sandbox: the Landlock ABI, which namespaces this
// user may create, whether cgroup v2 is mounted. Probed, never assumed from the version alone.
#pragma once

#include <string>

namespace oe::sandbox {

struct KernelFeatures {
  int landlock_abi = 0;  // 0: no Landlock (not built, disabled, or OE_SANDBOX_NO_LANDLOCK=1)
  bool user_ns = false;  // this process may create a user namespace
  bool net_ns = false;   // ... a network namespace (inside a new user namespace when not root)
  bool mount_ns = false;
  bool pid_ns = false;
  bool cgroup_v2 = false;     // /sys/fs/cgroup/cgroup.controllers exists
  std::string landlock_note;  // why landlock_abi is 0, empty otherwise
};

// Probes the kernel: Landlock by its version call, each namespace by an unshare in a short-lived
// forked child (only async-signal-safe calls there, so a multithreaded caller may use it).
// OE_SANDBOX_NO_LANDLOCK=1 in the environment reports landlock_abi 0.
KernelFeatures probeKernel();

// Landlock's ABI alone (one system call), 0 with the reason in `note` when there is none; the
// same OE_SANDBOX_NO_LANDLOCK switch. oe-sandbox asks only this: it tries the namespaces it
// needs and handles a refusal then, rather than create each one twice.
int landlockAbi(std::string& note);

// True when the kernel keeps pid_max per PID namespace (Linux >= 6.14), so a process with
// CAP_SYS_ADMIN in a new PID namespace may lower it there without touching the host's. Read from
// the release: before 6.14 the same write changes the host's pid_max, so this must not guess.
bool hasPerNamespacePidMax();

// True when the calling process's effective uid is kernel uid 0 (root in the initial user
// namespace), which the kernel exempts from RLIMIT_NPROC.
bool isKernelRoot();

}  // namespace oe::sandbox
