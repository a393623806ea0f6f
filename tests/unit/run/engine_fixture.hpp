// Drives the run engine (engine::Run) in-process, with real state, cache and event log files in
// a temp folder and a node kind defined here, so each part's Run members are tested without
// plugins or the `oe` binary. The kind ("fake") does what a node's args say:
//   delta: {...}        its state_delta (default {})
//   edge: <any>         its edge_output;  edge_item: true  -> edge_output {"item": $item}
//   fail_until: n       attempts 1..n fail with "fake failure on attempt <n>"
//   no_delta: true      answers {} (no state_delta: the node fails)
//   append_item: "f"    adds {"f": [$item]} to its state_delta ([$iter] in a loop)
//   await: k            waits until k calls have arrived (a barrier, bounded at 10 s)
//   await_left: k       waits until k calls have returned (bounded at 10 s)
//   await_index: i      with either: only the for_each/pipeline call of item i waits
//   fail_unless_file: p fails ("fake failure: <p> is missing") unless the file p exists; with
//   fail_item: i        only the call of item i ($index) or iteration i ($iter)
//   count: "f"          adds {"f": <state_view f, or 0> + 1} to its state_delta (reads: [f])
//   wait_cancel: true   waits until the host cancels the call (bounded at 10 s), then
//                       returns OE_CANCELLED "cancelled", as a plugin stopped by Ctrl-C does
// Every call is recorded: {"node", "args", "edge_inputs", "state_view", "attempt"}.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "oe/plugins/host_context.hpp"
#include "oe/run/engine.hpp"
#include "oe/spec/loader.hpp"
#include "support/temp_dir.hpp"

