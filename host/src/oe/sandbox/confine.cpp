// The kernel calls behind each confinement step. Called in oe-sandbox's forked children, which
// are single-threaded, so ordinary code is fine here.
#include "oe/sandbox/confine.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <list>

namespace oe::sandbox {
namespace {

// The Landlock rights newer than Debian 12's <linux/landlock.h>, by the ABI that added them.
constexpr std::uint64_t kFsRefer = 1ULL << 13;     // ABI 2
constexpr std::uint64_t kFsTruncate = 1ULL << 14;  // ABI 3
constexpr std::uint64_t kFsIoctlDev = 1ULL << 15;  // ABI 5
constexpr std::uint64_t kScopeSignal = 1ULL << 1;  // ABI 6
constexpr std::uint64_t kFsAbi1 = (1ULL << 13) - 1;  // execute .. make_sym
constexpr std::uint64_t kFsExecute = 1ULL << 0;
constexpr std::uint64_t kFsWriteFile = 1ULL << 1;
constexpr std::uint64_t kFsReadFile = 1ULL << 2;
constexpr std::uint64_t kFsReadDir = 1ULL << 3;
// The rights that apply to a file that is not a directory (others make add_rule fail).
constexpr std::uint64_t kFsFileRights =
    kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;

// The ruleset attribute as of ABI 6; older kernels are handed its prefix (size by ABI).
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;  // ABI 4
  std::uint64_t scoped;              // ABI 6
};

// oe-sandbox's pid window: the kernel never hands out pids below RESERVED_PIDS (300) again once
// the namespace's cursor has passed it (alloc_pid), so pids [300, pid_max) are all there is.
constexpr std::uint64_t kReservedPids = 300;

Error errnoError(const std::string& what) {
  return makeError(what + ": " + std::strerror(errno));
}

Result<void> writeFile(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return errnoError(std::string("open ") + path);
  }
  const ssize_t n = write(fd, text.data(), text.size());
  const int saved = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    errno = saved;
    return errnoError(std::string("write ") + path);
  }
  return {};
}

// The mount flags a bind remount must keep: in a user namespace the kernel refuses to drop the
// locked ones (nosuid, nodev, noexec, atime) of the mount underneath.
unsigned long lockedFlags(const std::string& path) {
  struct statvfs sv {};
  if (statvfs(path.c_str(), &sv) != 0) {
    return 0;
  }
  unsigned long flags = 0;
  const std::array<std::pair<unsigned long, unsigned long>, 6> pairs = {{
      {ST_NOSUID, MS_NOSUID},
      {ST_NODEV, MS_NODEV},
      {ST_NOEXEC, MS_NOEXEC},
      {ST_NOATIME, MS_NOATIME},
      {ST_NODIRATIME, MS_NODIRATIME},
      {ST_RELATIME, MS_RELATIME},
  }};
  for (const auto& [st, ms] : pairs) {
    if ((sv.f_flag & st) != 0) {
      flags |= ms;
    }
  }
  return flags;
}

Result<void> addPathRule(int ruleset, const std::string& path, std::uint64_t access) {
  const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) {
    return {};  // a path that does not exist grants nothing
  }
  struct stat st {};
  if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
    access &= kFsFileRights;
  }
  landlock_path_beneath_attr attr{};
  attr.allowed_access = access;
  attr.parent_fd = fd;
  const long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
  const int saved = errno;
  close(fd);
  if (rc != 0) {
    errno = saved;
    return errnoError("landlock_add_rule " + path);
  }
  return {};
}

std::size_t findVariable(const std::vector<std::string>& env, std::string_view name) {
  for (std::size_t i = 0; i < env.size(); ++i) {
    const std::string& entry = env[i];
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return i;
    }
  }
  return env.size();
}

// One relayed connection of the forwarder: bytes read from one side wait in its buffer until
// the other side takes them.
struct Relay {
  std::array<int, 2> fd{-1, -1};             // 0: the program's TCP side, 1: the Unix socket
  std::array<std::string, 2> pending;         // pending[i]: read from fd[i], for fd[1 - i]
  std::array<bool, 2> eof{false, false};      // fd[i] said it will send no more
  std::array<bool, 2> shut{false, false};     // fd[i]'s write side is shut
  bool broken = false;
};

