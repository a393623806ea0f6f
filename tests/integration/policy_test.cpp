// `policy:` end to end (docs/policy.md, issue 24 §1): real `oe run`, real tools, the real
// kernel. Each thing a confined tool must not do is refused by the kernel or absent, the run says
// which rule refused it (the node's error and policy.denied), and the rest of the run goes on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "integration/oe_fixture.hpp"

namespace oe::test {
namespace {

// A TCP server on 127.0.0.1 (port 0) that echoes what it reads; counts the connections it
// accepted, so a test can tell that a refused client never reached it.
class EchoServer {
 public:
  EchoServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || ::pipe(stop_) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~EchoServer() {
    if (thread_.joinable()) {
      (void)!::write(stop_[1], "x", 1);
      thread_.join();
    }
    for (int fd : {fd_, stop_[0], stop_[1]}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] int accepted() const { return accepted_.load(); }

 private:
  void serve() {
    while (true) {
      pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 || (fds[1].revents & POLLIN) != 0) {
        return;
      }
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) {
        continue;
      }
      ++accepted_;
      char buffer[4096];
      ssize_t n = 0;
      while ((n = ::read(client, buffer, sizeof buffer)) > 0) {
        if (::write(client, buffer, static_cast<size_t>(n)) != n) {
          break;
        }
      }
      ::close(client);
    }
  }

