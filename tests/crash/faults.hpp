// The faults the crash harness injects, and the machinery some of them need: a small tmpfs that
// can be filled to the last byte for a moment (a full disk), and a private PostgreSQL cluster
// that can be restarted as a crash would (`pg_ctl stop -m immediate`, then start).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crash/proc.hpp"
#include "support/tcp_proxy.hpp"

namespace oe::crash {

enum class FaultKind {
  kSigkill,        // the coordinator (`oe run`/`oe resume`) killed with SIGKILL
  kSigint,         // ... interrupted with SIGINT (Ctrl-C); it must end, exit 130
  kDiskFull,       // the experience's file system full for `hold`, then freed
  kBudget,         // the first run gets a token budget too small for its agents
  kWorkerKill,     // PostgreSQL: an `oe worker` killed with SIGKILL (a new one starts)
  kWorkerStop,     // PostgreSQL: an `oe worker` stopped (SIGSTOP) past its lease, then SIGCONT
  kServerRestart,  // PostgreSQL: the server stopped -m immediate and started again
  // PostgreSQL: a connection cut in the middle of a statement, through the TCP proxy between
  // every oe process and the server (tests/support/tcp_proxy.hpp): the next statement any of
  // them sends within `hold` reaches the server torn in half and both sides are closed, or
  // (`lose_reply`) runs to its end and the connection is closed before its reply arrives.
  kConnectionCut,
};

std::string faultName(FaultKind kind);
// Why a planned fault of this kind was not injected: the process had ended first, or (a
// connection cut) no statement came while it was armed.
std::string missedReason(FaultKind kind);
// Ends the step's process (the next step resumes it).
bool endsStep(FaultKind kind);

struct FaultEvent {
  FaultKind kind = FaultKind::kSigkill;
  Ms at{0};     // after the step's process started, or after the trigger below
  int after_finishes = 0;  // > 0: once the process's log has this many node.finished lines
  Ms hold{0};   // kDiskFull: how long the disk stays full
  int worker = 0;
  bool lose_reply = false;  // kConnectionCut: the statement runs and its reply is lost instead
};

// One process of a case: `oe run` (step 0) or `oe resume --last`, with the faults it gets.
struct Step {
  std::vector<FaultEvent> events;  // by time; a terminal event is the last
  int64_t max_tokens = -1;         // kBudget on step 0
};

enum class Store { kSqlite, kPostgres };

struct FaultOptions {
  Store store = Store::kSqlite;
  bool disk_full = false;  // a DiskFull is set up
  // The case has pipelines, loops or nested experiences: a node that a full disk fails does not
  // stop them, they run on the state the failure left, and `oe resume` runs them again on the
  // complete state (their items then land twice, as documented for new inputs). No disk-full
  // fault is drawn for such a case (docs/testing.md, "The crash harness").
  bool runs_on_partial_state = false;
  int agent_nodes = 0;
  Ms scale{1000};          // the oracle's duration: fault times are fractions of it
  // How many node calls the oracle finished: most faults are triggered by the faulted run's own
  // log, right after its k-th node.finished line (where a write has landed and the run goes
  // on), which a time alone rarely hits on a machine whose start-up time varies.
  int finishes = 0;
};

// The fault schedule of a case: a function of the seed and of what the case can take.
std::vector<Step> planFaults(uint64_t seed, const FaultOptions& options);

// A tmpfs of `size_mb` mounted at `mountpoint` in a private mount namespace of this process
// (and of every process it starts from then on). As root: unshare(CLONE_NEWNS); otherwise a
// user namespace too, mapping this user to root in it (unprivileged user namespaces must be
// allowed, as on Debian 12). Must be called before the process starts any thread.
class DiskFull {
 public:
  static std::unique_ptr<DiskFull> setUp(const std::filesystem::path& mountpoint, int size_mb,
                                         std::string* why_not);
  ~DiskFull();
  DiskFull(const DiskFull&) = delete;
  DiskFull& operator=(const DiskFull&) = delete;

  [[nodiscard]] const std::filesystem::path& root() const { return root_; }
  // Takes every free byte (a file sized to the free space); false when it could not.
  bool fill();
  void release();

 private:
  explicit DiskFull(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
  int filler_ = -1;
};

// A private PostgreSQL cluster for the harness (tests/support/pg_cluster.sh), one database per
// case. Stopped and removed by the destructor.
class PgServer {
 public:
  static std::unique_ptr<PgServer> start(const std::filesystem::path& dir, std::string* error);
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // Straight to the server's socket (the harness's own set-up and checks).
  [[nodiscard]] std::string url(const std::string& database = "postgres") const;
  // Through the proxy: what every oe process of a case connects with.
  [[nodiscard]] std::string clientUrl(const std::string& database) const;
  // kConnectionCut: the next statement any client sends is cut mid-message (or, `lose_reply`,
  // runs and loses its reply) until disarmCut(), which says whether one was.
  void armCut(bool lose_reply);
  bool disarmCut();
  bool createDatabase(const std::string& name, std::string* error);
  void dropDatabase(const std::string& name);
  // pg_ctl stop -m immediate (every session cut, as a crash would), then start again.
  bool restartImmediate(std::string* error);

 private:
  explicit PgServer(std::filesystem::path dir) : dir_(std::move(dir)) {}
  int script(const std::string& verb) const;
  std::filesystem::path dir_;
  std::unique_ptr<test::TcpProxy> proxy_;
  int64_t cuts_before_ = 0;
};

}  // namespace oe::crash