constexpr std::size_t kRelayBuffer = 64 * 1024;

void pumpRelay(Relay& r, int side, short revents) {
  const int other = 1 - side;
  if ((revents & (POLLERR | POLLNVAL)) != 0) {
    r.broken = true;
    return;
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !r.eof[side] &&
      r.pending[side].size() < kRelayBuffer) {
    char buf[16 * 1024];
    const ssize_t n = read(r.fd[side], buf, sizeof buf);
    if (n > 0) {
      r.pending[side].append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      r.eof[side] = true;
    } else if (errno != EAGAIN && errno != EINTR) {
      r.broken = true;
    }
  }
  if ((revents & POLLOUT) != 0 && !r.pending[other].empty()) {
    const ssize_t n = send(r.fd[side], r.pending[other].data(), r.pending[other].size(),
                           MSG_NOSIGNAL);
    if (n > 0) {
      r.pending[other].erase(0, static_cast<std::size_t>(n));
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      r.broken = true;
    }
  }
}

}  // namespace

int NamespaceSet::cloneFlags() const {
  return (user ? CLONE_NEWUSER : 0) | (mount ? CLONE_NEWNS : 0) | (net ? CLONE_NEWNET : 0) |
         (pid ? CLONE_NEWPID : 0);
}

StartPlan planStart(const Confinement& c, const KernelFeatures& kernel, bool kernel_root,
                    uid_t euid) {
  StartPlan plan;
  if (c.fs) {
    if (kernel.landlock_abi > 0) {
      plan.landlock = true;
    } else {
      plan.shortfalls.push_back({"fs rules", kernel.landlock_note.empty()
                                                 ? "no Landlock in this kernel"
                                                 : kernel.landlock_note});
    }
  }
  if (c.limits.processes && kernel_root) {
    if (hasPerNamespacePidMax()) {
      plan.pid_limit = true;
    } else {
      plan.shortfalls.push_back(
          {"limits.processes", "root is exempt from RLIMIT_NPROC and this kernel (< 6.14) keeps "
                               "no pid_max per PID namespace"});
    }
  }
  plan.namespaces.net = c.network.mode != NetworkMode::kFull;
  plan.namespaces.mount = c.fs && !c.fs->read_only.empty();
  plan.namespaces.pid = plan.namespaces.net || plan.namespaces.mount || plan.pid_limit;
  plan.namespaces.user = plan.namespaces.pid && euid != 0;
  return plan;
}

std::vector<Shortfall> namespaceShortfalls(const Confinement& c, bool pid_limit,
                                           const std::string& reason) {
  std::vector<Shortfall> out;
  if (c.network.mode != NetworkMode::kFull) {
    out.push_back({"network mode " + std::string(networkModeName(c.network.mode)), reason});
  }
  if (c.fs && !c.fs->read_only.empty()) {
    out.push_back({"fs.read_only", reason});
  }
  if (pid_limit) {
    out.push_back({"limits.processes", reason});
  }
  return out;
}

Result<void> writeOwnIdMaps(uid_t outer_uid, gid_t outer_gid) {
  if (auto r = writeFile("/proc/self/setgroups", "deny"); !r && errno != ENOENT) {
    return r;
  }
  if (auto r = writeFile("/proc/self/uid_map", std::to_string(outer_uid) + " " +
                                                   std::to_string(outer_uid) + " 1\n");
      !r) {
    return r;
  }
  return writeFile("/proc/self/gid_map",
                   std::to_string(outer_gid) + " " + std::to_string(outer_gid) + " 1\n");
}

Result<void> makePathsReadOnly(const std::vector<std::string>& paths) {
  // Private first: a bind made here must not propagate back into the host's mount namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    if (errno == EINVAL) {
      // "/" is not a mount point: oe runs in a bare chroot. The mount that holds it cannot be
      // named from here, so a bind would propagate to the host; and a chroot may not create a
      // user namespace, which would have stopped that. Refuse rather than leak a mount.
      return makeError("mount --make-rprivate /: this root directory is not a mount point (a "
                       "chroot?), so a read-only bind would reach the host's mounts; run oe "
                       "where / is a mount point (a container, or `mount --bind DIR DIR` "
                       "before `chroot DIR`)");
    }
    return errnoError("mount --make-rprivate /");
  }
  for (const std::string& path : paths) {
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) {
      continue;  // nothing there to protect
    }
    if (mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return errnoError("bind " + path);
    }
    const unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | lockedFlags(path);
    if (mount(nullptr, path.c_str(), nullptr, flags, nullptr) != 0) {
      return errnoError("remount read-only " + path);
    }
  }
  return {};
}