  int fd_ = -1;
  int stop_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

class Policy : public OeTest {
 protected:
  // The node's node.failed error in run `run_id`, or "" when it did not fail.
  std::string failure(const nlohmann::json& summary, const std::string& node) {
    for (const auto& e : events(summary.value("run_id", ""))) {
      if (e.value("type", "") == "node.failed" && e.value("node_id", "") == node) {
        return e.value("error", "");
      }
    }
    return "";
  }
  // The rules of the node's policy.denied events.
  std::vector<std::string> denials(const nlohmann::json& summary, const std::string& node) {
    std::vector<std::string> out;
    for (const auto& e : events(summary.value("run_id", ""))) {
      if (e.value("type", "") == "policy.denied" && e.value("node_id", "") == node) {
        out.push_back(e.value("rule", ""));
      }
    }
    return out;
  }
  nlohmann::json run(std::map<std::string, std::string> env = {}) {
    auto r = oe({"run", dir_.path().string(), "--json"}, std::move(env));
    auto parsed = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "stdout: " << r.out << "\nstderr: " << r.err;
    last_stderr_ = r.err;
    return parsed.is_discarded() ? nlohmann::json::object() : parsed;
  }
  // A tool that prints {"state_delta": {<field>: <its stdout>}} after running `body` (sh).
  void shellTool(const std::string& name, const std::string& field, const std::string& body) {
    writeExecutable(
        "tools/" + name,
        "#!/bin/sh\ncat >/dev/null\nout=$(" + body +
            ") || { rc=$?; echo \"$out\" >&2; exit $rc; }\nprintf '{\"state_delta\":{\"" + field +
            "\":\"%s\"}}' \"$out\"\n");
  }
  static std::string skipNode(const std::string& id, const std::string& impl,
                              const std::string& writes, const std::string& extra = "") {
    return "    - id: " + id + "\n      kind: tool\n      impl: " + impl + "\n      writes: [" +
           writes + "]\n      on_error: { policy: skip }\n" + extra;
  }
  // Every run has a sibling, `free`, confined to no network: it must succeed whatever the others
  // meet.
  void experience(const std::string& policy, const std::string& nodes, const std::string& fields) {
    shellTool("free.sh", "free", "echo fine");
    writeExperience("name: p\nversion: 0.1.0\n" + policy +
                    "state:\n  schema:\n    free: { type: string }\n" + fields +
                    "graph:\n  nodes:\n" + nodes +
                    "    - id: free\n      kind: tool\n      impl: ./tools/free.sh\n"
                    "      writes: [free]\n      policy: { network: none }\n"
                    "  edges: []\n");
  }
};

TEST_F(Policy, AWriteOutsideFsWriteIsRefusedAndTheRunSaysWhichRule) {
  TempDir outside;
  shellTool("inside.sh", "inside", "echo x > out/f && cat out/f");
  shellTool("outside.sh", "outside",
            "echo x > " + (outside.path() / "f").string() + " && echo wrote");
  experience("policy:\n  fs: { read: [\".\"], write: [\"./out\"] }\n",
             skipNode("inside", "./tools/inside.sh", "inside") +
                 skipNode("outside", "./tools/outside.sh", "outside"),
             "    inside: { type: string }\n    outside: { type: string }\n");
  const auto summary = run();
  EXPECT_EQ(summary["final_state"].value("inside", ""), "x") << summary.dump();
  EXPECT_EQ(summary["final_state"].value("free", ""), "fine");
  EXPECT_FALSE(summary["final_state"].contains("outside"));
  EXPECT_FALSE(std::filesystem::exists(outside.path() / "f"));
  const std::string error = failure(summary, "outside");
  EXPECT_NE(error.find("Permission denied"), std::string::npos) << error;
  EXPECT_NE(error.find("refused by the node's policy: fs; it may write only in " +
                       (dir_.path() / "out").string()),
            std::string::npos)
      << error;
  EXPECT_EQ(denials(summary, "outside"), std::vector<std::string>{"fs"});
  EXPECT_EQ(count(events(summary["run_id"]), "policy.applied", "outside"), 1u);
  // oe inspect and the HTML report show the policy in force and what it refused.
  const std::string run_id = summary["run_id"];
  const auto inspect = oe({"inspect", run_id});
  EXPECT_NE(inspect.out.find("    policy {\"enforce\":\"required\",\"fs\":{\"read\":[\".\"],"
                             "\"write\":[\"./out\"]}}"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("    denied fs"), std::string::npos) << inspect.out;
  const auto html = oe({"inspect", run_id, "--html"});
  EXPECT_NE(html.out.find("denied by policy"), std::string::npos);
}

TEST_F(Policy, ReadingAKeyOutsideFsReadIsRefused) {
  TempDir home;
  home.write(".ssh/id_rsa", "PRIVATE KEY");
  shellTool("steal.sh", "key", "cat " + (home.path() / ".ssh" / "id_rsa").string());
  shellTool("own.sh", "own", "cat tools/own.sh | head -c 9");
  experience(
      "policy:\n  fs: { read: [\".\"], write: [] }\n",
      skipNode("steal", "./tools/steal.sh", "key") + skipNode("own", "./tools/own.sh", "own"),
      "    key: { type: string }\n    own: { type: string }\n");
  const auto summary = run();
  EXPECT_FALSE(summary["final_state"].contains("key")) << summary.dump();
  EXPECT_EQ(summary["final_state"].value("own", ""), "#!/bin/sh");
  EXPECT_NE(failure(summary, "steal").find("Permission denied"), std::string::npos)
      << failure(summary, "steal");
}

TEST_F(Policy, TheRepositoryStaysReadOnlyInsideAWritableCheckout) {
  ASSERT_EQ(runProcess({"git", "init", "-q", dir_.path().string()}, {}, dir_.path()).exit_code, 0);
  const std::string config = readFile(dir_.path() / ".git" / "config");
  shellTool("hook.sh", "hook", "echo '[core] hooksPath = /tmp/evil' >> .git/config && echo done");
  shellTool("edit.sh", "edit", "echo changed > notes.txt && cat notes.txt");
  experience(
      "policy:\n  fs: { read: [\".\"], write: [\".\"] }\n",
      skipNode("hook", "./tools/hook.sh", "hook") + skipNode("edit", "./tools/edit.sh", "edit"),
      "    hook: { type: string }\n    edit: { type: string }\n");
  const auto summary = run();
  EXPECT_EQ(summary["final_state"].value("edit", ""), "changed") << summary.dump();
  EXPECT_FALSE(summary["final_state"].contains("hook"));
  EXPECT_EQ(readFile(dir_.path() / ".git" / "config"), config);
  EXPECT_NE(failure(summary, "hook").find("Read-only file system"), std::string::npos)
      << failure(summary, "hook");
  EXPECT_EQ(denials(summary, "hook"), std::vector<std::string>{"fs"});
}

TEST_F(Policy, NetworkNoneCannotReachAListenerOnTheHostsLoopback) {
  EchoServer server;
  const std::string connect =
      std::string(OE_SANDBOX_PROBE) + " connect " + std::to_string(server.port()) + " 2>&1";
  shellTool("dial.sh", "dial", connect);
  shellTool("dial_full.sh", "dial_full", connect);
  experience("policy:\n  network: loopback\n",
             skipNode("dial", "./tools/dial.sh", "dial", "      policy: { network: none }\n") +
                 "    - id: dial_full\n      kind: tool\n      impl: ./tools/dial_full.sh\n"
                 "      writes: [dial_full]\n      on_error: { policy: skip }\n",
             "    dial: { type: string }\n    dial_full: { type: string }\n");
  const auto summary = run();
  EXPECT_FALSE(summary["final_state"].contains("dial")) << summary.dump();
  // loopback is a namespace of its own: the host's 127.0.0.1 is not in it either.
  EXPECT_FALSE(summary["final_state"].contains("dial_full")) << summary.dump();
  EXPECT_EQ(summary["final_state"].value("free", ""), "fine");
  EXPECT_EQ(server.accepted(), 0);
  EXPECT_NE(failure(summary, "dial").find("Network is unreachable"), std::string::npos)
      << failure(summary, "dial");
}

TEST_F(Policy, AnAllowListLetsTheNamedHostThroughTheProxyAndRefusesTheOther) {
  EchoServer allowed;
  EchoServer denied;
  // A real proxy client: Node.js's http CONNECT through HTTPS_PROXY, then bytes through the tunnel.
  const std::string tool = R"(import http from "node:http";
function through(target) {
  const proxy = new URL(process.env.HTTPS_PROXY);
  return new Promise((resolve) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: target });
    req.on("connect", (res, socket) => {
      if (res.statusCode !== 200) { socket.destroy(); resolve(`refused ${res.statusCode}`); return; }
      socket.write("ping");
      socket.once("data", (d) => { socket.destroy(); resolve(`echo ${d}`); });
    });
    req.on("error", (e) => resolve(`error ${e.code}`));
    req.end();
  });
}
export default async function (args) {
  return { state_delta: { [args.field]: await through(args.target) } };
}
)";
  writeTool("dial.mjs", tool);
  experience(
      "policy:\n  network: { allow: [\"allowed.test:" + std::to_string(allowed.port()) + "\"] }\n",
      "    - id: good\n      kind: tool\n      impl: ./tools/dial.mjs\n      writes: [reached]\n"
      "      args: { field: reached, target: \"allowed.test:" +
          std::to_string(allowed.port()) +
          "\" }\n"
          "    - id: bad\n      kind: tool\n      impl: ./tools/dial.mjs\n      writes: [other]\n"
          "      args: { field: other, target: \"denied.test:" +
          std::to_string(denied.port()) + "\" }\n",
      "    reached: { type: string }\n    other: { type: string }\n");
  const auto summary =
      run({{"OE_SANDBOX_PROXY_HOSTS", "allowed.test=127.0.0.1,denied.test=127.0.0.1"}});
  EXPECT_EQ(summary["final_state"].value("reached", ""), "echo ping") << summary.dump();
  EXPECT_EQ(summary["final_state"].value("other", ""), "refused 403");
  EXPECT_EQ(allowed.accepted(), 1);
  EXPECT_EQ(denied.accepted(), 0);
  bool logged = false;
  for (const auto& e : events(summary["run_id"])) {
    if (e.value("type", "") == "policy.denied" && e.value("node_id", "") == "bad") {
      logged = e.value("host", "") == "denied.test" && e.value("port", 0) == denied.port() &&
               e.value("rule", "") == "network.allow";
    }
  }
  EXPECT_TRUE(logged) << "no policy.denied for denied.test";
}

