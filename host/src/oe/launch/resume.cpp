// Where a resume picks a run up (see resume.hpp).
#include "oe/launch/resume.hpp"

#include <fstream>

#include "oe/events/event_log.hpp"
#include "oe/pgstore/event_sink.hpp"
#include "oe/run/run.hpp"

namespace oe::launch {
namespace {

// What every resume point takes from the log: its warnings as notes, the chain's prior usage.
void takeWarningsAndUsage(const events::LogReadResult& log, ResumePoint& point) {
  for (const auto& warning : log.warnings) {
    point.notes.push_back("warning: " + warning);
  }
  point.prior_usage = priorUsage(log.events);
}

bool startsWithRunStarted(const std::vector<Json>& events) {
  return !events.empty() && stringField(events.front(), "type") == "run.started";
}

}  // namespace

llm::Usage priorUsage(const std::vector<Json>& events) {
  llm::Usage total;
  for (const auto& event : events) {
    const std::string type = stringField(event, "type");
    if (type == "run.started") {
      total += llm::Usage::fromJson(event.value("usage_before", Json::object()));
    } else if (type == "node.tokens") {
      total.input_tokens += event.value("input_tokens", int64_t{0});
      total.output_tokens += event.value("output_tokens", int64_t{0});
      total.cost_usd += event.value("cost_usd", 0.0);
      total.calls += 1;
    }
  }
  return total;
}

Result<ResumePoint> resumePointOf(const runs::RunRecord& run) {
  auto log = events::readEventLog(run.log);
  if (!log) {
    return makeError("cannot resume run " + run.id + ": " + log.error().message);
  }
  ResumePoint point;
  point.run_id = run.id;
  takeWarningsAndUsage(*log, point);
  // The chain is named by its first run; a log from before chains were recorded started one.
  point.chain_id = run.id;
  if (startsWithRunStarted(log->events)) {
    const Json& started = log->events.front();
    point.args = started.value("args", Json::object());
    if (auto it = started.find("chain_id");
        it != started.end() && it->is_string() && !it->get<std::string>().empty()) {
      point.chain_id = it->get<std::string>();
    }
  } else {
    point.notes.push_back(run.log.string() +
                          " does not start with run.started; resuming with no args");
  }
  return point;
}

Result<ResumePoint> resumePointInStore(pg::Connection& conn, const pgstore::RunInfo& run) {
  auto log = pgstore::readRunEvents(conn, run.run_id);
  if (!log) {
    return makeError("cannot resume run " + run.run_id + ": " + log.error().message);
  }
  ResumePoint point;
  point.run_id = run.run_id;
  takeWarningsAndUsage(*log, point);
  if (startsWithRunStarted(log->events)) {
    point.args = log->events.front().value("args", Json::object());
  } else {
    point.notes.push_back("run " + run.run_id +
                          " has no run.started in the store's events; resuming with no args");
  }
  point.chain_id = run.chain_id.empty() ? run.run_id : run.chain_id;
  point.stored_pin = run.pin;
  return point;
}

Result<Json> definitionChanges(const spec::Experience& experience, const std::string& run_id,
                               const std::optional<Json>& stored_pin,
                               const plugins::PluginRegistry& plugins) {
  const auto pin_path = run::workspaceDir(experience) / "runs" / (run_id + ".pin.json");
  std::ifstream in(pin_path);
  Json before = Json::parse(in, nullptr, false);
  if ((!in || before.is_discarded()) && stored_pin) {
    before = *stored_pin;
  } else if (!in || before.is_discarded()) {
    return makeError("run " + run_id + " has no readable definition pin (" + pin_path.string() +
                     "); nodes whose inputs changed run again, the rest replays from the cache");
  }
  return run::diffPins(before, run::definitionPin(experience, &plugins));
}

}  // namespace oe::launch
