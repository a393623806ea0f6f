// Run records from the event logs (see run_history.hpp).
#include "oe/runs/run_history.hpp"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "oe/events/event_log.hpp"
#include "oe/runs/run_analysis.hpp"

namespace oe::runs {
namespace {

constexpr std::streamoff kTailBytes = 64 * 1024;

// The first line of the file (without its '\n'); empty when unreadable.
std::string firstLine(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::getline(in, line);
  return line;
}

// The last complete line, when the file ends with '\n' and that line fits in the tail read;
// nullopt otherwise (a torn last line included).
std::optional<std::string> lastLine(const std::filesystem::path& path, uint64_t size) {
  if (size == 0) {
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  const auto start = static_cast<std::streamoff>(size) > kTailBytes
                         ? static_cast<std::streamoff>(size) - kTailBytes
                         : std::streamoff{0};
  in.seekg(start);
  std::string tail(static_cast<size_t>(static_cast<std::streamoff>(size) - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(in.gcount()));
  if (tail.empty() || tail.back() != '\n') {
    return std::nullopt;
  }
  tail.pop_back();
  const auto nl = tail.rfind('\n');
  if (nl == std::string::npos && start > 0) {
    return std::nullopt;  // longer than the tail: let the full read handle it
  }
  return nl == std::string::npos ? tail : tail.substr(nl + 1);
}

void takeFinished(RunRecord& run, const Json& e) {
  run.finished_at = stringField(e, "ts");
  run.end_ms = parseIsoMs(run.finished_at);
  run.status = stringField(e, "status", "?");
  if (auto it = e.find("reason"); it != e.end() && it->is_string()) {
    run.reason = it->get<std::string>();
  }
  // Logs written before runs had an `interrupted` status say `failed` with the signal's reason.
  if (run.status == "failed" && (run.reason.starts_with("interrupted (SIG") ||
                                 run.reason.starts_with("terminated (SIG"))) {
    run.status = "interrupted";
  }
  if (auto it = e.find("nodes"); it != e.end() && it->is_object()) {
    run.ran = it->value("ran", size_t{0});
    run.cached = it->value("cached", size_t{0});
    run.failed = it->value("failed", size_t{0});
    run.cancelled = it->value("cancelled", size_t{0});
    run.skipped = it->value("skipped", size_t{0});
  }
}

// An unfinished run (or a log whose run.finished is not its last line): count its events.
void countEvents(RunRecord& run) {
  auto log = events::readEventLog(run.log);
  if (!log) {
    run.warnings.push_back(log.error().message);
    return;
  }
  run.warnings = std::move(log->warnings);
  // node.started calls not yet closed by node.finished/node.failed, per node id: a for_each
  // logs one node.started per iteration, so pairing counts each call once.
  std::unordered_map<std::string, size_t> open_calls;
  RunRecord counted;
  const Json* finished = nullptr;
  for (const Json& e : log->events) {
    const std::string type = stringField(e, "type");
    if (const int64_t ts = parseIsoMs(stringField(e, "ts")); ts > run.end_ms) {
      run.end_ms = ts;
    }
    if (type == "run.finished") {
      finished = &e;
      continue;
    }
    const std::string node = stringField(e, "node_id");
    if (type == "node.started") {
      ++open_calls[node];
    } else if (type == "node.finished" || type == "node.failed") {
      auto it = open_calls.find(node);
      const bool started = it != open_calls.end() && it->second > 0;
      if (started) {
        --it->second;
      }
      if (type == "node.failed") {
        ++(e.value("cancelled", false) ? counted.cancelled : counted.failed);
      } else if (started) {
        ++counted.ran;
      } else {
        ++counted.cached;
      }
    } else if (type == "node.skipped") {
      ++counted.skipped;
    } else if (type == "plugin.crashed") {
      run.reason = crashText(e);  // the run stays unfinished: `oe resume` continues it
    }
  }
  run.ran = counted.ran;
  run.cached = counted.cached;
  run.failed = counted.failed;
  run.cancelled = counted.cancelled;
  run.skipped = counted.skipped;
  if (finished != nullptr) {
    takeFinished(run, *finished);  // its counts, when it has them, are the engine's own
  }
}

void readDetails(RunRecord& run) {
  if (auto last = lastLine(run.log, run.size_bytes)) {
    Json e = Json::parse(*last, nullptr, false);
    if (e.is_object() && stringField(e, "type") == "run.finished" && e.contains("nodes")) {
      takeFinished(run, e);
      return;
    }
  }
  countEvents(run);
}

}  // namespace

Json RunRecord::toJson() const {
  Json out = {{"run_id", id},
              {"started_at", started_at.empty() ? Json() : Json(started_at)},
              {"finished_at", finished_at.empty() ? Json() : Json(finished_at)},
              {"duration_ms", durationMs() >= 0 ? Json(durationMs()) : Json()},
              {"status", status},
              {"nodes",
               {{"ran", ran}, {"cached", cached}, {"failed", failed}, {"skipped", skipped}}},
              {"log", log.string()},
              {"size_bytes", size_bytes}};
  if (cancelled > 0) {
    out["nodes"]["cancelled"] = cancelled;
  }
  if (!reason.empty()) {
    out["reason"] = reason;
  }
  if (!resumed_from.empty()) {
    out["resumed_from"] = resumed_from;
  }
  if (!parent_run_id.empty()) {
    out["parent_run_id"] = parent_run_id;
  }
  return out;
}

namespace {

// The record of the log at `path` whose stat is `st`.
RunRecord readRecord(const std::filesystem::path& path, const struct stat& st, bool details) {
  RunRecord run;
  run.id = path.stem().string();
  run.log = path;
  run.size_bytes = static_cast<uint64_t>(st.st_size);
  run.modified_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 +
                    static_cast<int64_t>(st.st_mtim.tv_nsec / 1000000);
  Json first = Json::parse(firstLine(path), nullptr, false);
  if (first.is_object() && stringField(first, "type") == "run.started") {
    run.started_at = stringField(first, "ts");
    run.started_ms = parseIsoMs(run.started_at);
    if (auto from = first.find("resumed_from"); from != first.end() && from->is_string()) {
      run.resumed_from = from->get<std::string>();
    }
    if (auto chain = first.find("chain_id"); chain != first.end() && chain->is_string()) {
      run.chain_id = chain->get<std::string>();
    }
    if (auto parent = first.find("parent_run_id"); parent != first.end() && parent->is_string()) {
      run.parent_run_id = parent->get<std::string>();
    }
  }
  if (run.started_ms < 0) {
    run.started_ms = run.modified_ms;
  }
  if (details) {
    readDetails(run);
  }
  return run;
}

// Calls `each(path, st)` for every regular `<runs_dir>/*.jsonl` that can be stat'ed.
template <typename Each>
void forEachLog(const std::filesystem::path& runs_dir, Each&& each) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(runs_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const auto& path = it->path();
    struct stat st {};
    if (path.extension() != ".jsonl" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    each(path, st);
  }
}

// `run` as listRuns without details has it.
RunRecord withoutDetails(const RunRecord& run) {
  RunRecord out;
  out.id = run.id;
  out.log = run.log;
  out.size_bytes = run.size_bytes;
  out.modified_ms = run.modified_ms;
  out.started_at = run.started_at;
  out.started_ms = run.started_ms;
  out.resumed_from = run.resumed_from;
  out.chain_id = run.chain_id;
  out.parent_run_id = run.parent_run_id;
  return out;
}

void sortNewestFirst(std::vector<RunRecord>& runs) {
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.started_ms != b.started_ms ? a.started_ms > b.started_ms : a.id > b.id;
  });
}

}  // namespace

std::vector<RunRecord> listRuns(const std::filesystem::path& runs_dir, bool details) {
  std::vector<RunRecord> runs;
  forEachLog(runs_dir, [&](const std::filesystem::path& path, const struct stat& st) {
    runs.push_back(readRecord(path, st, details));
  });
  sortNewestFirst(runs);
  return runs;
}

namespace {

int64_t nsOf(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

RunListCache::Key RunListCache::keyOf(const struct stat& st) {
  return Key{static_cast<uint64_t>(st.st_size), nsOf(st.st_mtim),
             static_cast<uint64_t>(st.st_ino)};
}

std::vector<RunRecord> RunListCache::list(const std::filesystem::path& runs_dir, bool details) {
  // The folder's own mtime first, before its names are read: a log created or removed after
  // this point gives the folder a newer mtime, which the next call sees.
  struct stat dir_st {};
  if (::stat(runs_dir.c_str(), &dir_st) != 0 || !S_ISDIR(dir_st.st_mode)) {
    std::lock_guard lock(mutex_);
    folders_.erase(runs_dir);
    return {};
  }
  const int64_t dir_mtime = nsOf(dir_st.st_mtim);
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  // A folder mtime within the last 2 s may be shared by a change still to come (timestamps are
  // as coarse as the kernel's tick): such a listing is not trusted to stand for the next one.
  constexpr int64_t kRacyNs = 2'000'000'000;
  const bool settled = dir_mtime < nsOf(now) - kRacyNs;

  std::vector<RunRecord> runs;
  std::vector<std::pair<std::filesystem::path, struct stat>> stale;
  uint64_t generation = 0;
  const auto reuse = [&](const Entry& entry) {
    runs.push_back(details || !entry.details ? entry.record : withoutDetails(entry.record));
  };
  {
    std::lock_guard lock(mutex_);
    Folder& folder = folders_[runs_dir];
    if (folder.names_final && folder.dir_mtime_ns == dir_mtime) {
      // The same names as last time. A finished run's log is final (nothing appends after
      // run.finished), so only the others are looked at again.
      for (auto& [name, entry] : folder.entries) {
        if (entry.details && entry.record.finished()) {
          reuse(entry);
          continue;
        }
        const auto path = runs_dir / name;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
          continue;  // gone after all: the next listing (a new folder mtime) drops it
        }
        if (entry.key == keyOf(st) && (entry.details || !details)) {
          reuse(entry);
        } else {
          stale.emplace_back(path, st);
        }
      }
    } else {
      ++folder.generation;
      forEachLog(runs_dir, [&](const std::filesystem::path& path, const struct stat& st) {
        auto [it, added] = folder.entries.try_emplace(path.filename().string());
        Entry& entry = it->second;
        entry.seen = folder.generation;
        if (!added && entry.key == keyOf(st) && (entry.details || !details)) {
          reuse(entry);
        } else {
          entry.key = Key{};  // read below; until then it matches no log
          stale.emplace_back(path, st);
        }
      });
      std::erase_if(folder.entries,
                    [&](const auto& item) { return item.second.seen != folder.generation; });
      folder.dir_mtime_ns = dir_mtime;
      folder.names_final = settled;
    }
    generation = folder.generation;
  }
  // Read outside the lock: a folder of new logs must not hold up every other request.
  std::vector<std::pair<std::string, Entry>> read;
  read.reserve(stale.size());
  for (const auto& [path, st] : stale) {
    Entry entry{keyOf(st), details, readRecord(path, st, details), generation};
    runs.push_back(entry.record);
    read.emplace_back(path.filename().string(), std::move(entry));
  }
  if (!read.empty()) {
    std::lock_guard lock(mutex_);
    Folder& folder = folders_[runs_dir];
    for (auto& [name, entry] : read) {
      entry.seen = folder.generation;
      folder.entries.insert_or_assign(std::move(name), std::move(entry));
    }
    if (folder.generation != generation) {
      // Another call listed the folder meanwhile; what was read here may be of a log it saw
      // go: the next call lists the names again.
      folder.names_final = false;
    }
  }
  sortNewestFirst(runs);
  return runs;
}

Result<RunRecord> findRun(const std::filesystem::path& runs_dir, std::string_view id, bool last) {
  auto runs = listRuns(runs_dir, /*details=*/false);
  if (runs.empty()) {
    return makeError("no runs yet in " + runs_dir.string() +
                     " (is --experience the folder the run was started in?)");
  }
  if (last) {
    // Newest first; a nested experience's run (in its parent's folder when the child file sits
    // there) is part of its parent's, never the one to resume or inspect by itself. Nor is a log
    // without run.started (its process was killed before it wrote it, so nothing ran): resuming
    // it would start a new chain, and the writes of the real one would land again.
    for (auto& run : runs) {
      if (run.parent_run_id.empty() && !run.started_at.empty()) {
        return std::move(run);
      }
    }
    return std::move(runs.front());
  }
  std::vector<RunRecord*> matches;
  for (auto& run : runs) {
    if (run.id == id) {
      return std::move(run);
    }
    if (!id.empty() && run.id.starts_with(id)) {
      matches.push_back(&run);
    }
  }
  if (matches.size() == 1) {
    return std::move(*matches.front());
  }
  if (matches.empty()) {
    return makeError("no run \"" + std::string(id) + "\" in " + runs_dir.string() +
                     "; `oe runs` lists them, `--last` picks the newest");
  }
  constexpr size_t kShown = 10;
  std::string text = "\"" + std::string(id) + "\" matches " + std::to_string(matches.size()) +
                     " runs; give more of the id:";
  for (size_t i = 0; i < matches.size() && i < kShown; ++i) {
    text += "\n  " + matches[i]->id + "  " +
            (matches[i]->started_at.empty() ? "?" : matches[i]->started_at);
  }
  if (matches.size() > kShown) {
    text += "\n  ... and " + std::to_string(matches.size() - kShown) + " more (`oe runs`)";
  }
  return makeError(text);
}

Result<int64_t> parseDurationMs(std::string_view text) {
  const auto bad = [&] {
    return makeError("\"" + std::string(text) +
                     "\" is not a duration; write a whole number and a unit: 7d, 12h, 30m or 45s");
  };
  if (text.size() < 2) {
    return bad();
  }
  int64_t unit = 0;
  switch (text.back()) {
    case 'd': unit = 86'400'000; break;
    case 'h': unit = 3'600'000; break;
    case 'm': unit = 60'000; break;
    case 's': unit = 1'000; break;
    default: return bad();
  }
  int64_t value = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9' || value > 1'000'000'000) {
      return bad();
    }
    value = value * 10 + (c - '0');
  }
  return value * unit;
}

std::string humanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    return std::to_string(bytes) + " B";
  }
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", value, kUnits[unit]);
  return buf;
}

int64_t nowMs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

}  // namespace oe::runs
