// The read routes' tests' set-up: a --root in a temp dir with real experiences, real runs made
// by the built `oe` (OE_EXE), a router with addReadRoutes, and requests handed to it directly (no
// server: the handlers see only httpd's types). SSE is read through a sink that records frames.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/httpd/router.hpp"
#include "oe/service/read_routes.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::service::test {

// Writes `text` to `path`, creating its folders.
inline void writeText(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// An experience of two executable tools: `greet` writes `greeting` (from the run arg `who`) and
// appends to `log`, reports token use and hands on an edge output; `check` fails when the run
// arg `fail` is true (on_error: fail_run).
inline void writeToolExperience(const std::filesystem::path& dir, const std::string& name) {
  std::filesystem::create_directories(dir);
  const auto write = [&dir](const std::string& rel, const std::string& text, bool exec) {
    const auto path = dir / rel;
    writeText(path, text);
    if (exec) {
      std::filesystem::permissions(path, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add);
    }
  };
  write("experience.yaml",
        "name: " + name +
            "\ndescription: greets and checks\nversion: 0.1.0\nstate:\n  schema:\n"
            "    greeting: { type: string }\n    log: { type: array, merge: array_append }\n"
            "graph:\n  nodes:\n"
            "    - { id: greet, kind: tool, impl: ./greet.sh, writes: [greeting, log] }\n"
            "    - { id: check, kind: tool, impl: ./check.sh, on_error: { policy: fail_run } }\n"
            "  edges:\n    - { from: greet, to: check }\n",
        false);
  write("greet.sh",
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"who\":\"bob\"'*) who=bob;; "
        "*) who=world;; esac\n"
        "printf '{\"state_delta\":{\"greeting\":\"hello %s\",\"log\":[\"%s\"]},"
        "\"edge_output\":{\"said\":\"%s\"},"
        "\"metrics\":{\"tokens_in\":7,\"tokens_out\":3,\"cost_usd\":0.25}}' \"$who\" \"$who\" "
        "\"$who\"\n",
        true);
  write("check.sh",
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"fail\":true'*) "
        "echo 'the check failed on purpose' >&2; exit 3;; esac\n"
        "echo '{\"state_delta\":{}}'\n",
        true);
}

// Whether `condition` holds within `within`, checked every millisecond (for state that nothing
// notifies about, such as a tailer going away after its last subscriber).
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds within = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// An SSE client as a producer sees it: records every frame; `capacity` frames at most, then
// push() says false (a client that stopped reading).
class RecordingSink final : public httpd::EventSink {
 public:
  explicit RecordingSink(size_t capacity = SIZE_MAX) : capacity_(capacity) {}
  bool push(std::string frame) override {
    const std::lock_guard lock(mutex_);
    if (closed_ || frames_.size() >= capacity_) {
      closed_ = true;
      changed_.notify_all();
      return false;
    }
    frames_.push_back(std::move(frame));
    changed_.notify_all();
    return true;
  }
  [[nodiscard]] bool open() const override {
    const std::lock_guard lock(mutex_);
    return !closed_;
  }
  void finish() override {
    const std::lock_guard lock(mutex_);
    finished_ = true;
    changed_.notify_all();
  }
  void close() {
    const std::lock_guard lock(mutex_);
    closed_ = true;
  }
  // Waits (at most `within`) until `done(frames, finished)` holds; false when it never did.
  template <typename Pred>
  bool waitFor(Pred done, std::chrono::milliseconds within = std::chrono::seconds(30)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, within, [&] { return done(frames_, finished_); });
  }
  [[nodiscard]] std::vector<std::string> frames() const {
    const std::lock_guard lock(mutex_);
    return frames_;
  }
  [[nodiscard]] bool finished() const {
    const std::lock_guard lock(mutex_);
    return finished_;
  }
  // The `id:` of each frame.
  [[nodiscard]] std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const auto& frame : frames()) {
      const auto at = frame.find("id: ");
      out.push_back(at == std::string::npos ? std::string()
                                            : frame.substr(at + 4, frame.find('\n', at) - at - 4));
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> frames_;
  size_t capacity_;
  bool finished_ = false;
  bool closed_ = false;
};

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(root()); }

  [[nodiscard]] std::filesystem::path root() const { return dir_.path() / "root"; }

  // `oe <args>` with no plugin path of the user's and a trust store of the test's own.
  oe::test::ProcessResult oe(std::vector<std::string> args,
                             std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv{OE_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    env.emplace("OE_PLUGIN_PATH", "");
    env.emplace("OE_STORE", "");
    env.emplace("OE_TRUST_FILE", (dir_.path() / "trust.json").string());
    env.emplace("HOME", dir_.path().string());
    return oe::test::runProcess(argv, env, dir_.path());
  }

  // A run of the experience in `dir` (its run id); `args` as `oe run --args`.
  std::string run(const std::filesystem::path& dir, const std::string& args = "{}",
                  const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{"run", dir.string(), "--json", "--args", args};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const auto r = oe(argv);
    const Json summary = Json::parse(r.out, nullptr, false);
    EXPECT_TRUE(summary.is_object() && summary.contains("run_id"))
        << "exit " << r.exit_code << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return summary.is_object() ? summary.value("run_id", "") : "";
  }

  void buildRouter(std::string store_url = {}, QueueLister queue = {}) {
    router_ = std::make_unique<httpd::Router>();
    addReadRoutes(*router_, ReadContext{root(), std::move(store_url), std::move(queue)});
  }

  // The router's answer to `method target` (query decoded as given: tests use plain values).
  httpd::Response call(const std::string& method, const std::string& target, std::string body = {},
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
    if (!router_) {
      buildRouter();
    }
    httpd::Request request;
    request.method = method;
    request.target = target;
    const auto q = target.find('?');
    request.path = target.substr(0, q);
    if (q != std::string::npos) {
      std::string query = target.substr(q + 1);
      size_t start = 0;
      while (start <= query.size()) {
        size_t end = query.find('&', start);
        if (end == std::string::npos) {
          end = query.size();
        }
        const std::string pair = query.substr(start, end - start);
        const auto eq = pair.find('=');
        if (!pair.empty()) {
          request.query.emplace(pair.substr(0, eq),
                                eq == std::string::npos ? "" : pair.substr(eq + 1));
        }
        start = end + 1;
      }
    }
    request.headers = std::move(headers);
    request.body = std::move(body);
    request.granted = httpd::Scope::kAdmin;
    const auto match = router_->match(method, request.path);
    if (match.route == nullptr) {
      ADD_FAILURE() << "no route for " << method << " " << request.path;
      return httpd::problem(404, "no-route", "No route", target);
    }
    request.params = match.params;
    return match.route->handler(request);
  }

  // `call` whose answer must be `status` with a JSON body, parsed. Tests keep it non-const: a
  // missing member then reads as null instead of being undefined behaviour.
  Json json(const std::string& method, const std::string& target, int status = 200,
            std::string body = {}) {
    const auto response = call(method, target, std::move(body));
    EXPECT_EQ(response.status, status) << method << " " << target << ": " << response.body;
    return Json::parse(response.body, nullptr, false);
  }

  oe::test::TempDir dir_;
  std::unique_ptr<httpd::Router> router_;
};

}  // namespace oe::service::test
