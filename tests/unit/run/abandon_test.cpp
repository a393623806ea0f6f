// A kind that ignores cancellation cannot hold a run past its timeout_ms: after the grace
// (RunOptions::cancel_grace) the attempt fails as timed out and the run goes on; the call is
// abandoned on its thread, its late result discarded, its instance never used again nor
// destroyed under it (docs/abi.md, "Timeouts and calls that do not stop").
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "engine_fixture.hpp"

namespace oe::run::engine::testing {
namespace {

// Attempt 1 of a call blocks until the test lets it go, whatever is_cancelled says; later
// attempts answer at once. Each create makes a distinct instance.
struct Stubborn {
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  int blocked = 0;  // attempt-1 invokes still inside invoke
  int returned = 0;  // ... and those that came back
  int creates = 0;
  std::set<int> destroyed;
  std::map<int, int> invokes;  // instance -> invokes on it
};

Stubborn*& current() {
  static Stubborn* stubborn = nullptr;
  return stubborn;
}

struct Instance {
  int id;
};

oe_status stubbornCreate(oe_plugin* /*self*/, const oe_node_kind* /*kind*/, oe_str /*config*/,
                         oe_host_ctx* /*ctx*/, oe_node** out, oe_writer* /*err*/) {
  Stubborn& s = *current();
  std::lock_guard lock(s.mutex);
  *out = reinterpret_cast<oe_node*>(std::make_unique<Instance>(Instance{++s.creates}).release());
  return OE_OK;
}

void stubbornDestroy(oe_node* node) {
  std::unique_ptr<Instance> instance(reinterpret_cast<Instance*>(node));
  Stubborn& s = *current();
  std::lock_guard lock(s.mutex);
  s.destroyed.insert(instance->id);
  s.cv.notify_all();
}

oe_status stubbornInvoke(oe_node* node, const oe_invocation* inv) {
  Stubborn& s = *current();
  const int id = reinterpret_cast<Instance*>(node)->id;
  std::unique_lock lock(s.mutex);
  ++s.invokes[id];
  if (inv->attempt == 1) {
    ++s.blocked;
    s.cv.notify_all();
    // Bounded, so a broken host fails the test instead of hanging the suite.
    s.cv.wait_for(lock, std::chrono::seconds(30), [&] { return s.release; });
    --s.blocked;
    ++s.returned;
    s.cv.notify_all();
    inv->response->data = R"({"state_delta":{"late":"from the abandoned call"}})";
    return OE_OK;
  }
  inv->response->data = R"({"state_delta":{"late":"from attempt )" +
                        std::to_string(inv->attempt) + R"("}})";
  return OE_OK;
}

const oe_node_kind kStubbornKind = {sizeof(oe_node_kind), 0,           "stubborn",     "test",
                                    nullptr,              stubbornCreate, stubbornDestroy,
                                    stubbornInvoke,       nullptr};

class Abandon : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    current() = &stubborn_;
    kinds_["stubborn"] = plugins::LoadedKind{nullptr, &kStubbornKind};
    options_.cancel_grace = std::chrono::milliseconds(50);
  }
  void TearDown() override {
    // The abandoned calls return now; wait for them, and for their instances' destroy (the
    // returning thread's, as no library holds this kind), before the kind's state goes.
    std::unique_lock lock(stubborn_.mutex);
    stubborn_.release = true;
    stubborn_.cv.notify_all();
    stubborn_.cv.wait_for(lock, std::chrono::seconds(30), [&] {
      return stubborn_.blocked == 0 &&
             stubborn_.destroyed.size() == static_cast<size_t>(stubborn_.creates);
    });
    lock.unlock();
    current() = nullptr;
    EngineTest::TearDown();
  }

  Stubborn stubborn_;
  RunOptions options_;
};

TEST_F(Abandon, ACallThatIgnoresCancellationFailsAfterTheGraceAndTheRunGoesOn) {
  const RunSummary summary = run(R"(name: stubborn
version: 0.1.0
state: { schema: { late: { type: string }, other: { type: string } } }
graph:
  nodes:
    - { id: stuck, kind: stubborn, timeout_ms: 20, writes: [late] }
    - { id: other, kind: fake, args: { delta: { other: "ran" } }, writes: [other] }
  edges: []
)",
                                 options_);
  {
    std::lock_guard lock(stubborn_.mutex);
    EXPECT_EQ(stubborn_.blocked, 1) << "the run ended while the plugin was still in its invoke";
  }
  EXPECT_EQ(summary.status, RunStatus::kPartial);
  ASSERT_EQ(summary.failures.size(), 1u);
  EXPECT_EQ(summary.failures[0].node_id, "stuck");
  EXPECT_NE(summary.failures[0].error.find("timed out after 20 ms"), std::string::npos)
      << summary.failures[0].error;
  EXPECT_NE(summary.failures[0].error.find("did not stop"), std::string::npos)
      << summary.failures[0].error;
  EXPECT_EQ(summary.final_state.value("other", ""), "ran");
  EXPECT_FALSE(summary.final_state.contains("late"));
  {
    std::lock_guard lock(stubborn_.mutex);
    EXPECT_TRUE(stubborn_.destroyed.empty()) << "an instance is never destroyed under its call";
  }
}

TEST_F(Abandon, ARetryGetsAFreshInstanceAndTheLateResultIsDiscarded) {
  const RunSummary summary = run(R"(name: stubborn
version: 0.1.0
state: { schema: { late: { type: string } } }
graph:
  nodes:
    - id: stuck
      kind: stubborn
      timeout_ms: 20
      on_error: { policy: retry, attempts: 2, base_ms: 1 }
      writes: [late]
  edges: []
)",
                                 options_);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.final_state.value("late", ""), "from attempt 2");
  std::unique_lock lock(stubborn_.mutex);
  EXPECT_EQ(stubborn_.creates, 2) << "the abandoned instance is not reused";
  EXPECT_EQ(stubborn_.invokes[1], 1);
  EXPECT_EQ(stubborn_.invokes[2], 1);
  EXPECT_EQ(stubborn_.destroyed, std::set<int>{2}) << "the run destroys what it still owns";
  // Let the abandoned call return after its run is gone: what it answers goes nowhere, its
  // thread touches nothing of the run, and its instance, of a kind no plugin library holds
  // (one built into the process), is destroyed by that thread once it returned (before, it
  // leaked: LeakSanitizer).
  stubborn_.release = true;
  stubborn_.cv.notify_all();
  ASSERT_TRUE(stubborn_.cv.wait_for(lock, std::chrono::seconds(30),
                                    [&] { return stubborn_.destroyed.size() == 2; }));
  EXPECT_EQ(stubborn_.destroyed, (std::set<int>{1, 2}));
  EXPECT_EQ(stubborn_.returned, 1);
}

}  // namespace
}  // namespace oe::run::engine::testing
