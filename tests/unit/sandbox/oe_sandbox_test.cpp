// oe-sandbox end to end: the built executable confines a real program (the probe, or /bin/sh),
// and each rule is refused by the kernel while the rest of the program still works.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <thread>

#include "oe/common/json.hpp"
#include "oe/sandbox/kernel.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

namespace oe::sandbox {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Outcome {
  int status = -1;
  std::string out;
  std::string err;
  bool timed_out = false;

  [[nodiscard]] int exitCode() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  [[nodiscard]] int signal() const { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }
};

// Runs oe-sandbox in its own process group, as oe will, and kills the group at the deadline.
// `on_output` sees stdout as it grows, with the group's id (for a test that cancels).
Outcome runSandbox(const Json& confinement, const std::vector<std::string>& program,
                   const std::map<std::string, std::string>& env_overrides = {},
                   std::chrono::seconds deadline = 60s,
                   const std::function<void(const std::string&, pid_t)>& on_output = {}) {
  std::vector<std::string> args = {OE_SANDBOX_EXE, "--confinement", confinement.dump(), "--"};
  args.insert(args.end(), program.begin(), program.end());
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (env_overrides.count(entry.substr(0, entry.find('='))) == 0) {
      env.push_back(entry);
    }
  }
  for (const auto& [name, value] : env_overrides) {
    env.push_back(name + "=" + value);
  }
  std::vector<char*> argv;
  std::vector<char*> envp;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  for (auto& e : env) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  int out_pipe[2];
  int err_pipe[2];
  EXPECT_EQ(pipe2(out_pipe, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(err_pipe, O_CLOEXEC), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(111);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  Outcome o;
  const auto end = std::chrono::steady_clock::now() + deadline;
  std::array<pollfd, 2> fds = {{{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left <= 0ms) {
      o.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (poll(fds.data(), fds.size(), static_cast<int>(left.count())) <= 0) {
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && fds[i].revents != 0) {
        char buf[4096];
        const ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        } else {
          (i == 0 ? o.out : o.err).append(buf, static_cast<std::size_t>(n));
          if (i == 0 && on_output) {
            on_output(o.out, pid);
          }
        }
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) {
      close(f.fd);
    }
  }
  waitpid(pid, &o.status, 0);
  return o;
}

// What a dynamically linked program needs to start: the system's files, read-only.
Json systemReads() {
  return Json::array({"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc",
                      fs::path(OE_SANDBOX_PROBE).parent_path().string()});
}

const KernelFeatures& kernel() {
  static const KernelFeatures features = probeKernel();
  return features;
}

#define NEED_LANDLOCK()                                                          \
  if (kernel().landlock_abi == 0) {                                              \
    GTEST_SKIP() << "no Landlock in this kernel: " << kernel().landlock_note;    \
  }
#define NEED_NETNS()                                                             \
  if (!kernel().net_ns || !kernel().pid_ns) {                                    \
    GTEST_SKIP() << "this kernel lets this user create no network/PID namespace"; \
  }

// A TCP listener of the test's own on 127.0.0.1 (the host's network namespace), port 0.
struct HostListener {
  int fd = -1;
  int port = 0;
  HostListener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd, 8), 0);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  ~HostListener() { close(fd); }
};

TEST(OeSandbox, WritesOutsideFsWriteAreRefusedInsideTheyWork) {
  NEED_LANDLOCK();
  test::TempDir allowed;
  test::TempDir other;
  const Json c = {{"enforce", "required"},
                  {"fs", {{"read", systemReads()}, {"write", {allowed.path().string()}}}}};
  const std::string script = "echo x > " + (other / "f").string() + "; echo rc=$?; echo y > " +
                             (allowed / "f").string() + " && echo wrote";
  const Outcome o = runSandbox(c, {"/bin/sh", "-c", script});
  EXPECT_EQ(o.exitCode(), 0) << o.err;
  EXPECT_NE(o.out.find("rc=2"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("Permission denied"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("wrote"), std::string::npos) << o.out;
  EXPECT_FALSE(fs::exists(other / "f"));
  EXPECT_EQ(test::readFile(allowed / "f"), "y\n");
}

TEST(OeSandbox, ReadingOutsideFsReadIsRefused) {
  NEED_LANDLOCK();
  test::TempDir home;
  test::TempDir work;
  home.write(".ssh/id_rsa", "SECRET KEY");
  work.write("notes.txt", "public notes");
  Json reads = systemReads();
  reads.push_back(work.path().string());
  const Json c = {{"enforce", "required"}, {"fs", {{"read", reads}}}};
  const Outcome o = runSandbox(
      c, {"/bin/sh", "-c",
          "cat " + (work / "notes.txt").string() + "; cat " + (home / ".ssh/id_rsa").string()});
  EXPECT_NE(o.out.find("public notes"), std::string::npos) << o.out << o.err;
  EXPECT_EQ(o.out.find("SECRET"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("Permission denied"), std::string::npos) << o.err;
  EXPECT_NE(o.exitCode(), 0);
}

TEST(OeSandbox, ReadOnlyGitInsideAWritableRepoStaysReadOnly) {
  NEED_LANDLOCK();
  if (!kernel().mount_ns || !kernel().pid_ns) {
    GTEST_SKIP() << "this kernel lets this user create no mount namespace";
  }
  test::TempDir repo;
  repo.write(".git/config", "[core]\n");
  repo.write("main.c", "int main;\n");
  const Json c = {{"enforce", "required"},
                  {"fs",
                   {{"read", systemReads()},
                    {"write", {repo.path().string()}},
                    {"read_only", {(repo / ".git").string(), (repo / ".openexpertise").string()}}}}};
  const Outcome o = runSandbox(
      c, {"/bin/sh", "-c",
          "echo evil >> " + (repo / ".git/config").string() + "; echo rc=$?; touch " +
              (repo / ".git/hook").string() + "; echo more >> " + (repo / "main.c").string() +
              " && echo edited"});
  EXPECT_EQ(o.exitCode(), 0) << o.err;
  EXPECT_NE(o.out.find("rc=2"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("Read-only file system"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find("edited"), std::string::npos) << o.out;
  EXPECT_EQ(test::readFile(repo / ".git/config"), "[core]\n");
  EXPECT_FALSE(fs::exists(repo / ".git/hook"));
  EXPECT_EQ(test::readFile(repo / "main.c"), "int main;\nmore\n");
  // The read-only bind lived in the sandbox's mount namespace only.
  std::ofstream(repo / ".git/config", std::ios::app) << "host\n";
  EXPECT_EQ(test::readFile(repo / ".git/config"), "[core]\nhost\n");
}

// Runs `script` with /bin/sh in a mount namespace of its own (util-linux's unshare, private), so
// whatever it mounts goes with it; stdout and stderr together.
std::string inOwnMountNamespace(const std::string& script) {
  const test::ProcessResult r =
      test::runProcess({"unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script});
  return r.out + r.err;
}

// A chroot whose root is a plain directory (not a mount point): the mount that holds it cannot be
// made private from inside, so a read-only bind would reach the host's mounts. oe-sandbox refuses
// and says why; the same root made a mount point of its own (as a container's is) works.
TEST(OeSandbox, ReadOnlyPathsInABareChrootAreRefusedWithTheReason) {
  NEED_LANDLOCK();
  if (geteuid() != 0 || !kernel().mount_ns || !kernel().pid_ns) {
    GTEST_SKIP() << "making a chroot needs root and mount namespaces";
  }
  if (std::system("command -v unshare >/dev/null && command -v chroot >/dev/null") != 0) {
    GTEST_SKIP() << "needs util-linux's unshare and coreutils' chroot";
  }
  test::TempDir work;
  test::TempDir repo;
  repo.write(".git/config", "[core]\n");
  const Json c = {{"enforce", "required"},
                  {"fs",
                   {{"read", systemReads()},
                    {"write", {repo.path().string()}},
                    {"read_only", {(repo / ".git").string()}}}}};
  work.write("confinement.json", c.dump());
  const std::string root = (work / "root").string();
  const std::string exe_dir = fs::path(OE_SANDBOX_EXE).parent_path().string();
  auto script = [&](bool root_is_a_mount) {
    return "set -e; R=" + root + "; mkdir -p $R/usr $R/etc $R/proc $R/dev $R/tmp $R" + exe_dir +
           "; for d in bin lib lib64 sbin; do ln -sfn usr/$d $R/$d; done; " +
           (root_is_a_mount ? "mount --bind $R $R; " : "") +
           "mount --rbind /usr $R/usr; mount --rbind /etc $R/etc; mount --rbind /proc $R/proc; "
           "mount --rbind /dev $R/dev; mount --bind /tmp $R/tmp; mount --bind " + exe_dir + " $R" +
           exe_dir + "; set +e; chroot $R " + OE_SANDBOX_EXE + " --confinement \"$(cat " +
           (work / "confinement.json").string() + ")\" -- /bin/sh -c 'echo evil >> " +
           (repo / ".git/config").string() + "; echo rc=$?'; echo exit=$?";
  };
  const std::string bare = inOwnMountNamespace(script(false));
  EXPECT_NE(bare.find("exit=126"), std::string::npos) << bare;
  EXPECT_NE(bare.find("cannot enforce fs.read_only"), std::string::npos) << bare;
  EXPECT_NE(bare.find("this root directory is not a mount point (a chroot?)"), std::string::npos)
      << bare;
  EXPECT_NE(bare.find("mount --bind DIR DIR"), std::string::npos) << bare;
  EXPECT_EQ(test::readFile(repo / ".git/config"), "[core]\n");

  fs::remove_all(root);
  const std::string mounted = inOwnMountNamespace(script(true));
  EXPECT_NE(mounted.find("rc=2"), std::string::npos) << mounted;
  EXPECT_NE(mounted.find("Read-only file system"), std::string::npos) << mounted;
  EXPECT_NE(mounted.find("exit=0"), std::string::npos) << mounted;
  EXPECT_EQ(test::readFile(repo / ".git/config"), "[core]\n");
}

TEST(OeSandbox, NetworkNoneReachesNothingAndFullReachesTheHost) {
  NEED_NETNS();
  HostListener host;
  const std::string port = std::to_string(host.port);
  const Outcome none = runSandbox({{"enforce", "required"}, {"network", {{"mode", "none"}}}},
                                  {OE_SANDBOX_PROBE, "connect", port});
  EXPECT_EQ(none.exitCode(), 1) << none.out << none.err;
  EXPECT_NE(none.out.find("connect failed: Network is unreachable"), std::string::npos)
      << none.out;
  const Outcome full = runSandbox({{"enforce", "required"}, {"network", {{"mode", "full"}}}},
                                  {OE_SANDBOX_PROBE, "connect", port});
  EXPECT_EQ(full.exitCode(), 0) << full.out << full.err;
  EXPECT_NE(full.out.find("connected"), std::string::npos);
}

TEST(OeSandbox, NetworkLoopbackReachesItsOwnListenerNotTheHosts) {
  NEED_NETNS();
  HostListener host;
  const Json c = {{"enforce", "required"}, {"network", {{"mode", "loopback"}}}};
  const Outcome own = runSandbox(c, {OE_SANDBOX_PROBE, "loopback"});
  EXPECT_EQ(own.exitCode(), 0) << own.out << own.err;
  EXPECT_NE(own.out.find("loopback ok"), std::string::npos) << own.out;
  const Outcome theirs = runSandbox(c, {OE_SANDBOX_PROBE, "connect", std::to_string(host.port)});
  EXPECT_EQ(theirs.exitCode(), 1) << theirs.out;
  EXPECT_NE(theirs.out.find("connect failed: Connection refused"), std::string::npos)
      << theirs.out;
}

// A Unix socket server standing in for the host's proxy: answers each connection with
// "pong:" and what it read up to the client's half-close.
class UnixEchoServer {
 public:
  explicit UnixEchoServer(const fs::path& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd_, 8), 0);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          return;
        }
        std::string got;
        char buf[4096];
        ssize_t n = 0;
        while ((n = read(c, buf, sizeof buf)) > 0) {
          got.append(buf, static_cast<std::size_t>(n));
        }
        const std::string reply = "pong:" + got;
        (void)!write(c, reply.data(), reply.size());
        close(c);
        ++served_;
      }
    });
  }
  ~UnixEchoServer() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  [[nodiscard]] int served() const { return served_; }

 private:
  int fd_ = -1;
  std::atomic<int> served_{0};
  std::thread thread_;
};

TEST(OeSandbox, ProxyModeRelaysToTheHostsUnixSocketAndNothingElse) {
  NEED_NETNS();
  test::TempDir dir;
  UnixEchoServer server(dir / "proxy.sock");
  HostListener host;
  const Json c = {{"enforce", "required"},
                  {"network", {{"mode", "proxy"}, {"proxy_socket", (dir / "proxy.sock").string()}}}};
  const Outcome o = runSandbox(c, {OE_SANDBOX_PROBE, "proxy", "CONNECT example.org:443"});
  EXPECT_EQ(o.exitCode(), 0) << o.out << o.err;
  EXPECT_NE(o.out.find("reply: pong:CONNECT example.org:443"), std::string::npos) << o.out;
  EXPECT_EQ(server.served(), 1);

  const Outcome env = runSandbox(c,
                                 {OE_SANDBOX_PROBE, "env", "HTTPS_PROXY", "HTTP_PROXY",
                                  "https_proxy", "http_proxy", "ALL_PROXY", "NO_PROXY"},
                                 {{"NO_PROXY", "*"}});
  const std::regex url("HTTPS_PROXY=http://127\\.0\\.0\\.1:([0-9]+)\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(env.out, m, url)) << env.out;
  for (const char* name : {"HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"}) {
    EXPECT_NE(env.out.find(std::string(name) + "=http://127.0.0.1:" + m[1].str()),
              std::string::npos)
        << env.out;
  }
  EXPECT_NE(env.out.find("NO_PROXY=(unset)"), std::string::npos) << env.out;
  // The proxy is the only way out: the host's own listener stays out of reach.
  const Outcome direct = runSandbox(c, {OE_SANDBOX_PROBE, "connect", std::to_string(host.port)});
  EXPECT_EQ(direct.exitCode(), 1) << direct.out;
}

TEST(OeSandbox, MemoryLimitStopsALargeAllocationOnly) {
  const Json c = {{"enforce", "required"}, {"limits", {{"memory_mb", 512}}}};
  const Outcome big = runSandbox(c, {OE_SANDBOX_PROBE, "alloc", "4096"});
  EXPECT_NE(big.out.find("alloc failed"), std::string::npos) << big.out << big.err;
  const Outcome small = runSandbox(c, {OE_SANDBOX_PROBE, "alloc", "64"});
  EXPECT_NE(small.out.find("alloc ok"), std::string::npos) << small.out << small.err;
}

TEST(OeSandbox, ProcessLimitStopsAForkBombEarly) {
  if (isKernelRoot() && !hasPerNamespacePidMax()) {
    GTEST_SKIP() << "root is exempt from RLIMIT_NPROC and this kernel has no per-namespace "
                    "pid_max (Linux < 6.14)";
  }
  const Json c = {{"enforce", "required"}, {"limits", {{"processes", 64}}}};
  const Outcome o = runSandbox(c, {OE_SANDBOX_PROBE, "fork", "10000"}, {}, 60s);
  ASSERT_FALSE(o.timed_out);
  EXPECT_EQ(o.exitCode(), 0) << o.out << o.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex("forked ([0-9]+)"))) << o.out << o.err;
  const int forked = std::stoi(m[1].str());
  EXPECT_GT(forked, 0);
  EXPECT_LT(forked, 64);  // the probe itself is one of the 64
  // Without the limit the same probe forks far more: the limit, not the machine, stopped it.
  const Outcome free = runSandbox({{"enforce", "required"}}, {OE_SANDBOX_PROBE, "fork", "200"});
  EXPECT_NE(free.out.find("forked 200"), std::string::npos) << free.out;
}

TEST(OeSandbox, CpuLimitKillsASpinningProgram) {
  const Json c = {{"enforce", "required"}, {"limits", {{"cpu_seconds", 1}}}};
  const Outcome o = runSandbox(c, {OE_SANDBOX_PROBE, "spin"}, {}, 30s);
  ASSERT_FALSE(o.timed_out);
  EXPECT_TRUE(o.signal() == SIGXCPU || o.signal() == SIGKILL) << o.status;
}

TEST(OeSandbox, FileSizeAndOpenFileLimitsHold) {
  test::TempDir dir;
  const Json c = {{"enforce", "required"}, {"limits", {{"file_size_mb", 1}, {"open_files", 16}}}};
  const Outcome big = runSandbox(c, {OE_SANDBOX_PROBE, "write", (dir / "f").string(), "4"});
  EXPECT_NE(big.out.find("write failed after 1 MB: File too large"), std::string::npos)
      << big.out;
  const Outcome files = runSandbox(c, {OE_SANDBOX_PROBE, "open", "100"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(files.out, m, std::regex("opened ([0-9]+)"))) << files.out;
  EXPECT_LT(std::stoi(m[1].str()), 16);
}

TEST(OeSandbox, EnvKeepDropsEverythingElse) {
  const std::map<std::string, std::string> env = {{"OPENAI_API_KEY", "sk-secret"}};
  const Outcome kept = runSandbox(
      {{"enforce", "required"}, {"env", {{"keep", {"PATH"}}, {"set", {{"LANG", "C.UTF-8"}}}}}},
      {OE_SANDBOX_PROBE, "env", "OPENAI_API_KEY", "PATH", "LANG"}, env);
  EXPECT_NE(kept.out.find("OPENAI_API_KEY=(unset)"), std::string::npos) << kept.out;
  EXPECT_NE(kept.out.find("PATH=" + std::string(std::getenv("PATH"))), std::string::npos)
      << kept.out;
  EXPECT_NE(kept.out.find("LANG=C.UTF-8"), std::string::npos) << kept.out;
  const Outcome unchanged =
      runSandbox({{"enforce", "required"}}, {OE_SANDBOX_PROBE, "env", "OPENAI_API_KEY"}, env);
  EXPECT_NE(unchanged.out.find("OPENAI_API_KEY=sk-secret"), std::string::npos) << unchanged.out;
}

TEST(OeSandbox, WithoutLandlockRequiredRefusesAndBestEffortRunsAndSaysSo) {
  test::TempDir dir;
  const std::map<std::string, std::string> env = {{"OE_SANDBOX_NO_LANDLOCK", "1"}};
  const Json fs_rules = {{"read", systemReads()}, {"write", {dir.path().string()}}};
  const std::string marker = (dir / "ran").string();
  const Outcome refused = runSandbox({{"enforce", "required"}, {"fs", fs_rules}},
                                     {"/bin/sh", "-c", "touch " + marker}, env);
  EXPECT_EQ(refused.exitCode(), 126);
  EXPECT_EQ(refused.err,
            "oe-sandbox: cannot enforce fs rules (OE_SANDBOX_NO_LANDLOCK=1 hides Landlock); the "
            "node's policy says enforce: required\n");
  EXPECT_FALSE(fs::exists(marker));
  const Outcome ran = runSandbox({{"enforce", "best_effort"}, {"fs", fs_rules}},
                                 {"/bin/sh", "-c", "touch " + marker}, env);
  EXPECT_EQ(ran.exitCode(), 0);
  EXPECT_EQ(ran.err, "oe-sandbox: not enforced: fs rules (OE_SANDBOX_NO_LANDLOCK=1 hides Landlock)\n");
  EXPECT_TRUE(fs::exists(marker));
}

TEST(OeSandbox, ExitCodesAndSignalsPassThrough) {
  const Json c = {{"enforce", "required"}};
  EXPECT_EQ(runSandbox(c, {OE_SANDBOX_PROBE, "exit", "42"}).exitCode(), 42);
  EXPECT_EQ(runSandbox(c, {OE_SANDBOX_PROBE, "signal", std::to_string(SIGTERM)}).signal(), SIGTERM);
  if (kernel().net_ns && kernel().pid_ns) {  // through the sandbox's init as well
    const Json ns = {{"enforce", "required"}, {"network", {{"mode", "none"}}}};
    EXPECT_EQ(runSandbox(ns, {OE_SANDBOX_PROBE, "exit", "42"}).exitCode(), 42);
    EXPECT_EQ(runSandbox(ns, {OE_SANDBOX_PROBE, "signal", std::to_string(SIGSEGV)}).signal(),
              SIGSEGV);
  }
  const Outcome bad = runSandbox({{"enforce", "maybe"}}, {OE_SANDBOX_PROBE, "exit", "0"});
  EXPECT_EQ(bad.exitCode(), 125);
  EXPECT_EQ(bad.err.rfind("oe-sandbox: confinement.enforce:", 0), 0u) << bad.err;
  const Outcome missing = runSandbox(c, {"oe-no-such-program-anywhere"});
  EXPECT_EQ(missing.exitCode(), 127);
  EXPECT_EQ(missing.err.rfind("oe-sandbox: program not found: oe-no-such-program-anywhere", 0), 0u)
      << missing.err;
}

TEST(OeSandbox, TmpIsFreshWritableAndRemovedAfter) {
  NEED_LANDLOCK();
  const Json c = {{"enforce", "required"},
                  {"fs", {{"read", systemReads()}, {"write", {"$TMP"}}}}};
  const Outcome o = runSandbox(
      c, {"/bin/sh", "-c",
          "echo TMPDIR=$TMPDIR TMP=$TMP TEMP=$TEMP; " OE_SANDBOX_PROBE " write $TMPDIR/f 1"});
  EXPECT_EQ(o.exitCode(), 0) << o.out << o.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex("TMPDIR=(/tmp/oe-attempt-[A-Za-z0-9]{6}) "
                                                     "TMP=(\\S+) TEMP=(\\S+)")))
      << o.out;
  EXPECT_EQ(m[2].str(), m[1].str());
  EXPECT_EQ(m[3].str(), m[1].str());
  EXPECT_NE(o.out.find("wrote 1 MB"), std::string::npos) << o.out;
  EXPECT_FALSE(fs::exists(m[1].str()));
}

