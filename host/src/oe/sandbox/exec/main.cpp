// oe-sandbox: runs one program under a confinement the kernel enforces (docs/policy.md, "How
// oe-sandbox enforces a policy"). It stays as the supervisor: forwards signals, waits, removes
// the attempt's $TMP and exits as the program did.
//
//   oe-sandbox --confinement '<json>' -- PROGRAM [ARGS...]
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "oe/sandbox/confine.hpp"
#include "oe/sandbox/confinement.hpp"
#include "oe/sandbox/kernel.hpp"

extern char** environ;

namespace {

using namespace oe::sandbox;

constexpr int kExitBadConfinement = 125;
constexpr int kExitRefused = 126;
constexpr int kExitNotFound = 127;

// The pid a caught signal is passed on to. A signal handler can reach nothing else, hence the
// one global.
volatile sig_atomic_t g_forward_to = 0;

void forwardSignal(int sig) {
  if (g_forward_to > 0) {
    kill(g_forward_to, sig);
  }
}

constexpr std::array<int, 4> kForwarded = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

sigset_t forwardedSet() {
  sigset_t set;
  sigemptyset(&set);
  for (const int sig : kForwarded) {
    sigaddset(&set, sig);
  }
  return set;
}

void blockForwarded() {
  const sigset_t set = forwardedSet();
  sigprocmask(SIG_BLOCK, &set, nullptr);
}

void unblockForwarded() {
  const sigset_t set = forwardedSet();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

// From here on the signals the caller sends reach `pid` (the program, or the sandbox's init).
void forwardSignalsTo(pid_t pid) {
  g_forward_to = pid;
  struct sigaction sa {};
  sa.sa_handler = forwardSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (const int sig : kForwarded) {
    sigaction(sig, &sa, nullptr);
  }
  unblockForwarded();
}

void say(const std::string& line) {
  const std::string text = "oe-sandbox: " + line + "\n";
  (void)!write(STDERR_FILENO, text.data(), text.size());
}

struct Context {
  Confinement confinement;
  StartPlan plan;
  KernelFeatures kernel;
  bool kernel_root = false;
  std::string program;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string tmp_dir;
  int status_fd = -1;  // the write end init reports the program's wait status on
  uid_t uid = 0;
  gid_t gid = 0;
};

// A rule the kernel would not enforce: refused under `required` (one line, exit 126, nothing
// run), said and passed over under `best_effort`.
void shortfall(const Context& ctx, const Shortfall& s) {
  if (ctx.confinement.enforce == Enforce::kRequired) {
    say("cannot enforce " + s.rule + " (" + s.reason +
        "); the node's policy says enforce: required");
    _exit(kExitRefused);
  }
  say("not enforced: " + s.rule + " (" + s.reason + ")");
}

void shortfalls(const Context& ctx, const std::vector<Shortfall>& list) {
  for (const Shortfall& s : list) {
    shortfall(ctx, s);
  }
}

// The program's side: rlimits, no_new_privs, Landlock, exec. Never returns.
[[noreturn]] void confineAndExec(Context& ctx) {
  const Confinement& c = ctx.confinement;
  shortfalls(ctx, applyRlimits(c.limits, c.limits.processes.has_value() && !ctx.kernel_root));
  if (auto r = setNoNewPrivs(); !r) {
    shortfall(ctx, {"no_new_privs", r.error().message});
  }
  if (ctx.plan.landlock) {
    if (auto r = restrictFilesystem(*c.fs, ctx.tmp_dir, ctx.kernel.landlock_abi); !r) {
      shortfall(ctx, {"fs rules", r.error().message});
    }
  }
  // The descriptors the caller handed over go on to the program (a Node.js tool worker talks on
  // 3 and 4): the caller decides what it passes (proc-kit maps only what the child needs), and
  // every descriptor oe-sandbox opens itself is close-on-exec.
  std::vector<char*> args;
  for (std::string& a : ctx.argv) {
    args.push_back(a.data());
  }
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : ctx.env) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  execve(ctx.program.c_str(), args.data(), envp.data());
  const int err = errno;
  say("cannot run " + ctx.program + ": " + std::strerror(err));
  _exit(err == ENOENT ? kExitNotFound : kExitRefused);
}

// The sandbox's init (pid 1 of its PID namespace): user ids, mounts, loopback, the proxy
// forwarder and the pid window, then the program as its child. It passes signals on, reaps
// whatever is orphaned to it, and reports the program's wait status; its exit takes every
// process left in the namespace with it.
[[noreturn]] void initMain(Context& ctx) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const Confinement& c = ctx.confinement;
  const NamespaceSet& ns = ctx.plan.namespaces;
  if (ns.user) {
    if (auto r = writeOwnIdMaps(ctx.uid, ctx.gid); !r) {
      shortfalls(ctx, namespaceShortfalls(c, ctx.plan.pid_limit, r.error().message));
    }
  }
  if (ns.mount) {
    if (auto r = makePathsReadOnly(c.fs->read_only); !r) {
      shortfall(ctx, {"fs.read_only", r.error().message});
    }
  }
  const std::string net_rule = "network mode " + std::string(networkModeName(c.network.mode));
  if (ns.net && c.network.mode != NetworkMode::kNone) {
    if (auto r = bringLoopbackUp(); !r) {
      shortfall(ctx, {net_rule, r.error().message});
    }
  }
  if (ns.net && c.network.mode == NetworkMode::kProxy) {
    auto listener = listenOnLoopback();
    if (!listener) {
      shortfall(ctx, {net_rule, listener.error().message});
    } else {
      const pid_t forwarder = fork();
      if (forwarder == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(ctx.status_fd);
        runForwarder(listener->fd, c.network.proxy_socket);
      }
      close(listener->fd);
      if (forwarder < 0) {
        shortfall(ctx, {net_rule, std::string("fork: ") + std::strerror(errno)});
      } else {
        const std::string url = "http://127.0.0.1:" + std::to_string(listener->port);
        for (const char* name :
             {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"}) {
          setVariable(ctx.env, name, url);
        }
        unsetVariable(ctx.env, "NO_PROXY");
        unsetVariable(ctx.env, "no_proxy");
      }
    }
  }
  if (ctx.plan.pid_limit) {
    if (auto r = limitPidNamespace(*c.limits.processes); !r) {
      shortfall(ctx, {"limits.processes", r.error().message});
    }
  }
  blockForwarded();
  const pid_t program = fork();
  if (program < 0) {
    say(std::string("fork: ") + std::strerror(errno));
    _exit(kExitRefused);
  }
  if (program == 0) {
    close(ctx.status_fd);
    unblockForwarded();
    confineAndExec(ctx);
  }
  forwardSignalsTo(program);
  int status = 0;
  for (;;) {
    int s = 0;
    const pid_t done = wait(&s);
    if (done == program) {
      status = s;
      break;
    }
    if (done < 0 && errno != EINTR) {
      _exit(kExitRefused);
    }
  }
  (void)!write(ctx.status_fd, &status, sizeof status);
  _exit(0);
}

// Removes the attempt's $TMP even where the program took its own permissions away.
void removeTree(const std::string& dir) {
  nftw(
      dir.c_str(),
      [](const char* path, const struct stat* st, int type, FTW*) {
        if (type == FTW_D || type == FTW_DNR) {
          chmod(path, (st->st_mode & 07777) | S_IRWXU);
        }
        return 0;
      },
      16, FTW_PHYS);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) {
    say("could not remove " + dir + ": " + ec.message());
  }
}

