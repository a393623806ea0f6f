// Shared fixture of the tool plugin tests: the BUILT tool.so loaded through the real ABI with a
// fake host, a temp experience directory, and helpers to write tools, create nodes and call them.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/fake_host.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace oe::tool::test {

using Json = nlohmann::ordered_json;
using oe::test::CallResult;
using oe::test::CreateResult;
using oe::test::FakeContext;
using oe::test::FakeHost;
using oe::test::LoadedPlugin;
using oe::test::TempDir;

using oe::test::ScopedEnv;

// A .mjs tool that reports its worker's process id.
inline constexpr const char* kPidModule =
    "export default () => ({ state_delta: { pid: process.pid } });\n";

// The read end of a FIFO a tool writes "started" to once it is running: a real handshake, so
// a test cancels a tool that is really running, without sleeping.
class StartSignal {
 public:
  explicit StartSignal(const std::filesystem::path& path) : path_(path) {
    if (::mkfifo(path.c_str(), 0600) != 0) {
      throw std::runtime_error("mkfifo failed");
    }
    // Non-blocking open: the tool's open for writing then never waits for us.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  }
  ~StartSignal() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  StartSignal(const StartSignal&) = delete;
  StartSignal& operator=(const StartSignal&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  // True once the tool wrote; false if it did not within a generous safety limit.
  bool wait() const {
    pollfd readable{fd_, POLLIN, 0};
    return ::poll(&readable, 1, 60000) == 1 && (readable.revents & POLLIN) != 0;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

class ToolPluginTest : public ::testing::Test {
 public:
  // Calls `node` with `args` under the call context `ctx` (may be used from any thread).
  CallResult callWith(oe_node* node, const std::string& id, const Json& args, FakeContext* ctx) {
    return LoadedPlugin::invoke(*kind_, node, request(id, args), *ctx);
  }

 protected:
  void SetUp() override {
    plugin_ = std::make_unique<LoadedPlugin>(OE_TOOL_PLUGIN_PATH, host_);
    kind_ = plugin_->kind("tool");
    ASSERT_NE(kind_, nullptr);
  }

  void TearDown() override {
    for (oe_node* node : nodes_) {
      kind_->destroy(node);
    }
    nodes_.clear();
    plugin_.reset();
  }

  // Destroys every node and the plugin (joining its threads), e.g. to read the final logs.
  void unloadPlugin() { TearDown(); }

  std::filesystem::path writeFile(const std::string& rel, const std::string& content,
                                  bool executable = false) {
    auto path = dir_.write(rel, content);
    if (executable) {
      std::filesystem::permissions(path, std::filesystem::perms::owner_all |
                                             std::filesystem::perms::group_read |
                                             std::filesystem::perms::group_exec);
    }
    return path;
  }

  static Json spec(const std::string& id, const std::string& impl, const Json& args) {
    return Json{{"id", id}, {"kind", "tool"}, {"impl", impl}, {"args", args}};
  }

  CreateResult tryCreate(const std::string& id, const std::string& impl,
                         const Json& args = Json::object(), std::string experience_dir = {}) {
    if (experience_dir.empty()) {
      experience_dir = dir_.path().string();
    }
    const Json config{{"node", spec(id, impl, args)}, {"experience_dir", experience_dir}};
    CreateResult created = plugin_->create(*kind_, config.dump());
    if (created.status == OE_OK) {
      nodes_.push_back(created.node);
    }
    return created;
  }

  oe_node* create(const std::string& id, const std::string& impl, const Json& args = Json::object(),
                  const std::string& experience_dir = {}) {
    CreateResult created = tryCreate(id, impl, args, experience_dir);
    EXPECT_EQ(created.status, OE_OK) << created.error;
    return created.node;
  }

  static std::string request(const std::string& id, const Json& args,
                             const Json& state_view = Json::object(),
                             const Json& edge_inputs = Json::object()) {
    return Json{{"node", Json{{"id", id}, {"kind", "tool"}}},
                {"args", args},
                {"state_view", state_view},
                {"edge_inputs", edge_inputs},
                {"context", Json{{"run_id", "run-1"}, {"node_id", id}, {"attempt", 1}}}}
        .dump();
  }

 public:
  CallResult call(oe_node* node, const std::string& id, const Json& args = Json::object(),
                  const Json& state_view = Json::object(), const Json& edge_inputs = Json::object(),
                  FakeContext* ctx = nullptr) {
    std::unique_ptr<FakeContext> own;
    if (ctx == nullptr) {
      own = host_.makeContext(id);
      ctx = own.get();
    }
    return LoadedPlugin::invoke(*kind_, node, request(id, args, state_view, edge_inputs), *ctx);
  }

  // The response's JSON, failing the test when the call failed.
  static Json responseOf(const CallResult& result) {
    EXPECT_EQ(result.status, OE_OK) << result.error;
    return result.status == OE_OK ? Json::parse(result.response) : Json();
  }

 protected:
  FakeHost host_;
  std::unique_ptr<LoadedPlugin> plugin_;
  const oe_node_kind* kind_ = nullptr;
  TempDir dir_;
  std::vector<oe_node*> nodes_;
};

}  // namespace oe::tool::test
