// `oe serve` end to end: the built oe serving a temp root on a free port, driven over a plain
// HTTP/1.1 socket. A read token cannot start a run; a run started over HTTP finishes under its
// id; a server killed with -9 leaves its run's child running, and the next server watches it;
// a server stopped with SIGTERM stops its run (interrupted), and the next one resumes it. On a
// PostgreSQL store: the tokens hold, a run finishes, its state is read from the store and a
// DELETE removes it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "oe/common/json.hpp"
#include "oe/pg/connection.hpp"
#include "proc_kit/subprocess.hpp"
#include "support/pg_test_db.hpp"
#include "support/temp_dir.hpp"
#include "unit/service/service_support.hpp"

namespace oe::service {
namespace {

using namespace std::chrono_literals;
using test_support::logOf;
using test_support::waitUntil;

struct HttpReply {
  int status = 0;
  Json body;
};

// One request on a fresh connection (Connection: close), the whole reply read.
HttpReply http(uint16_t port, const std::string& method, const std::string& path,
               const std::string& body = "", const std::string& token = "") {
  HttpReply reply;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return reply;
  }
  std::string request = method + " " + path +
                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\n";
  if (!token.empty()) {
    request += "Authorization: Bearer " + token + "\r\n";
  }
  if (!body.empty() || method == "POST") {
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  (void)!::write(fd, request.data(), request.size());
  std::string text;
  char chunk[4096];
  for (ssize_t n = 0; (n = ::read(fd, chunk, sizeof chunk)) > 0;) {
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  std::smatch m;
  if (std::regex_search(text, m, std::regex("^HTTP/1\\.1 (\\d{3})"))) {
    reply.status = std::stoi(m[1]);
  }
  const auto blank = text.find("\r\n\r\n");
  if (blank != std::string::npos) {
    reply.body = Json::parse(text.substr(blank + 4), nullptr, false);
  }
  return reply;
}

std::string finishedStatus(const std::filesystem::path& exp, const std::string& run_id) {
  for (const auto& e : logOf(exp, run_id)) {
    if (e.value("type", "") == "run.finished") {
      return e.value("status", "");
    }
  }
  return "";
}

// `oe serve` in a group of its own, its stdout (the URL line) in a file.
class Served {
 public:
  Served(const std::filesystem::path& root, const std::vector<std::string>& extra) {
    out_ = root.parent_path() / ("serve-" + std::to_string(++count_) + ".out");
    prockit::UniqueFd out(::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    prockit::UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    prockit::SpawnRequest request;
    request.argv = {OE_EXE, "serve", "--listen", "127.0.0.1:0", "--root", root.string()};
    request.argv.insert(request.argv.end(), extra.begin(), extra.end());
    request.path = OE_EXE;
    request.fds = {{null_fd.get(), 0}, {out.get(), 1}, {out.get(), 2}};
    auto child = prockit::spawnChild(request);
    EXPECT_TRUE(child);
    pid_ = child ? child->pid : -1;
    std::smatch m;
    EXPECT_TRUE(waitUntil([&] {
      const std::string text = oe::test::readFile(out_);
      if (std::regex_search(text, m, std::regex("listening on http://127\\.0\\.0\\.1:(\\d+)"))) {
        port_ = static_cast<uint16_t>(std::stoi(m[1]));
        return true;
      }
      return false;
    })) << oe::test::readFile(out_);
  }
  ~Served() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      (void)prockit::reapChild(pid_);
    }
  }
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;

  [[nodiscard]] uint16_t port() const { return port_; }
  // Sends `signal_number` and waits for the exit status.
  int stop(int signal_number) {
    ::kill(pid_, signal_number);
    const int status = prockit::reapChild(pid_);
    pid_ = -1;
    return status;
  }
  [[nodiscard]] std::string output() const { return oe::test::readFile(out_); }

 private:
  static inline int count_ = 0;
  std::filesystem::path out_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::canonical(dir_.path()) / "root";
    std::filesystem::create_directories(root_);
  }
  std::filesystem::path experience(const std::string& name, bool blocking) {
    const auto sub = root_ / name;
    std::filesystem::create_directories(sub / "tools");
    std::ofstream(sub / "experience.yaml")
        << "name: " << name << "\nversion: 0.1.0\nstate:\n  schema:\n    done: { type: boolean }\n"
        << "graph:\n  nodes:\n    - { id: t, kind: tool, impl: ./tools/t.sh, writes: [done] }\n"
        << "  edges: []\n";
    const auto mark = root_.parent_path() / (name + "-mark");
    std::ofstream(sub / "tools" / "t.sh")
        << "#!/bin/sh\ncat > /dev/null\n"
        << (blocking ? "if [ ! -e '" + mark.string() + "' ]; then : > '" + mark.string() +
                           "'; while kill -0 $PPID 2>/dev/null; do sleep 0.1; done; exit 1; fi\n"
                     : std::string())
        << "printf '{\"state_delta\":{\"done\":true}}\\n'\n";
    std::filesystem::permissions(sub / "tools" / "t.sh", std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
    return sub;
  }
  [[nodiscard]] std::filesystem::path mark(const std::string& name) const {
    return root_.parent_path() / (name + "-mark");
  }

  // A token file with a read token (r-token-0123456789) and an admin one (a-token-0123456789),
  // readable by its owner alone: the server refuses a file of admin credentials others can read.
  std::filesystem::path tokenFile() {
    const auto tokens = dir_.write("tokens",
                                   "read viewer r-token-0123456789\n"
                                   "admin ops a-token-0123456789\n");
    std::filesystem::permissions(
        tokens, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return tokens;
  }

  oe::test::TempDir dir_;
  std::filesystem::path root_;
};

TEST_F(ServeTest, AReadTokenCannotStartARunAnAdminTokenCan) {
  const auto hello = experience("hello", false);
  const auto tokens = tokenFile();
  Served served(root_, {"--token-file", tokens.string()});
  EXPECT_EQ(http(served.port(), "GET", "/healthz").status, 200);
  const auto as_reader =
      http(served.port(), "POST", "/api/runs", R"({"experience":"hello"})", "r-token-0123456789");
  EXPECT_EQ(as_reader.status, 403) << as_reader.body.dump();
  EXPECT_FALSE(std::filesystem::exists(hello / ".openexpertise" / "runs"));
  const auto as_admin =
      http(served.port(), "POST", "/api/runs", R"({"experience":"hello"})", "a-token-0123456789");
  ASSERT_EQ(as_admin.status, 202) << as_admin.body.dump();
  const std::string id = as_admin.body["id"];
  EXPECT_TRUE(waitUntil([&] { return finishedStatus(hello, id) == "success"; })) << served.output();
}

TEST_F(ServeTest, AServerKilledWithNineLeavesItsRunToTheNextWhichWatchesAndCancelsIt) {
  const auto slow = experience("slow", true);
  std::string id;
  {
    Served first(root_, {});
    const auto posted = http(first.port(), "POST", "/api/runs", R"({"experience":"slow"})");
    ASSERT_EQ(posted.status, 202) << posted.body.dump();
    id = posted.body["id"];
    ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(mark("slow")); }));
    first.stop(SIGKILL);
  }
  EXPECT_EQ(finishedStatus(slow, id), "") << "the run's child outlived its server";
  Served second(root_, {});
  EXPECT_NE(second.output().find("outlived the server"), std::string::npos) << second.output();
  const auto cancelled = http(second.port(), "POST", "/api/runs/" + id + "/cancel");
  EXPECT_EQ(cancelled.status, 202) << cancelled.body.dump();
  EXPECT_TRUE(waitUntil([&] { return finishedStatus(slow, id) == "interrupted"; }));
}

