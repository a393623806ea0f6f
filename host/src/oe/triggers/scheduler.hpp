// The cron scheduler of `oe serve` (docs/serve.md, "Triggers"): given the experiences' cron
// triggers, a clock and a store, it decides what fires and hands each fire to a callback (the
// service queues a run). Each (experience, trigger, scheduled time) is claimed in the store
// before the callback, so a time never fires twice: not after a restart, and not with several
// instances on one PostgreSQL store, where one instance (the store's leader) schedules and
// another takes over when it dies.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/spec/experience.hpp"
#include "oe/triggers/time_zone.hpp"
#include "oe/triggers/trigger_store.hpp"

namespace oe::triggers {

// What the scheduler reads the time from and waits on; tests inject one they move by hand.
class Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  [[nodiscard]] virtual TimePoint now() const = 0;
  // Waits on `cv` (whose mutex `lock` holds) until `done()` is true or the clock reaches
  // `deadline`, whichever is first; may return early (the caller looks again).
  virtual void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         TimePoint deadline, const std::function<bool()>& done) = 0;
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] TimePoint now() const override { return std::chrono::system_clock::now(); }
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& done) override {
    cv.wait_until(lock, deadline, done);
  }
};

// One cron trigger of one experience, ready to schedule.
struct ScheduledTrigger {
  std::string experience;  // the experience's name: the store's key, and what is run
  std::string trigger_id;  // spec::TriggerSpec::id
  std::string expression;
  spec::CronExpr expr;
  std::shared_ptr<const TimeZone> zone;
  spec::Missed missed = spec::Missed::kSkip;
  Json args = Json::object();
};

// The cron triggers of an experience, their zones loaded. An error names the experience file,
// the trigger's line and the zone (a zone that validated but cannot be read now).
Result<std::vector<ScheduledTrigger>> schedulesOf(const spec::Experience& exp);

// One fire, for the callback.
struct Fire {
  std::string experience;
  std::string trigger_id;
  int64_t scheduled_ms = 0;  // the time it fired for (ms since the epoch, UTC)
  Json args = Json::object();
  // For the run's record and the log: which trigger, for which time, and whether it was a
  // catch-up of a time missed while no scheduler ran.
  std::string reason;
};

struct SchedulerOptions {
  // A due time is on time when the scheduler sees it at most this late; later, it was missed
  // (the process was down or suspended) and `missed:` decides.
  std::chrono::milliseconds on_time_grace{60'000};
  // How often an instance that does not lead tries to take over, and the leader looks at its
  // leadership again when nothing is due sooner.
  std::chrono::milliseconds lead_every{5'000};
  // Messages worth a log line: leadership taken or lost, a store error.
  std::function<void(const std::string&)> log;
};

class Scheduler {
 public:
  using FireCallback = std::function<void(const Fire&)>;

  // `store` and `clock` outlive the scheduler; `fire` is called on the scheduler's thread (or
  // tick()'s caller), without the scheduler's lock held, and should only queue the run.
  Scheduler(std::vector<ScheduledTrigger> triggers, TriggerStore& store, Clock& clock,
            FireCallback fire, SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Runs the loop on a thread of its own: tick, then wait until the next time is due (or a
  // wake or stop).
  void start();
  // Ends the loop promptly whatever it waits for (never sleeps past the request), joins the
  // thread and gives the leadership up.
  void stop();
  // Makes the loop look again now (the clock moved, the triggers changed).
  void wake();
  // Replaces the triggers (experiences reloaded); a trigger kept keeps its place.
  void setTriggers(std::vector<ScheduledTrigger> triggers);

  // One pass at the clock's time: fires what is due, if this instance leads. Returns when to
  // look again. start()'s loop calls it; tests call it directly.
  Clock::TimePoint tick();

  [[nodiscard]] bool leading() const;

  // GET /api/schedules: each trigger with its next fire and the last one recorded.
  struct Status {
    std::string experience;
    std::string trigger_id;
    std::string expression;
    std::string timezone;
    spec::Missed missed = spec::Missed::kSkip;
    std::optional<int64_t> next_ms;
    std::optional<int64_t> last_ms;
  };
  [[nodiscard]] std::vector<Status> status();

 private:
  void loop();
  void say(const std::string& message) const;

  TriggerStore& store_;
  Clock& clock_;
  FireCallback fire_;
  SchedulerOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<ScheduledTrigger> triggers_;
  // experience + '\n' + trigger id -> the second up to which its times were handled. Read from
  // the store's last fire when first seen as leader; cleared when the leadership is lost.
  std::map<std::string, int64_t> cursors_;
  bool leading_ = false;
  bool stop_ = false;
  bool woken_ = false;
  std::thread thread_;
};

}  // namespace oe::triggers