TEST(OeSandbox, KillingTheGroupKillsTheConfinedProgram) {
  pid_t program = 0;
  const Outcome o = runSandbox(
      {{"enforce", "required"}}, {OE_SANDBOX_PROBE, "pid-then-spin"}, {}, 30s,
      [&program](const std::string& out, pid_t group) {
        if (program == 0 && out.find('\n') != std::string::npos) {
          program = std::stoi(out);
          kill(-group, SIGTERM);
        }
      });
  ASSERT_FALSE(o.timed_out);
  EXPECT_EQ(o.signal(), SIGTERM);
  ASSERT_GT(program, 0);
  EXPECT_NE(kill(program, 0), 0);  // reaped by oe-sandbox, gone
  EXPECT_EQ(errno, ESRCH);
}

TEST(OeSandbox, KillingTheGroupEndsEverythingInTheSandboxsNamespace) {
  NEED_NETNS();
  // The program's pid is its pid in the sandbox, so this test checks the outcome: oe-sandbox
  // ends with the signal and stdout closes (no process of the sandbox holds it open).
  bool sent = false;
  const Outcome o = runSandbox(
      {{"enforce", "required"}, {"network", {{"mode", "none"}}}},
      {"/bin/sh", "-c", "setsid sleep 1000 & " OE_SANDBOX_PROBE " pid-then-spin"}, {}, 30s,
      [&sent](const std::string& out, pid_t group) {
        if (!sent && out.find('\n') != std::string::npos) {
          sent = true;
          kill(-group, SIGTERM);
        }
      });
  ASSERT_FALSE(o.timed_out);
  EXPECT_TRUE(sent);
  EXPECT_EQ(o.signal(), SIGTERM) << o.status << o.err;
}

}  // namespace
}  // namespace oe::sandbox