// Ends oe-sandbox as the program ended: its exit code, or the same signal.
[[noreturn]] void exitAs(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // the program's core, if any, is the program's business
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
    std::exit(128 + sig);
  }
  std::exit(WIFEXITED(status) ? WEXITSTATUS(status) : kExitRefused);
}

int usage(const std::string& why) {
  say(why + "; usage: oe-sandbox --confinement '<json>' -- PROGRAM [ARGS...]");
  return kExitBadConfinement;
}

}  // namespace

int main(int argc, char** argv) {
  std::string confinement_text;
  bool have_confinement = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--confinement" && i + 1 < argc) {
      confinement_text = argv[++i];
      have_confinement = true;
    } else if (arg.rfind("--confinement=", 0) == 0) {
      confinement_text = arg.substr(std::strlen("--confinement="));
      have_confinement = true;
    } else {
      return usage("unknown argument " + arg);
    }
  }
  if (!have_confinement) {
    return usage("no --confinement");
  }
  if (i >= argc) {
    return usage("no program after --");
  }
  const oe::Json json = oe::Json::parse(confinement_text, nullptr, false);
  if (json.is_discarded()) {
    say("--confinement is not valid JSON");
    return kExitBadConfinement;
  }
  auto parsed = fromJson(json);
  if (!parsed) {
    say(parsed.error().message);
    return kExitBadConfinement;
  }

  Context ctx;
  ctx.confinement = std::move(parsed).value();
  const Confinement& c = ctx.confinement;
  // Only Landlock is asked in advance: probing the namespaces would create each of them in a
  // throwaway child (a network namespace costs milliseconds), and the clone below reports a
  // refusal just as well.
  ctx.kernel.landlock_abi = landlockAbi(ctx.kernel.landlock_note);
  ctx.kernel_root = isKernelRoot();
  ctx.uid = geteuid();
  ctx.gid = getegid();
  ctx.argv.assign(argv + i, argv + argc);
  ctx.env = confinedEnvironment(c.env, environ);
  const auto program = findProgram(ctx.argv.front(), ctx.env);
  if (!program) {
    say("program not found: " + ctx.argv.front() + " (not an executable file, nor on PATH)");
    return kExitNotFound;
  }
  ctx.program = *program;

  ctx.plan = planStart(c, ctx.kernel, ctx.kernel_root, geteuid());
  shortfalls(ctx, ctx.plan.shortfalls);

  if (c.fs &&
      std::find(c.fs->write.begin(), c.fs->write.end(), kTmpPlaceholder) != c.fs->write.end()) {
    std::string pattern = "/tmp/oe-attempt-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      say(std::string("cannot create the attempt's $TMP under /tmp: ") + std::strerror(errno));
      return kExitRefused;
    }
    ctx.tmp_dir = pattern;
    for (const char* name : {"TMPDIR", "TMP", "TEMP"}) {
      setVariable(ctx.env, name, ctx.tmp_dir);
    }
  }

  int status_pipe[2] = {-1, -1};
  if (ctx.plan.namespaces.any() && pipe2(status_pipe, O_CLOEXEC) != 0) {
    say(std::string("pipe: ") + std::strerror(errno));
    return kExitRefused;
  }
  ctx.status_fd = status_pipe[1];

  blockForwarded();
  // A raw clone, fork-like (no new stack), so the child starts in its new namespaces; the child
  // never uses glibc's cached thread id (no raise or pthread_kill), which a raw clone leaves stale.
  const int flags = ctx.plan.namespaces.cloneFlags();
  long child = syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (child < 0 && flags != 0) {
    const std::string reason = std::string("clone with new namespaces: ") + std::strerror(errno);
    if (c.enforce == Enforce::kRequired && !ctx.tmp_dir.empty()) {
      removeTree(ctx.tmp_dir);  // the refusal below exits at once
    }
    shortfalls(ctx, namespaceShortfalls(c, ctx.plan.pid_limit, reason));
    if (ctx.plan.pid_limit) {
      ctx.plan.pid_limit = false;
    }
    ctx.plan.namespaces = NamespaceSet{};
    close(status_pipe[0]);
    close(status_pipe[1]);
    status_pipe[0] = status_pipe[1] = ctx.status_fd = -1;
    child = syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, 0);
  }
  if (child < 0) {
    say(std::string("fork: ") + std::strerror(errno));
    return kExitRefused;
  }
  if (child == 0) {
    unblockForwarded();
    if (status_pipe[0] >= 0) {
      close(status_pipe[0]);
    }
    if (ctx.plan.namespaces.pid) {
      initMain(ctx);
    }
    confineAndExec(ctx);
  }
  forwardSignalsTo(static_cast<pid_t>(child));
  if (status_pipe[1] >= 0) {
    close(status_pipe[1]);
  }
  int status = 0;
  while (waitpid(static_cast<pid_t>(child), &status, 0) < 0) {
    if (errno != EINTR) {
      say(std::string("waitpid: ") + std::strerror(errno));
      status = kExitRefused << 8;
      break;
    }
  }
  if (status_pipe[0] >= 0) {
    int program_status = 0;
    ssize_t n = 0;
    do {
      n = read(status_pipe[0], &program_status, sizeof program_status);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof program_status)) {
      status = program_status;  // else init ended first (a refusal, or killed): its status
    }
    close(status_pipe[0]);
  }
  if (!ctx.tmp_dir.empty()) {
    removeTree(ctx.tmp_dir);
  }
  exitAs(status);
}