namespace oe::run::engine::testing {

struct Recorder {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Json> calls;
  int arrived = 0;
  int left = 0;
  std::vector<Json> left_order;  // the $index of each call as it returns (null outside items)
  int in_flight = 0;
  int max_in_flight = 0;
};

// The kind's instances all point at the test's recorder (set by the fixture).
inline Recorder*& currentRecorder() {
  static Recorder* recorder = nullptr;
  return recorder;
}

inline oe_status fakeCreate(oe_plugin* /*self*/, const oe_node_kind* /*kind*/, oe_str /*config*/,
                            oe_host_ctx* /*ctx*/,
                            oe_node** out_node, oe_writer* /*err*/) {
  *out_node = reinterpret_cast<oe_node*>(currentRecorder());
  return OE_OK;
}

inline void fakeDestroy(oe_node* /*node*/) {}

inline oe_status fakeInvoke(oe_node* node, const oe_invocation* inv) {
  Recorder& rec = *reinterpret_cast<Recorder*>(node);
  const Json request = Json::parse(std::string(inv->request_json.ptr, inv->request_json.len));
  const Json& args = request["args"];
  {
    std::unique_lock lock(rec.mutex);
    rec.calls.push_back(Json{{"node", request["context"]["node_id"]},
                             {"args", args},
                             {"edge_inputs", request["edge_inputs"]},
                             {"state_view", request["state_view"]},
                             {"attempt", inv->attempt}});
    ++rec.arrived;
    ++rec.in_flight;
    rec.max_in_flight = std::max(rec.max_in_flight, rec.in_flight);
    rec.cv.notify_all();
    const bool this_item =
        !args.contains("await_index") || args.value("$index", Json()) == args["await_index"];
    if (this_item && args.contains("await")) {
      const int k = args["await"].get<int>();
      rec.cv.wait_for(lock, std::chrono::seconds(10), [&] { return rec.arrived >= k; });
    }
    if (args.value("wait_cancel", false)) {
      rec.cv.wait_for(lock, std::chrono::seconds(10),
                      [&] { return plugins::hostApi()->is_cancelled(inv->call); });
    }
    if (this_item && args.contains("await_left")) {
      const int k = args["await_left"].get<int>();
      rec.cv.wait_for(lock, std::chrono::seconds(10), [&] { return rec.left >= k; });
    }
    --rec.in_flight;
    ++rec.left;
    rec.left_order.push_back(args.value("$index", Json()));
    rec.cv.notify_all();
  }
  // Through the host API: `inv->call` is a checked handle, not the context's address.
  if (args.value("wait_cancel", false) && plugins::hostApi()->is_cancelled(inv->call)) {
    inv->error->data = "cancelled";
    return OE_CANCELLED;
  }
  if (args.contains("fail_until") && static_cast<int>(inv->attempt) <= args["fail_until"].get<int>()) {
    inv->error->data = "fake failure on attempt " + std::to_string(inv->attempt);
    return OE_INTERNAL;
  }
  if (args.contains("fail_unless_file")) {
    const std::string path = args["fail_unless_file"].get<std::string>();
    const Json item = args.contains("$iter") ? args["$iter"] : args.value("$index", Json());
    if ((!args.contains("fail_item") || item == args["fail_item"]) &&
        !std::filesystem::exists(path)) {
      inv->error->data = "fake failure: " + path + " is missing";
      return OE_INTERNAL;
    }
  }
  Json response = Json::object();
  if (!args.value("no_delta", false)) {
    response["state_delta"] = args.value("delta", Json::object());
    if (args.contains("append_item")) {
      response["state_delta"][args["append_item"].get<std::string>()] =
          Json::array({args.contains("$item") ? args["$item"] : args.value("$iter", Json())});
    }
    if (args.contains("count")) {
      const std::string field = args["count"].get<std::string>();
      response["state_delta"][field] = request["state_view"].value(field, 0) + 1;
    }
  }
  if (args.contains("edge")) {
    response["edge_output"] = args["edge"];
  } else if (args.value("edge_item", false)) {
    response["edge_output"] = Json{{"item", args["$item"]}};
  }
  inv->response->data = response.dump();
  return OE_OK;
}

// Wakes a call waiting for its cancel (wait_cancel); the lock orders it after the call's check.
inline void fakeCancel(oe_node* node, oe_host_ctx* /*call*/) {
  Recorder& rec = *reinterpret_cast<Recorder*>(node);
  { std::lock_guard lock(rec.mutex); }
  rec.cv.notify_all();
}

inline const oe_node_kind kFakeKind = {sizeof(oe_node_kind), 0, "fake", "in-process test kind",
                                       nullptr, fakeCreate, fakeDestroy, fakeInvoke, fakeCancel};

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    currentRecorder() = &recorder_;
    kinds_["fake"] = plugins::LoadedKind{nullptr, &kFakeKind};
  }
  void TearDown() override { currentRecorder() = nullptr; }

  // Loads `yaml` as <temp>/experience.yaml and runs it once against <temp>'s state and cache.
  RunSummary run(std::string_view yaml, const RunOptions& options = RunOptions()) {
    const auto yaml_path = dir_.write("experience.yaml", yaml);
    auto loaded = spec::loadExperienceText(yaml, yaml_path);
    for (const auto& diagnostic : loaded.diagnostics) {
      ADD_FAILURE() << diagnostic.format();
    }
    if (!loaded.experience) {
      return RunSummary{};
    }
    experiences_.push_back(std::make_unique<spec::Experience>(std::move(*loaded.experience)));
    const spec::Experience& exp = *experiences_.back();
    auto store = state::StateStore::open(dir_ / "state.sqlite", exp.state);
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    const std::string run_id = "run-" + std::to_string(++runs_);
    if (store) {
      // As runExperience: a fresh run starts a chain named by its id, a resume continues one.
      auto began = (*store)->beginChain(options.chain_id.empty() ? run_id : options.chain_id);
      EXPECT_TRUE(began) << (began ? "" : began.error().message);
    }
    std::unique_ptr<cache::CacheStore> cache;
    if (options.use_cache) {
      auto opened = cache::CacheStore::open(dir_ / "cache");
      EXPECT_TRUE(opened);
      cache = std::move(opened).value();
    }
    std::filesystem::create_directories(dir_ / "runs");
    const auto log_path = log_path_ ? *log_path_ : dir_ / "runs" / (run_id + ".jsonl");
    auto log = events::EventLog::open(log_path, run_id);
    EXPECT_TRUE(log);
    if (!store || !log) {
      return RunSummary{};
    }
    RunSummary summary;
    {
      engine::Run coordinator(exp, options, **store, **log, cache.get(), nullptr);
      auto prepared = coordinator.prepare(kinds_);
      EXPECT_TRUE(prepared) << (prepared ? "" : prepared.error().message);
      if (!prepared) {
        return RunSummary{};
      }
      summary = coordinator.execute();
      coordinator.destroyInstances();
    }
    events_.clear();
    if (log_path_) {
      return summary;  // a device or a file the test reads itself
    }
    std::ifstream in(log_path);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) {
        events_.push_back(Json::parse(line));
      }
    }
    return summary;
  }

  // The recorded calls of `node`, in call order.
  std::vector<Json> callsOf(std::string_view node) {
    std::lock_guard lock(recorder_.mutex);
    std::vector<Json> out;
    for (const Json& call : recorder_.calls) {
      if (call["node"] == node) {
        out.push_back(call);
      }
    }
    return out;
  }

  // The log's events of `type` (for `node` when given), in order.
  std::vector<Json> eventsOf(std::string_view type, std::string_view node = {}) const {
    std::vector<Json> out;
    for (const Json& event : events_) {
      if (event.value("type", "") == type && (node.empty() || event.value("node_id", "") == node)) {
        out.push_back(event);
      }
    }
    return out;
  }

  oe::test::TempDir dir_;
  Recorder recorder_;
  std::map<std::string, plugins::LoadedKind, std::less<>> kinds_;
  std::vector<std::unique_ptr<spec::Experience>> experiences_;
  std::vector<Json> events_;
  std::optional<std::filesystem::path> log_path_;  // where the run's log goes, if not runs/
  int runs_ = 0;
};

}  // namespace oe::run::engine::testing
