// Fault plans, the full disk and the private PostgreSQL cluster (faults.hpp).
#include "crash/faults.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "crash/rng.hpp"
#include "oe/pg/connection.hpp"

namespace oe::crash {

std::string faultName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kSigkill:
      return "SIGKILL";
    case FaultKind::kSigint:
      return "SIGINT";
    case FaultKind::kDiskFull:
      return "disk-full";
    case FaultKind::kBudget:
      return "budget";
    case FaultKind::kWorkerKill:
      return "worker-kill";
    case FaultKind::kWorkerStop:
      return "worker-stop";
    case FaultKind::kServerRestart:
      return "pg-restart";
    case FaultKind::kConnectionCut:
      return "connection-cut";
    default:
      return "?";
  }
}

std::string missedReason(FaultKind kind) {
  return kind == FaultKind::kConnectionCut ? "no statement was sent while it was armed"
                                           : "the process had ended";
}

bool endsStep(FaultKind kind) { return kind == FaultKind::kSigkill || kind == FaultKind::kSigint; }

std::vector<Step> planFaults(uint64_t seed, const FaultOptions& options) {
  Rng rng(seed * 0x2545f4914f6cdd1dULL + 0xfa17);  // a stream of its own: not the case's
  std::vector<std::pair<FaultKind, int>> weights;
  if (options.store == Store::kSqlite) {
    weights = {{FaultKind::kSigkill, 45}, {FaultKind::kSigint, 30}};
    if (options.disk_full && !options.runs_on_partial_state) {
      weights.emplace_back(FaultKind::kDiskFull, 25);
    }
  } else {
    weights = {{FaultKind::kSigkill, 25},    {FaultKind::kSigint, 15},
               {FaultKind::kWorkerKill, 20}, {FaultKind::kWorkerStop, 15},
               {FaultKind::kServerRestart, 15}, {FaultKind::kConnectionCut, 15}};
  }
  int total = 0;
  for (const auto& [kind, weight] : weights) {
    total += weight;
  }
  auto draw = [&] {
    int x = rng.below(total);
    for (const auto& [kind, weight] : weights) {
      if (x < weight) {
        return kind;
      }
      x -= weight;
    }
    return weights.front().first;
  };
  std::vector<Step> steps(static_cast<size_t>(rng.range(1, 3)));
  for (size_t s = 0; s < steps.size(); ++s) {
    // A resume has less left to do: its faults come earlier.
    const int64_t span = options.scale.count() * (s == 0 ? 100 : 70) / 100;
    const int count = rng.range(1, 2);
    for (int e = 0; e < count; ++e) {
      FaultEvent event;
      event.kind = draw();
      event.at = Ms(span * rng.below(1000) / 1000);
      if (options.finishes > 0 && rng.chance(65)) {
        event.after_finishes = rng.range(1, options.finishes);
        event.at = Ms(rng.below(3) == 0 ? rng.range(1, 15) : 0);
      }
      event.hold = Ms(rng.range(20, 300));
      event.worker = rng.below(2);
      if (event.kind == FaultKind::kConnectionCut) {
        event.lose_reply = rng.chance(50);
      }
      steps[s].events.push_back(event);
    }
    // Triggered ones after timed ones of the same step; in order of what triggers them.
    std::sort(steps[s].events.begin(), steps[s].events.end(),
              [](const FaultEvent& a, const FaultEvent& b) {
                return std::make_pair(a.after_finishes, a.at) <
                       std::make_pair(b.after_finishes, b.at);
              });
    auto terminal = std::find_if(steps[s].events.begin(), steps[s].events.end(),
                                 [](const FaultEvent& e) { return endsStep(e.kind); });
    if (terminal != steps[s].events.end()) {
      steps[s].events.erase(terminal + 1, steps[s].events.end());
    }
  }
  if (options.agent_nodes > 0 && rng.chance(25)) {
    // An agent call reserves about its prompt's bytes plus max_tokens (64): ~300 tokens.
    steps[0].max_tokens = rng.below(options.agent_nodes * 300 + 1);
  }
  return steps;
}

// ---- DiskFull ------------------------------------------------------------------------------

