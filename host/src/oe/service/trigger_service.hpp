// `triggers:` under `oe serve` (docs/serve.md, "Triggers"): the scheduler of the experiences'
// cron triggers, whose fires queue runs, and the routes GET /api/schedules and POST
// /hooks/{experience}/{name}. Experiences are read again when their files change (looked at
// every few seconds, and before a webhook is judged), so an edited schedule needs no restart.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "oe/common/result.hpp"
#include "oe/httpd/router.hpp"
#include "oe/service/service.hpp"
#include "oe/triggers/scheduler.hpp"
#include "oe/triggers/trigger_store.hpp"

namespace oe::service {

class TriggerService {
  struct Key {};

 public:
  // Opens the fired-once store (the --store database, or <root>/.openexpertise/triggers.sqlite),
  // reads the triggers of every experience under the root and starts the scheduler. `context`
  // (its queue and launcher) outlives the service. A trigger that cannot be scheduled (an
  // experience that does not validate) is left out with a line on stderr, not fatal.
  static Result<std::unique_ptr<TriggerService>> start(const ServiceContext& context,
                                                       std::chrono::milliseconds rescan_every =
                                                           std::chrono::seconds(5));
  TriggerService(Key, const ServiceContext& context, std::unique_ptr<triggers::TriggerStore> store,
                 std::chrono::milliseconds rescan_every);
  ~TriggerService();
  TriggerService(const TriggerService&) = delete;
  TriggerService& operator=(const TriggerService&) = delete;

  // Stops the scheduler and the rescans. Idempotent; the destructor calls it.
  void stop();

  // GET /api/schedules and POST /hooks/{experience}/{name}.
  void addRoutes(httpd::Router& router);

 private:
  // The cron triggers of every experience under the root, when a file changed since the last
  // look (or `force`).
  void rescan(bool force);
  void onFire(const triggers::Fire& fire);
  httpd::Response schedules();
  httpd::Response hook(const httpd::Request& request);

  const ServiceContext& context_;
  std::unique_ptr<triggers::TriggerStore> store_;
  triggers::SystemClock clock_;
  std::unique_ptr<triggers::Scheduler> scheduler_;
  std::chrono::milliseconds rescan_every_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string fingerprint_;  // the experience files' paths, sizes and times at the last rescan
  std::thread rescans_;
};

}  // namespace oe::service