Result<void> bringLoopbackUp() {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return errnoError("socket");
  }
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  int rc = ioctl(fd, SIOCGIFFLAGS, &req);
  if (rc == 0) {
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP);
    rc = ioctl(fd, SIOCSIFFLAGS, &req);
  }
  const int saved = errno;
  close(fd);
  if (rc != 0) {
    errno = saved;
    return errnoError("ioctl SIOCSIFFLAGS lo up");
  }
  return {};
}

Result<LoopbackListener> listenOnLoopback() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return errnoError("socket");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return errnoError("listen on 127.0.0.1");
  }
  return LoopbackListener{fd, ntohs(addr.sin_port)};
}

void runForwarder(int listen_fd, const std::string& unix_path) {
  std::signal(SIGPIPE, SIG_IGN);
  fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
  std::list<Relay> relays;
  std::vector<pollfd> fds;
  std::vector<std::pair<Relay*, int>> owners;
  for (;;) {
    fds.assign(1, pollfd{listen_fd, POLLIN, 0});
    owners.assign(1, {nullptr, 0});
    for (Relay& r : relays) {
      for (int side = 0; side < 2; ++side) {
        short events = 0;
        if (!r.eof[side] && r.pending[side].size() < kRelayBuffer) {
          events |= POLLIN;
        }
        if (!r.pending[1 - side].empty()) {
          events |= POLLOUT;
        }
        fds.push_back(pollfd{r.fd[side], events, 0});
        owners.emplace_back(&r, side);
      }
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      _exit(1);
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) {
        pumpRelay(*owners[i].first, owners[i].second, fds[i].revents);
      }
    }
    for (auto it = relays.begin(); it != relays.end();) {
      Relay& r = *it;
      for (int side = 0; side < 2; ++side) {
        // All of one side's bytes delivered after its EOF: pass the half-close on.
        if (r.eof[side] && r.pending[side].empty() && !r.shut[1 - side]) {
          shutdown(r.fd[1 - side], SHUT_WR);
          r.shut[1 - side] = true;
        }
      }
      if (r.broken || (r.shut[0] && r.shut[1])) {
        close(r.fd[0]);
        close(r.fd[1]);
        it = relays.erase(it);
      } else {
        ++it;
      }
    }
    if ((fds[0].revents & POLLIN) != 0) {
      const int client = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client < 0) {
        continue;
      }
      const int upstream = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, unix_path.c_str(), sizeof addr.sun_path - 1);
      if (upstream < 0 ||
          connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(client);  // the program sees its connection closed: no proxy to reach
        if (upstream >= 0) {
          close(upstream);
        }
        continue;
      }
      fcntl(upstream, F_SETFL, fcntl(upstream, F_GETFL) | O_NONBLOCK);
      Relay& r = relays.emplace_back();
      r.fd = {client, upstream};
    }
  }
}

Result<void> limitPidNamespace(std::uint64_t processes) {
  // pid_max is per PID namespace since Linux 6.14 and at least 301; the cursor moved past 300
  // keeps the low pids out of reach, so exactly `processes` pids remain: [300, 300 + processes).
  if (auto r = writeFile("/proc/sys/kernel/pid_max", std::to_string(kReservedPids + processes));
      !r) {
    return r;
  }
  return writeFile("/proc/sys/kernel/ns_last_pid", std::to_string(kReservedPids));
}

std::vector<Shortfall> applyRlimits(const Limits& limits, bool set_nproc) {
  std::vector<Shortfall> out;
  const auto apply = [&out](const char* rule, int resource, std::optional<std::uint64_t> value,
                            std::uint64_t scale) {
    if (!value) {
      return;
    }
    const rlim_t v = static_cast<rlim_t>(*value * scale);
    const rlimit lim{v, v};
    if (setrlimit(resource, &lim) != 0) {
      out.push_back({rule, std::string("setrlimit: ") + std::strerror(errno)});
    }
  };
  constexpr std::uint64_t kMb = 1024 * 1024;
  apply("limits.cpu_seconds", RLIMIT_CPU, limits.cpu_seconds, 1);
  apply("limits.memory_mb", RLIMIT_AS, limits.memory_mb, kMb);
  apply("limits.file_size_mb", RLIMIT_FSIZE, limits.file_size_mb, kMb);
  apply("limits.open_files", RLIMIT_NOFILE, limits.open_files, 1);
  if (set_nproc) {
    apply("limits.processes", RLIMIT_NPROC, limits.processes, 1);
  }
  return out;
}