TEST_F(ServeTest, SigtermStopsTheRunsAndTheNextServerResumesThem) {
  const auto slow = experience("slow", true);
  std::string id;
  {
    Served first(root_, {});
    const auto posted = http(first.port(), "POST", "/api/runs", R"({"experience":"slow"})");
    ASSERT_EQ(posted.status, 202) << posted.body.dump();
    id = posted.body["id"];
    ASSERT_TRUE(waitUntil([&] { return std::filesystem::exists(mark("slow")); }));
    const int status = first.stop(SIGTERM);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << first.output();
  }
  EXPECT_EQ(finishedStatus(slow, id), "interrupted");
  Served second(root_, {});
  std::string next;
  EXPECT_TRUE(waitUntil([&] {
    for (const auto& e : std::filesystem::directory_iterator(slow / ".openexpertise/runs")) {
      const auto stem = e.path().stem().string();
      if (stem != id && e.path().extension() == ".jsonl" && finishedStatus(slow, stem) != "") {
        next = stem;
        return true;
      }
    }
    return false;
  })) << second.output();
  EXPECT_EQ(finishedStatus(slow, next), "success");
}

TEST_F(ServeTest, OnAPostgresStoreARunStartedWithTheAdminTokenIsReadFromTheStoreAndDeleted) {
  oe::test::PgTestDb db;
  const auto hello = experience("hello", false);
  const auto tokens = tokenFile();
  Served served(root_, {"--store", db.url(), "--token-file", tokens.string()});
  const std::string reader = "r-token-0123456789";
  const std::string admin = "a-token-0123456789";

  EXPECT_EQ(http(served.port(), "GET", "/api/runs").status, 401);
  EXPECT_EQ(http(served.port(), "POST", "/api/runs", R"({"experience":"hello"})").status, 401);
  const auto as_reader =
      http(served.port(), "POST", "/api/runs", R"({"experience":"hello"})", reader);
  EXPECT_EQ(as_reader.status, 403) << as_reader.body.dump();
  const auto as_admin =
      http(served.port(), "POST", "/api/runs", R"({"experience":"hello"})", admin);
  ASSERT_EQ(as_admin.status, 202) << as_admin.body.dump();
  const std::string id = as_admin.body["id"];

  HttpReply run;
  ASSERT_TRUE(waitUntil([&] {
    run = http(served.port(), "GET", "/api/runs/" + id, "", reader);
    return run.status == 200 && run.body.value("status", "") == "succeeded";
  })) << run.status << " " << run.body.dump() << "\n" << served.output();

  // The state as the run left it, read from the store: the scope's rows, not a local file.
  const auto state = http(served.port(), "GET", "/api/runs/" + id + "/state", "", reader);
  ASSERT_EQ(state.status, 200) << state.body.dump();
  EXPECT_EQ(state.body["state"]["done"], true) << state.body.dump();
  EXPECT_FALSE(std::filesystem::exists(hello / ".openexpertise" / "state.sqlite"));
  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn) << conn.error().message;
  auto rows = (*conn)->exec("SELECT count(*) FROM oe_runs WHERE run_id = $1", {id});
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->int64(0, 0), 1);

  EXPECT_EQ(http(served.port(), "DELETE", "/api/runs/" + id, "", reader).status, 403);
  // The log says succeeded a moment before the child has exited and left the queue: until then
  // the run is still running there, and DELETE says so (409).
  HttpReply deleted;
  EXPECT_TRUE(waitUntil([&] {
    deleted = http(served.port(), "DELETE", "/api/runs/" + id, "", admin);
    return deleted.status != 409;
  }));
  EXPECT_EQ(deleted.status, 200) << deleted.body.dump();
  EXPECT_EQ(deleted.body["deleted"], true);
  EXPECT_EQ(http(served.port(), "GET", "/api/runs/" + id, "", reader).status, 404);
  EXPECT_EQ(http(served.port(), "DELETE", "/api/runs/" + id, "", admin).status, 404);
  rows = (*conn)->exec(
      "SELECT (SELECT count(*) FROM oe_runs WHERE run_id = $1) + (SELECT count(*) FROM "
      "oe_events WHERE run_id = $1)",
      {id});
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->int64(0, 0), 0) << "the run's record and lines went from the store";
  EXPECT_FALSE(std::filesystem::exists(hello / ".openexpertise" / "runs" / (id + ".jsonl")));
}

}  // namespace
}  // namespace oe::service
