#include "oe/service/trigger_service.hpp"

#include <filesystem>
#include <vector>

#include "oe/common/clock.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/service/run_routes.hpp"
#include "oe/spec/loader.hpp"
#include "oe/triggers/webhook.hpp"

namespace oe::service {

namespace fs = std::filesystem;
using httpd::Request;
using httpd::Response;

namespace {

std::string isoUtc(int64_t ms) { return isoTime(ms / 1000, static_cast<int>(ms % 1000)); }

// The experience files under the root as "path size mtime" lines: what a rescan compares.
std::string fingerprintOf(const fs::path& root) {
  std::string out;
  for (const std::string& name : experienceNames(root)) {
    std::error_code ec;
    const fs::path yaml = root / name / "experience.yaml";
    const auto size = fs::file_size(yaml, ec);
    const auto time = fs::last_write_time(yaml, ec);
    out += name + ' ' + std::to_string(ec ? 0 : size) + ' ' +
           std::to_string(ec ? 0 : time.time_since_epoch().count()) + '\n';
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<TriggerService>> TriggerService::start(
    const ServiceContext& context, std::chrono::milliseconds rescan_every) {
  auto store = triggers::TriggerStore::open(
      context.store.empty() ? triggers::storePath(context.root / ".openexpertise").string()
                            : context.store);
  if (!store) {
    return makeError("the triggers' store: " + store.error().message);
  }
  auto service =
      std::make_unique<TriggerService>(Key{}, context, std::move(store).value(), rescan_every);
  service->rescan(/*force=*/true);
  service->scheduler_->start();
  service->rescans_ = std::thread([raw = service.get()] {
    std::unique_lock lock(raw->mutex_);
    while (!raw->stopping_) {
      raw->wake_.wait_for(lock, raw->rescan_every_, [raw] { return raw->stopping_; });
      if (raw->stopping_) {
        break;
      }
      lock.unlock();
      raw->rescan(/*force=*/false);
      lock.lock();
    }
  });
  return service;
}

TriggerService::TriggerService(Key, const ServiceContext& context,
                               std::unique_ptr<triggers::TriggerStore> store,
                               std::chrono::milliseconds rescan_every)
    : context_(context),
      store_(std::move(store)),
      scheduler_(std::make_unique<triggers::Scheduler>(
          std::vector<triggers::ScheduledTrigger>{}, *store_, clock_,
          [this](const triggers::Fire& fire) { onFire(fire); },
          triggers::SchedulerOptions{
              .log = [](const std::string& line) { say(line); }})),
      rescan_every_(rescan_every) {}

TriggerService::~TriggerService() { stop(); }

void TriggerService::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (rescans_.joinable()) {
    rescans_.join();
  }
  scheduler_->stop();
}

void TriggerService::rescan(bool force) {
  const std::string now = fingerprintOf(context_.root);
  {
    std::lock_guard lock(mutex_);
    if (!force && now == fingerprint_) {
      return;
    }
    fingerprint_ = now;
  }
  std::vector<triggers::ScheduledTrigger> all;
  for (const std::string& name : experienceNames(context_.root)) {
    const auto loaded = spec::loadExperience(context_.root / name / "experience.yaml");
    if (!loaded.experience || loaded.experience->triggers.empty()) {
      continue;
    }
    auto schedules = triggers::schedulesOf(*loaded.experience);
    if (!schedules) {
      say(schedules.error().message + " (its schedules are left out)");
      continue;
    }
    for (auto& schedule : *schedules) {
      all.push_back(std::move(schedule));
    }
  }
  scheduler_->setTriggers(std::move(all));
}

void TriggerService::onFire(const triggers::Fire& fire) {
  auto found = findExperience(context_.root, fire.experience);
  if (!found) {
    say(fire.reason + ": " + found.error().message);
    return;
  }
  auto queued = queueRun(context_, *found, fire.args, Json::object(), kDefaultPriority);
  if (!queued) {
    say(fire.reason + ": " + queued.error().message);
    return;
  }
  say(fire.reason + ": queued run " + queued->run_id);
}

Response TriggerService::schedules() {
  Json list = Json::array();
  for (const auto& status : scheduler_->status()) {
    Json item = {{"experience", status.experience},
                 {"trigger", status.trigger_id},
                 {"cron", status.expression},
                 {"timezone", status.timezone},
                 {"missed", std::string(spec::toString(status.missed))},
                 {"next", status.next_ms ? Json(isoUtc(*status.next_ms)) : Json(nullptr)},
                 {"last", status.last_ms ? Json(isoUtc(*status.last_ms)) : Json(nullptr)}};
    list.push_back(std::move(item));
  }
  return httpd::jsonResponse(200, Json{{"schedules", std::move(list)},
                                       {"leading", scheduler_->leading()}});
}

Response TriggerService::hook(const Request& request) {
  const std::string& experience = request.params.at("experience");
  const std::string& name = request.params.at("name");
  auto found = findExperience(context_.root, experience);
  if (!found) {
    return httpd::problem(404, "webhook-not-found", "No such webhook", found.error().message);
  }
  const auto loaded = spec::loadExperience(found->dir / "experience.yaml");
  const spec::TriggerSpec* trigger = nullptr;
  if (loaded.experience) {
    for (const auto& candidate : loaded.experience->triggers) {
      if (candidate.webhook && candidate.webhook->name == name) {
        trigger = &candidate;
      }
    }
  }
  if (trigger == nullptr) {
    return httpd::problem(404, "webhook-not-found", "No such webhook",
                          "experience " + found->name + " has no webhook trigger named \"" +
                              name + "\"; its triggers: list names them (webhook: {name: ...})");
  }
  const triggers::WebhookOutcome outcome =
      triggers::receiveWebhook(found->name, *trigger, found->dir, request.body, request.headers,
                               *store_, nowMs());
  if (outcome.verdict == triggers::WebhookVerdict::kReplayed) {
    return httpd::jsonResponse(200, Json{{"status", "replayed"}, {"delivery", outcome.delivery_id}});
  }
  if (outcome.verdict != triggers::WebhookVerdict::kAccepted) {
    say("webhook " + found->name + "/" + name + " from " + request.remote + " refused: " +
        outcome.message);
    return httpd::problem(outcome.status(), "webhook-refused", "Webhook refused", outcome.message);
  }
  auto queued = queueRun(context_, *found, outcome.args, Json::object(), kDefaultPriority);
  if (!queued) {
    return httpd::problem(503, "store-unavailable", "Run not queued",
                          queued.error().message + "; the sender may retry the delivery");
  }
  auto response = httpd::jsonResponse(
      202, Json{{"id", queued->run_id}, {"status", "queued"}, {"delivery", outcome.delivery_id}});
  response.headers.emplace_back("Location", "/api/runs/" + queued->run_id);
  return response;
}

void TriggerService::addRoutes(httpd::Router& router) {
  router.add("GET", "/api/schedules", httpd::Scope::kRead,
             [this](const Request&) { return schedules(); });
  router.add("POST", "/hooks/{experience}/{name}", httpd::Scope::kPublic,
             [this](const Request& request) { return hook(request); });
}

}  // namespace oe::service