TEST_F(Policy, LimitsStopAForkBombAndAHugeAllocation) {
  const std::string probe = OE_SANDBOX_PROBE;
  shellTool("bomb.sh", "forks", probe + " fork 10000");
  shellTool("hog.sh", "hog", probe + " alloc 4096");
  shellTool("small.sh", "small", probe + " alloc 16");
  experience(
      "policy:\n  limits: { processes: 64, memory_mb: 512 }\n",
      skipNode("bomb", "./tools/bomb.sh", "forks") + skipNode("hog", "./tools/hog.sh", "hog") +
          skipNode("small", "./tools/small.sh", "small"),
      "    forks: { type: string }\n    hog: { type: string }\n    small: { type: string }\n");
  const auto summary = run();
  const std::string forks = summary["final_state"].value("forks", "");
  ASSERT_EQ(forks.rfind("forked ", 0), 0u) << summary.dump();
  EXPECT_LT(std::stoi(forks.substr(7)), 64) << forks;
  EXPECT_FALSE(summary["final_state"].contains("hog")) << summary.dump();
  EXPECT_EQ(summary["final_state"].value("small", ""), "alloc ok");
  EXPECT_NE(failure(summary, "hog").find("limits.memory_mb"), std::string::npos)
      << failure(summary, "hog");
  EXPECT_EQ(summary["final_state"].value("free", ""), "fine");
}

TEST_F(Policy, AnApiKeyOutsideTheEnvListIsAbsent) {
  shellTool("key.sh", "key", "echo ${OPENAI_API_KEY:-absent}");
  experience("policy:\n  env: [PATH]\n", skipNode("key", "./tools/key.sh", "key"),
             "    key: { type: string }\n");
  const auto summary = run({{"OPENAI_API_KEY", "sk-test-not-for-tools"}});
  EXPECT_EQ(summary["final_state"].value("key", ""), "absent") << summary.dump();
}

TEST_F(Policy, RequiredRefusesToStartANodeThisKernelCannotConfineAndSaysWhy) {
  shellTool("write.sh", "wrote", "echo x > out/f && echo yes");
  experience("policy:\n  enforce: required\n  fs: { read: [\".\"], write: [\"./out\"] }\n",
             skipNode("write", "./tools/write.sh", "wrote"), "    wrote: { type: string }\n");
  const auto summary = run({{"OE_SANDBOX_NO_LANDLOCK", "1"}});
  EXPECT_FALSE(summary["final_state"].contains("wrote")) << summary.dump();
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "out" / "f"));
  const std::string error = failure(summary, "write");
  EXPECT_NE(error.find("oe-sandbox: cannot enforce"), std::string::npos) << error;
  EXPECT_NE(error.find("enforce: required"), std::string::npos) << error;
  EXPECT_EQ(denials(summary, "write"), std::vector<std::string>{"enforce"});

  // best_effort runs it and says what was not enforced.
  experience("policy:\n  enforce: best_effort\n  fs: { read: [\".\"], write: [\"./out\"] }\n",
             skipNode("write", "./tools/write.sh", "wrote"), "    wrote: { type: string }\n");
  const auto again = run({{"OE_SANDBOX_NO_LANDLOCK", "1"}});
  EXPECT_EQ(again["final_state"].value("wrote", ""), "yes") << again.dump();
}

}  // namespace
}  // namespace oe::test
