// A run report's input, from the files or from PostgreSQL (see report_input.hpp).
#include "oe/runs/report_input.hpp"

#include <algorithm>
#include <fstream>
#include <utility>

#include "oe/cache/cache_store.hpp"
#include "oe/common/diagnostic.hpp"
#include "oe/events/event_log.hpp"
#include "oe/pgstore/event_sink.hpp"
#include "oe/pgstore/pg_state_backend.hpp"
#include "oe/pgstore/scope.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"

namespace oe::runs {

namespace {

// The logs of the nested runs `events` announce, and theirs, into `input.nested`.
void readNested(const std::vector<Json>& events, int depth, RunReportInput& input) {
  for (const Json& event : events) {
    const std::string sub = stringField(event, "sub_event_log");
    if (sub.empty() || input.nested.count(sub) != 0) {
      continue;
    }
    if (depth >= kMaxNestedDepth) {
      input.notes.push_back("nested runs deeper than " + std::to_string(kMaxNestedDepth) +
                            " levels are not shown");
      return;
    }
    auto log = events::readEventLog(sub);
    if (!log) {
      input.notes.push_back(log.error().message);
      continue;
    }
    auto& nested = input.nested[sub];
    nested = std::move(log->events);
    readNested(nested, depth + 1, input);
  }
}

// A sha256 in hex, as an artifact id is: anything else (an edited log) names no file.
bool isArtifactId(std::string_view id) {
  return id.size() == 64 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The diffs the run's node.diff events name, from the artifacts of the experience folder
// (where the engine writes them), each cut to kReportDiffBytes and kReportDiffBudget in all.
void readDiffs(const std::filesystem::path& experience_dir, RunReportInput& input) {
  const std::filesystem::path dir = experience_dir / ".openexpertise" / "artifacts";
  size_t budget = kReportDiffBudget;
  for (const Json& event : input.events) {
    const std::string id = stringField(event, "artifact");
    if (stringField(event, "type") != "node.diff" || !isArtifactId(id) ||
        input.diffs.count(id) != 0) {
      continue;
    }
    DiffText& diff = input.diffs[id];
    const std::filesystem::path file = dir / (id + ".diff");
    std::error_code ec;
    diff.size = std::filesystem::file_size(file, ec);
    if (ec) {
      diff.size = 0;
      diff.error = file.string() + " is not here (removed, or the run was on another machine)";
      continue;
    }
    const auto want =
        static_cast<size_t>(std::min<uint64_t>({diff.size, kReportDiffBytes, budget}));
    std::ifstream in(file, std::ios::binary);
    diff.text.resize(want);
    in.read(diff.text.data(), static_cast<std::streamsize>(want));
    diff.text.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    if (diff.text.size() < diff.size) {
      // Cut after a whole line: half a line of a diff reads as a change that is not there.
      const size_t line_end = diff.text.rfind('\n');
      diff.text.resize(line_end == std::string::npos ? 0 : line_end + 1);
      if (diff.text.empty()) {
        diff.error = "not shown: the report carries " + std::to_string(kReportDiffBudget / 1024) +
                     " KiB of diffs in all, and the diffs above used them";
      }
    }
    budget -= diff.text.size();
  }
}

// The run's events (and its nested runs' logs, the notes of what could not be read, the diffs
// its events name), then the experience as it is now; false when it does not load (a note says
// so).
bool startReport(RunReportInput& input, Result<events::LogReadResult> log,
                 const std::filesystem::path& experience_path) {
  input.events = std::move(log->events);
  input.notes = std::move(log->warnings);
  readNested(input.events, 0, input);
  const auto yaml = spec::resolveExperiencePath(experience_path);
  readDiffs(yaml.parent_path(), input);
  auto loaded = spec::loadExperience(yaml);
  if (!loaded.experience || hasErrors(loaded.diagnostics)) {
    input.notes.push_back(yaml.string() +
                          " does not load now, so the graph is not drawn: run `oe validate` "
                          "on it");
    return false;
  }
  input.experience = std::move(loaded.experience);
  return true;
}

}  // namespace

Result<RunReportInput> loadStoreRunReport(pg::Connection& conn,
                                          const std::filesystem::path& experience_path,
                                          const std::string& run_id) {
  RunReportInput input;
  input.run_id = run_id;
  auto log = pgstore::readRunEvents(conn, run_id);
  if (!log) {
    return log.error();
  }
  if (!startReport(input, std::move(log), experience_path)) {
    return input;
  }
  // The state rows this run wrote, from its scope; the edge outputs its cache entries hold.
  auto backend = pgstore::PgStateBackend::open(
      conn.url(), pgstore::storeScope(input.experience->name, input.experience->file),
      pgstore::storeRetry());
  auto store = backend ? state::StateStore::open(std::move(backend).value(), input.experience->state)
                       : Result<std::unique_ptr<state::StateStore>>(backend.error());
  auto rows = store ? (*store)->historyForRun(run_id)
                    : Result<std::vector<state::HistoryRow>>(store.error());
  if (rows) {
    input.state_rows = std::move(rows).value();
  } else {
    input.notes.push_back("state values not shown: " + rows.error().message);
  }
  auto cached = conn.exec("SELECT node_id, value FROM oe_cache WHERE run_id = $1", {run_id});
  if (!cached) {
    input.notes.push_back("edge outputs not shown: " + cached.error().message);
    return input;
  }
  for (int i = 0; i < cached->size(); ++i) {
    const Json output = Json::parse(cached->text(i, 1), nullptr, false);
    if (output.is_object() && output.contains("edge_output")) {
      input.edge_outputs[std::string(cached->text(i, 0))] = output["edge_output"];
    }
  }
  return input;
}

Result<RunReportInput> loadRunReport(const std::filesystem::path& experience_path,
                                     const RunRecord& run) {
  RunReportInput input;
  input.run_id = run.id;
  auto log = events::readEventLog(run.log);
  if (!log) {
    return log.error();
  }
  if (!startReport(input, std::move(log), experience_path)) {
    return input;
  }
  std::error_code ec;
  // Only an existing store is opened: a report does not create one.
  if (const auto db = run::statePath(*input.experience); std::filesystem::exists(db, ec)) {
    auto store = state::StateStore::open(db, input.experience->state);
    auto rows = store ? (*store)->historyForRun(run.id)
                      : Result<std::vector<state::HistoryRow>>(store.error());
    if (rows) {
      input.state_rows = std::move(rows).value();
    } else {
      input.notes.push_back("state values not shown: " + rows.error().message);
    }
  }
  if (const auto cache_dir = run::workspaceDir(*input.experience) / "cache";
      std::filesystem::exists(cache_dir / "cache.sqlite", ec)) {
    auto cache = cache::CacheStore::open(cache_dir);
    if (!cache) {
      input.notes.push_back("edge outputs not shown: " + cache.error().message);
      return input;
    }
    for (const cache::CacheEntry& entry : (*cache)->list()) {
      if (entry.run_id != run.id) {
        continue;
      }
      if (auto output = (*cache)->get(entry.key); output && output->contains("edge_output")) {
        input.edge_outputs[entry.node_id] = (*output)["edge_output"];
      }
    }
  }
  return input;
}

}  // namespace oe::runs