namespace {

bool writeProc(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

}  // namespace

std::unique_ptr<DiskFull> DiskFull::setUp(const std::filesystem::path& mountpoint, int size_mb,
                                          std::string* why_not) {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (uid == 0) {
    if (unshare(CLONE_NEWNS) != 0) {
      *why_not = std::string("unshare(CLONE_NEWNS) failed: ") + std::strerror(errno);
      return nullptr;
    }
  } else {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      *why_not = std::string("unshare(CLONE_NEWUSER|CLONE_NEWNS) failed (are unprivileged user "
                             "namespaces allowed?): ") +
                 std::strerror(errno);
      return nullptr;
    }
    if (!writeProc("/proc/self/setgroups", "deny") ||
        !writeProc("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !writeProc("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
      *why_not = std::string("cannot map this user in its new user namespace: ") +
                 std::strerror(errno);
      return nullptr;
    }
  }
  // Our mounts stay ours: nothing propagates back to the machine's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *why_not = std::string("cannot make / private in the new mount namespace: ") +
               std::strerror(errno);
    return nullptr;
  }
  std::error_code ec;
  std::filesystem::create_directories(mountpoint, ec);
  const std::string options = "size=" + std::to_string(size_mb) + "m,mode=0755";
  if (mount("oe-crash-disk", mountpoint.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
            options.c_str()) != 0) {
    *why_not = "cannot mount a tmpfs on " + mountpoint.string() + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<DiskFull>(new DiskFull(mountpoint));
}

DiskFull::~DiskFull() {
  release();
  (void)umount2(root_.c_str(), MNT_DETACH);
}

bool DiskFull::fill() {
  release();
  const auto path = root_ / ".filler";
  filler_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (filler_ < 0) {
    return false;
  }
  (void)unlink(path.c_str());  // the space is freed when the descriptor closes
  struct statvfs fs {};
  if (fstatvfs(filler_, &fs) != 0) {
    return false;
  }
  // The free blocks, then whatever a page or two of rounding left: ENOSPC is the goal.
  off_t size = static_cast<off_t>(fs.f_bavail) * static_cast<off_t>(fs.f_frsize);
  if (size > 0 && fallocate(filler_, 0, 0, size) != 0) {
    size = 0;
  }
  for (off_t chunk = 1 << 20; chunk >= 4096; chunk /= 2) {
    while (fallocate(filler_, 0, size, chunk) == 0) {
      size += chunk;
    }
  }
  return true;
}

void DiskFull::release() {
  if (filler_ >= 0) {
    close(filler_);
    filler_ = -1;
  }
}

// ---- PgServer ------------------------------------------------------------------------------

std::unique_ptr<PgServer> PgServer::start(const std::filesystem::path& dir, std::string* error) {
  auto server = std::unique_ptr<PgServer>(new PgServer(dir));
  if (server->script("start") != 0) {
    *error = "cannot start a PostgreSQL cluster in " + dir.string() + " (" +
             OE_PG_CLUSTER_SCRIPT + " start): is Debian's postgresql package installed?";
    server->dir_.clear();  // nothing to stop
    return nullptr;
  }
  server->proxy_ = test::TcpProxy::toPostgres(dir);
  return server;
}

PgServer::~PgServer() {
  if (!dir_.empty()) {
    (void)script("stop");
  }
}

int PgServer::script(const std::string& verb) const {
  const std::string command = std::string("bash '") + OE_PG_CLUSTER_SCRIPT + "' " + verb + " '" +
                              dir_.string() + "' >/dev/null 2>&1";
  return std::system(command.c_str());  // NOLINT(concurrency-mt-unsafe): harness set-up
}

std::string PgServer::url(const std::string& database) const {
  return "postgresql:///" + database + "?host=" + dir_.string() + "&port=5432&user=postgres";
}

std::string PgServer::clientUrl(const std::string& database) const {
  return proxy_->pgUrl(database);
}

void PgServer::armCut(bool lose_reply) {
  cuts_before_ = proxy_->counters().fired;
  proxy_->on("", lose_reply ? test::TcpProxy::Action::kLoseReply : test::TcpProxy::Action::kCut);
}

bool PgServer::disarmCut() {
  proxy_->disarm();
  return proxy_->counters().fired > cuts_before_;
}

bool PgServer::createDatabase(const std::string& name, std::string* error) {
  auto admin = pg::Connection::open(url());
  if (!admin) {
    *error = admin.error().message;
    return false;
  }
  if (auto made = (*admin)->exec("CREATE DATABASE " + pg::quoteIdentifier(name)); !made) {
    *error = made.error().message;
    return false;
  }
  return true;
}

void PgServer::dropDatabase(const std::string& name) {
  if (auto admin = pg::Connection::open(url())) {
    (void)(*admin)->exec("DROP DATABASE IF EXISTS " + pg::quoteIdentifier(name) + " WITH (FORCE)");
  }
}

bool PgServer::restartImmediate(std::string* error) {
  const std::string bindir = "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)";
  const std::string as_owner = geteuid() == 0 ? "runuser -u postgres -- " : "";
  const std::string stop = "bash -c \"" + as_owner + bindir + "/pg_ctl -D '" +
                           (dir_ / "data").string() + "' -m immediate -w stop\" >/dev/null 2>&1";
  if (std::system(stop.c_str()) != 0) {  // NOLINT(concurrency-mt-unsafe)
    *error = "pg_ctl stop -m immediate failed";
  }
  if (script("start") != 0) {
    *error = "the PostgreSQL cluster in " + dir_.string() + " did not start again";
    return false;
  }
  return true;
}

}  // namespace oe::crash
