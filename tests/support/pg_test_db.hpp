// PostgreSQL for the tests (docs/testing.md): a real server from Debian's package, started by
// tests/support/pg_cluster.sh on a Unix socket, and one fresh database per test, dropped after.
// The suite's cluster is shared (ctest's pg_cluster fixture starts and stops it; a test binary
// run by hand starts it on first use); a test that restarts or stops the server makes its own.
// Link oe_pg to use it.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "oe/pg/connection.hpp"

namespace oe::test {

class PgCluster {
 public:
  // The build tree's shared cluster, started if it is not running (its folder is named in
  // <build>/pg-test-dir, so clones of the repository built at one path do not share one).
  static PgCluster& shared() {
    static PgCluster cluster = [] {
      const std::string command = std::string("bash '") + OE_SOURCE_DIR +
                                  "/tests/support/pg_cluster.sh' start-shared '" +
                                  OE_BINARY_DIR + "'";
      if (std::system(command.c_str()) != 0) {  // NOLINT(concurrency-mt-unsafe): test set-up
        throw std::runtime_error("cannot start the PostgreSQL test cluster: " + command);
      }
      std::ifstream in(std::string(OE_BINARY_DIR) + "/pg-test-dir");
      std::string dir;
      std::getline(in, dir);
      return PgCluster(dir, /*own=*/false, /*started=*/true);
    }();
    return cluster;
  }
  // A private cluster in `dir` (a fresh folder), stopped and removed by the destructor.
  static std::unique_ptr<PgCluster> privateIn(const std::filesystem::path& dir) {
    return std::unique_ptr<PgCluster>(new PgCluster(dir, /*own=*/true));
  }
  ~PgCluster() {
    if (own_) {
      (void)script("stop");
    }
  }
  PgCluster(const PgCluster&) = delete;
  PgCluster& operator=(const PgCluster&) = delete;
  PgCluster(PgCluster&&) = default;

  const std::filesystem::path& dir() const { return dir_; }
  // postgresql:///DB?host=<dir>&port=5432&user=postgres
  std::string url(const std::string& database = "postgres") const {
    return "postgresql:///" + database + "?host=" + dir_.string() + "&port=5432&user=postgres";
  }
  // The data folder's server: stop it (-m immediate: as a crash would) and start it again.
  void stopNow() const { run("pg_ctl -D '" + (dir_ / "data").string() + "' -m immediate -w stop"); }
  void start() const {
    if (script("start") != 0) {
      throw std::runtime_error("cannot start the PostgreSQL test cluster in " + dir_.string());
    }
  }

 private:
  PgCluster(std::filesystem::path dir, bool own, bool started = false)
      : dir_(std::move(dir)), own_(own) {
    if (!started) {
      start();
    }
  }

  int script(const std::string& verb) const {
    const std::string command = std::string("bash '") + OE_SOURCE_DIR +
                                "/tests/support/pg_cluster.sh' " + verb + " '" + dir_.string() +
                                "'";
    return std::system(command.c_str());  // NOLINT(concert-mt-unsafe): test set-up
  }
  void run(const std::string& pg_ctl_args) const {
    const std::string bindir = "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)";
    const std::string as_owner = geteuid() == 0 ? "runuser -u postgres -- " : "";
    const std::string command = as_owner + bindir + "/" + pg_ctl_args + " >/dev/null 2>&1";
    if (std::system(("bash -c \"" + command + "\"").c_str()) != 0) {  // NOLINT: test set-up
      throw std::runtime_error("failed: " + command);
    }
  }

  std::filesystem::path dir_;
  bool own_;
};

// A database of its own for one test, created in `cluster` and dropped (WITH FORCE: a worker
// the test killed may still hold a session) when the test ends.
class PgTestDb {
 public:
  explicit PgTestDb(PgCluster& cluster = PgCluster::shared()) : cluster_(cluster) {
    static std::atomic<int> counter{0};
    std::random_device random;
    name_ = "oe_t_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
            std::to_string(random() % 100000);
    auto admin = pg::Connection::open(cluster_.url());
    if (!admin) {
      throw std::runtime_error(admin.error().message);
    }
    if (auto made = (*admin)->exec("CREATE DATABASE " + pg::quoteIdentifier(name_)); !made) {
      throw std::runtime_error(made.error().message);
    }
  }
  ~PgTestDb() {
    auto admin = pg::Connection::open(cluster_.url());
    if (admin) {
      (void)(*admin)->exec("DROP DATABASE IF EXISTS " + pg::quoteIdentifier(name_) +
                           " WITH (FORCE)");
    }
  }
  PgTestDb(const PgTestDb&) = delete;
  PgTestDb& operator=(const PgTestDb&) = delete;

  std::string url() const { return cluster_.url(name_); }
  const std::string& name() const { return name_; }
  PgCluster& cluster() const { return cluster_; }

 private:
  PgCluster& cluster_;
  std::string name_;
};

}  // namespace oe::test
