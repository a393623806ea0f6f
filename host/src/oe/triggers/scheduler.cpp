// The cron scheduler; see scheduler.hpp.
#include "oe/triggers/scheduler.hpp"

#include <algorithm>

#include "oe/common/clock.hpp"
#include "oe/triggers/cron_schedule.hpp"

namespace oe::triggers {

namespace {

int64_t secondsOf(Clock::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

Clock::TimePoint pointOf(int64_t seconds) {
  return Clock::TimePoint(std::chrono::seconds(seconds));
}

std::string keyOf(const ScheduledTrigger& t) { return t.experience + '\n' + t.trigger_id; }

// The latest fire time in (after, now], if any. Looked for in the last two days first (where a
// frequent schedule has one, found in few steps), then in the last 400 days (a schedule that
// fires rarely has few steps there), so a cursor months old costs little either way.
std::optional<int64_t> latestDue(const ScheduledTrigger& t, int64_t after, int64_t now) {
  for (const int64_t window : {int64_t{2} * 86400, int64_t{400} * 86400}) {
    std::optional<int64_t> latest;
    for (auto at = nextFire(t.expr, *t.zone, std::max(after, now - window)); at && *at <= now;
         at = nextFire(t.expr, *t.zone, *at)) {
      latest = at;
    }
    if (latest || after >= now - window) {
      return latest;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<ScheduledTrigger>> schedulesOf(const spec::Experience& exp) {
  std::vector<ScheduledTrigger> out;
  std::map<std::string, std::shared_ptr<const TimeZone>> zones;
  for (const spec::TriggerSpec& trigger : exp.triggers) {
    if (!trigger.cron) {
      continue;
    }
    std::shared_ptr<const TimeZone>& zone = zones[trigger.cron->timezone];
    if (!zone) {
      auto loaded = TimeZone::load(trigger.cron->timezone);
      if (!loaded) {
        return makeError(exp.source_name + ":" + std::to_string(trigger.line) + ":" +
                         std::to_string(trigger.column) + ": triggers: " + loaded.error().message);
      }
      zone = std::make_shared<const TimeZone>(std::move(loaded).value());
    }
    auto parsed = spec::parseCron(trigger.cron->expression);
    if (!parsed) {
      return makeError(exp.source_name + ":" + std::to_string(trigger.line) + ":" +
                       std::to_string(trigger.column) + ": triggers: " + parsed.error().message);
    }
    ScheduledTrigger t;
    t.experience = exp.name;
    t.trigger_id = trigger.id;
    t.expression = trigger.cron->expression;
    t.expr = *parsed;
    t.zone = zone;
    t.missed = trigger.cron->missed;
    t.args = trigger.args;
    out.push_back(std::move(t));
  }
  return out;
}

Scheduler::Scheduler(std::vector<ScheduledTrigger> triggers, TriggerStore& store, Clock& clock,
                     FireCallback fire, SchedulerOptions options)
    : store_(store),
      clock_(clock),
      fire_(std::move(fire)),
      options_(std::move(options)),
      triggers_(std::move(triggers)) {}

Scheduler::~Scheduler() { stop(); }

void Scheduler::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) {
    return;
  }
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Scheduler::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  bool was_leading = false;
  {
    std::lock_guard lock(mutex_);
    was_leading = leading_;
    leading_ = false;
    cursors_.clear();
  }
  if (was_leading) {
    store_.releaseLead();
  }
}

void Scheduler::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  cv_.notify_all();
}

void Scheduler::setTriggers(std::vector<ScheduledTrigger> triggers) {
  {
    std::lock_guard lock(mutex_);
    triggers_ = std::move(triggers);
  }
  wake();
}

bool Scheduler::leading() const {
  std::lock_guard lock(mutex_);
  return leading_;
}

void Scheduler::say(const std::string& message) const {
  if (options_.log) {
    options_.log(message);
  }
}

void Scheduler::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    const Clock::TimePoint next = tick();
    lock.lock();
    if (stop_) {
      break;
    }
    if (!woken_) {
      clock_.waitUntil(lock, cv_, next, [this] { return stop_ || woken_; });
    }
    woken_ = false;
  }
}

Clock::TimePoint Scheduler::tick() {
  const Clock::TimePoint now_point = clock_.now();
  const Clock::TimePoint recheck =
      now_point + std::chrono::duration_cast<Clock::TimePoint::duration>(options_.lead_every);
  auto lead = store_.tryLead();
  std::vector<ScheduledTrigger> triggers;
  std::string message;
  bool leading = false;
  {
    std::lock_guard lock(mutex_);
    const bool was = leading_;
    leading_ = lead.ok() && *lead;
    leading = leading_;
    if (!leading_) {
      cursors_.clear();  // a later leadership reads the record again: another one wrote it
    }
    if (!lead.ok()) {
      message = "triggers: cannot tell whether this instance schedules: " + lead.error().message;
    } else if (leading_ != was) {
      message = leading_ ? "triggers: this instance schedules the cron triggers"
                         : "triggers: another instance schedules the cron triggers now";
    }
    if (leading_) {
      triggers = triggers_;
    }
  }
  if (!message.empty()) {
    say(message);  // outside the lock: the log may ask the scheduler for its status
  }
  if (!leading) {
    return recheck;
  }
  const int64_t now = secondsOf(now_point);
  const int64_t grace =
      std::chrono::duration_cast<std::chrono::seconds>(options_.on_time_grace).count();
  Clock::TimePoint wake_at = recheck;
  for (const ScheduledTrigger& t : triggers) {
    const std::string key = keyOf(t);
    std::optional<int64_t> cursor;
    {
      std::lock_guard lock(mutex_);
      if (auto it = cursors_.find(key); it != cursors_.end()) {
        cursor = it->second;
      }
    }
    if (!cursor) {
      // First look as leader: from the last fire recorded (what was missed since counts), or
      // from now for a trigger that never fired (a new trigger has no past).
      auto last = store_.lastFire(t.experience, t.trigger_id);
      if (!last) {
        say("triggers: " + last.error().message);
        wake_at = std::min(wake_at, recheck);
        continue;
      }
      cursor = *last ? **last / 1000 : now;
    }
    if (const auto due = latestDue(t, *cursor, now)) {
      const bool on_time = now - *due <= grace;
      if (on_time || t.missed == spec::Missed::kRunOnce) {
        auto claimed = store_.claimFire(t.experience, t.trigger_id, *due * 1000);
        if (!claimed) {
          // Not handled: the cursor stays, and the next tick tries the same time again.
          say("triggers: " + claimed.error().message);
          continue;
        }
        if (*claimed) {
          Fire fire;
          fire.experience = t.experience;
          fire.trigger_id = t.trigger_id;
          fire.scheduled_ms = *due * 1000;
          fire.args = t.args;
          fire.reason = "cron \"" + t.expression + "\" (" + t.zone->name() + ") for " +
                        isoTime(*due, 0) +
                        (on_time ? "" : ", missed while no scheduler ran (missed: run_once)");
          fire_(fire);
        }
      }
    }
    {
      std::lock_guard lock(mutex_);
      cursors_[key] = now;
    }
    if (const auto next = nextFire(t.expr, *t.zone, now)) {
      wake_at = std::min(wake_at, pointOf(*next));
    }
  }
  return wake_at;
}

std::vector<Scheduler::Status> Scheduler::status() {
  std::vector<ScheduledTrigger> triggers;
  {
    std::lock_guard lock(mutex_);
    triggers = triggers_;
  }
  const int64_t now = secondsOf(clock_.now());
  std::vector<Status> out;
  out.reserve(triggers.size());
  for (const ScheduledTrigger& t : triggers) {
    Status s;
    s.experience = t.experience;
    s.trigger_id = t.trigger_id;
    s.expression = t.expression;
    s.timezone = t.zone->name();
    s.missed = t.missed;
    if (const auto next = nextFire(t.expr, *t.zone, now)) {
      s.next_ms = *next * 1000;
    }
    if (auto last = store_.lastFire(t.experience, t.trigger_id); last) {
      s.last_ms = *last;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace oe::triggers