Result<void> setNoNewPrivs() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return errnoError("prctl(PR_SET_NO_NEW_PRIVS)");
  }
  return {};
}

Result<void> restrictFilesystem(const FsRules& fs, const std::string& tmp_dir, int abi) {
  RulesetAttr attr{};
  attr.handled_access_fs = kFsAbi1;
  if (abi >= 2) {
    attr.handled_access_fs |= kFsRefer;
  }
  if (abi >= 3) {
    attr.handled_access_fs |= kFsTruncate;
  }
  if (abi >= 5) {
    attr.handled_access_fs |= kFsIoctlDev;
  }
  std::size_t size = sizeof(std::uint64_t);
  if (abi >= 6) {
    attr.scoped = kScopeSignal;
    size = sizeof attr;
  }
  const long ruleset = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) {
    return errnoError("landlock_create_ruleset");
  }
  const int rs = static_cast<int>(ruleset);
  const std::uint64_t all = attr.handled_access_fs;
  const std::uint64_t read = kFsExecute | kFsReadFile | kFsReadDir;
  Result<void> result;
  const auto add = [&](const std::string& path, std::uint64_t access) {
    if (result) {
      result = addPathRule(rs, path, access);
    }
  };
  for (const std::string& path : fs.read) {
    add(path, read);
  }
  for (const std::string& path : fs.write) {
    if (path == kTmpPlaceholder) {
      if (!tmp_dir.empty()) {
        add(tmp_dir, all);
      }
    } else {
      add(path, all);
    }
  }
  // What almost every program opens: a sink to write to and sources of bytes.
  add("/dev/null", all);
  for (const char* dev : {"/dev/zero", "/dev/random", "/dev/urandom"}) {
    add(dev, kFsReadFile);
  }
  if (result && syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
    result = errnoError("landlock_restrict_self");
  }
  close(rs);
  return result;
}

std::vector<std::string> confinedEnvironment(const std::optional<EnvRules>& rules,
                                             const char* const* environ) {
  std::vector<std::string> own;
  for (const char* const* e = environ; e != nullptr && *e != nullptr; ++e) {
    own.emplace_back(*e);
  }
  if (!rules) {
    return own;
  }
  std::vector<std::string> out;
  for (const std::string& name : rules->keep) {
    if (const std::size_t i = findVariable(own, name); i < own.size()) {
      setVariable(out, name, std::string_view(own[i]).substr(name.size() + 1));
    }
  }
  for (const auto& [name, value] : rules->set) {
    setVariable(out, name, value);
  }
  return out;
}

void setVariable(std::vector<std::string>& env, std::string_view name, std::string_view value) {
  std::string entry = std::string(name) + "=" + std::string(value);
  if (const std::size_t i = findVariable(env, name); i < env.size()) {
    env[i] = std::move(entry);
  } else {
    env.push_back(std::move(entry));
  }
}

void unsetVariable(std::vector<std::string>& env, std::string_view name) {
  while (true) {
    const std::size_t i = findVariable(env, name);
    if (i >= env.size()) {
      return;
    }
    env.erase(env.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

std::optional<std::string> variable(const std::vector<std::string>& env, std::string_view name) {
  if (const std::size_t i = findVariable(env, name); i < env.size()) {
    return env[i].substr(name.size() + 1);
  }
  return std::nullopt;
}

std::optional<std::string> findProgram(const std::string& program,
                                       const std::vector<std::string>& env) {
  if (program.empty()) {
    return std::nullopt;
  }
  const auto runnable = [](const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) {
    return runnable(program) ? std::optional<std::string>(program) : std::nullopt;
  }
  const std::string path = variable(env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) {
      dir = ".";
    }
    if (const std::string candidate = dir + "/" + program; runnable(candidate)) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace oe::sandbox
