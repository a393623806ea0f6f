// `triggers:` under `oe serve`, at the handler level: a real queue file, a real launcher running
// the built oe (OE_EXE), the real fired-once store. A signed delivery queues a run whose args
// come from the payload; a bad or missing signature is refused; a replayed delivery id queues
// nothing; GET /api/schedules lists a cron trigger with its next time; an edited experience's
// triggers are read again.
#include "oe/service/trigger_service.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "oe/service/launcher.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/triggers/webhook.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "unit/service/service_support.hpp"

namespace oe::service {
namespace {

using namespace std::chrono_literals;
using test_support::logOf;
using test_support::waitUntil;

constexpr std::string_view kSecret = "a-webhook-secret-of-some-length";

// Writes the `issue` arg it was given to state `issue`.
constexpr std::string_view kEchoTool =
    "#!/bin/sh\nin=$(cat)\nissue=$(printf '%s' \"$in\" | sed -n 's/.*\"issue\":\\([0-9]*\\).*/\\1/p')\n"
    "printf '{\"state_delta\":{\"issue\":%s}}\\n' \"${issue:-0}\"\n";

class TriggerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::canonical(dir_.path());
    const auto sub = root_ / "hooked";
    std::filesystem::create_directories(sub / "tools");
    writeExperience("0 7 * * 1-5");
    std::ofstream(sub / "tools" / "t.sh") << kEchoTool;
    std::filesystem::permissions(sub / "tools" / "t.sh", std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
    auto q = RunQueue::open(RunQueue::defaultPath(root_).string());
    ASSERT_TRUE(q) << q.error().message;
    queue_ = std::move(q).value();
    LauncherOptions options;
    options.oe_exe = OE_EXE;
    options.root = root_;
    options.limits = {4, 4};
    options.poll = 50ms;
    auto l = Launcher::start(*queue_, options);
    ASSERT_TRUE(l) << l.error().message;
    launcher_ = std::move(l).value();
    context_.root = root_;
    context_.queue = queue_.get();
    context_.launcher = launcher_.get();
    auto t = TriggerService::start(context_, 50ms);
    ASSERT_TRUE(t) << t.error().message;
    triggers_ = std::move(t).value();
    triggers_->addRoutes(router_);
  }
  void TearDown() override {
    triggers_.reset();
    launcher_.reset();
  }

  void writeExperience(const std::string& cron) {
    std::ofstream(root_ / "hooked" / "experience.yaml")
        << "name: hooked\nversion: 0.1.0\n"
        << "triggers:\n"
        << "  - cron: \"" << cron << "\"\n    timezone: Europe/Berlin\n"
        << "  - webhook: { name: new-issue, secret: { env: OE_TEST_HOOK_SECRET } }\n"
        << "    args_from: { issue: $.body.issue }\n"
        << "state:\n  schema:\n    issue: { type: number }\n"
        << "graph:\n  nodes:\n    - { id: t, kind: tool, impl: ./tools/t.sh, writes: [issue] }\n"
        << "  edges: []\n";
  }

  httpd::Response call(const std::string& method, const std::string& path,
                       const std::string& body = "",
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
    auto match = router_.match(method, path);
    if (match.route == nullptr) {
      ADD_FAILURE() << "no route for " << method << " " << path;
      return {};
    }
    httpd::Request request;
    request.method = method;
    request.target = path;
    request.path = path;
    request.params = match.params;
    request.body = body;
    request.headers = std::move(headers);
    return match.route->handler(request);
  }

  oe::test::ScopedEnv secret_{"OE_TEST_HOOK_SECRET", std::string(kSecret)};
  oe::test::TempDir dir_;
  std::filesystem::path root_;
  std::unique_ptr<RunQueue> queue_;
  std::unique_ptr<Launcher> launcher_;
  ServiceContext context_;
  std::unique_ptr<TriggerService> triggers_;
  httpd::Router router_;
};

TEST_F(TriggerServiceTest, ASignedDeliveryQueuesARunWithArgsFromItsPayload) {
  const std::string body = R"({"issue":42,"title":"x"})";
  const auto accepted =
      call("POST", "/hooks/hooked/new-issue", body,
           {{"x-oe-signature", triggers::webhookSignature(kSecret, body)},
            {"x-oe-delivery", "delivery-1"}});
  ASSERT_EQ(accepted.status, 202) << accepted.body;
  const std::string run_id = Json::parse(accepted.body).value("id", "");
  ASSERT_FALSE(run_id.empty()) << accepted.body;
  ASSERT_TRUE(launcher_->waitGone(run_id, 60s));
  const auto log = logOf(root_ / "hooked", run_id);
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().value("type", ""), "run.finished") << log.back().dump();
  // The payload's issue became the run's args, and the run ended well.
  EXPECT_EQ(log.front().value("type", ""), "run.started");
  ASSERT_TRUE(log.front().contains("args")) << log.front().dump();
  EXPECT_EQ(log.front()["args"].value("issue", 0), 42) << log.front().dump();
  EXPECT_EQ(log.back().value("status", ""), "success") << log.back().dump();

  // The same delivery again: nothing queued.
  const auto replayed =
      call("POST", "/hooks/hooked/new-issue", body,
           {{"x-oe-signature", triggers::webhookSignature(kSecret, body)},
            {"x-oe-delivery", "delivery-1"}});
  EXPECT_EQ(replayed.status, 200) << replayed.body;
  auto listed = queue_->list();
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty());
}

TEST_F(TriggerServiceTest, ABadOrMissingSignatureIsRefused) {
  const std::string body = R"({"issue":7})";
  const auto unsigned_call = call("POST", "/hooks/hooked/new-issue", body);
  EXPECT_EQ(unsigned_call.status, 401) << unsigned_call.body;
  const auto wrong = call("POST", "/hooks/hooked/new-issue", body,
                          {{"x-oe-signature", triggers::webhookSignature("another", body)}});
  EXPECT_EQ(wrong.status, 401) << wrong.body;
  EXPECT_EQ(wrong.content_type, "application/problem+json");
  const auto nowhere = call("POST", "/hooks/hooked/no-such-hook", body,
                            {{"x-oe-signature", triggers::webhookSignature(kSecret, body)}});
  EXPECT_EQ(nowhere.status, 404) << nowhere.body;
  auto listed = queue_->list();
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty()) << "a refused delivery queued a run";
}

TEST_F(TriggerServiceTest, SchedulesListTheCronTriggersAndFollowAnEdit) {
  auto schedules = Json::parse(call("GET", "/api/schedules").body);
  ASSERT_EQ(schedules["schedules"].size(), 1U) << schedules.dump();
  EXPECT_EQ(schedules["schedules"][0].value("cron", ""), "0 7 * * 1-5");
  EXPECT_EQ(schedules["schedules"][0].value("timezone", ""), "Europe/Berlin");
  EXPECT_TRUE(schedules["schedules"][0]["next"].is_string()) << schedules.dump();
  // Edited (another size, so the rescan sees it even within the same second): read again.
  writeExperience("30 18 * * *");
  ASSERT_TRUE(waitUntil([&] {
    schedules = Json::parse(call("GET", "/api/schedules").body);
    return schedules["schedules"].size() == 1 &&
           schedules["schedules"][0].value("cron", "") == "30 18 * * *";
  }, 30s)) << schedules.dump();
}

}  // namespace
}  // namespace oe::service
