// The run's event stream (reference §4): the JSONL log `.openexpertise/runs/<run-id>.jsonl`, with
// upstream's event types and field order, plus an in-process bus for live listeners (the TUI).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/events/event.hpp"
#include "oe/secrets/secret_set.hpp"

namespace oe::events {

// ISO-8601 UTC with milliseconds: 2026-05-26T10:00:00.123Z
std::string nowIso();
// ms since the epoch of such a timestamp (milliseconds optional); -1 if malformed.
int64_t parseIsoMs(std::string_view ts);
// A random UUID v4, lowercase (OpenSSL RAND_bytes).
std::string newRunId();
// True for an id newRunId could have made: 36 characters, lower-case hex in 8-4-4-4-12 groups,
// version 4 and the RFC 4122 variant (a run id given from outside, `oe run --run-id`).
bool isRunId(std::string_view id);

// Every method is thread-safe (plugins emit from worker threads). One event is one write(2) of
// the whole line with its '\n' on an O_APPEND descriptor, so a kill -9 can tear only the last
// line. Listeners run under the log's lock, in subscription order, in the order the lines are
// written; a listener may emit or (un)subscribe (the lock is recursive) but must not block.
// A listener gets an Event: type and node id for free, the JSON parsed only if one asks for it
// (event.hpp), so a listener should look at type() before json().
// Writing the log never fails a run: the first I/O error is reported once on stderr and kept
// (writeError()), so the run can end with a warning naming the cause.
class EventLog {
 public:
  using Listener = events::Listener;
  struct Private;  // lets open() use make_unique on the private constructor

  // Creates the parent folders; appends to an existing file.
  static Result<std::unique_ptr<EventLog>> open(const std::filesystem::path& jsonl_path,
                                                std::string run_id);

  EventLog(const Private&, int fd, std::filesystem::path path, std::string run_id);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  const std::string& runId() const { return run_id_; }
  const std::filesystem::path& path() const { return path_; }
  // The O_APPEND descriptor, for the crash handler's last line (plugins/crash_guard.hpp).
  [[nodiscard]] int fd() const { return fd_; }
  // The first failed write of a line ("cannot write the event log <path>: <cause>"; lines after
  // it may be missing), or nullopt when every line was written.
  std::optional<std::string> writeError() const;

  // `extra` (an object; anything else is ignored) adds members after the standard fields.
  void runStarted(const Json& args, const Json& extra = Json::object());
  void runFinished(std::string_view status, const Json& extra = Json::object());
  void nodeReady(std::string_view node_id, const std::optional<std::string>& phase);
  // `item` >= 0 (oe): the call is one item of the node (a for_each item's or pipeline item's
  // index, a loop iteration), written as `"item": N` after the upstream members, so progress
  // and the report tell the items apart.
  void nodeStarted(std::string_view node_id, const std::optional<std::string>& phase,
                   int64_t item = -1);
  // cached: the output was replayed from the node cache (`"cached":true`, an oe addition).
  void nodeFinished(std::string_view node_id, const std::optional<std::string>& phase,
                    const Json* metrics, bool cached = false, int64_t item = -1);
  // `cancelled` (oe): the call did not fail, the run stopped it (a signal, fail_run elsewhere,
  // the LLM budget): `"cancelled": true` after the upstream members.
  void nodeFailed(std::string_view node_id, std::string_view error,
                  const std::optional<std::string>& phase, bool cancelled = false,
                  int64_t item = -1);
  void nodeSkipped(std::string_view node_id, std::string_view reason,
                   const std::optional<std::string>& phase);
  void stateWrite(std::string_view node_id, std::string_view field);

  // A plugin's event (node.activity, node.tokens, ...): `fields_json` must be a JSON object not
  // using the names type, run_id, node_id or ts; its members follow those four, in its order.
  Result<void> nodeEvent(std::string_view type, std::string_view node_id,
                         std::string_view fields_json);

  // An exception thrown by a listener is written to stderr as `event listener error: <msg>` and
  // the others still run. unsubscribe is idempotent. With no listener, writing an event costs
  // nothing more than the line; with some, no allocation beyond what a listener does itself.
  size_t subscribe(Listener listener);
  void unsubscribe(size_t id);

  // The run's secrets (docs/policy.md, "Secrets"): from here on every line, as written and as the
  // listeners (the PostgreSQL copy, telemetry, the live view) get it, shows «secret:NAME» where a
  // value was. The sink-level safety net: what the engine hands over should hold none already.
  void setSecrets(std::shared_ptr<const secrets::SecretSet> secrets);

 private:
  // Builders of one line, used under mutex_: head() opens it with type, run_id and node_id;
  // appendTs() adds the timestamp; commit() closes it, writes it and notifies the listeners
  // (`type` and `node_id` are the values head() got, handed to them without parsing the line).
  std::string head(std::string_view type, const std::string_view* node_id) const;
  static void appendTs(std::string& line);
  static void appendPhase(std::string& line, const std::optional<std::string>& phase);
  void commit(std::string& line, std::string_view type, std::string_view node_id,
              const std::optional<std::string>* phase = nullptr, bool cached = false,
              int64_t item = -1);
  static void appendItem(std::string& line, int64_t item);
  void notify(const Event& event);

  struct Subscriber {
    size_t id;
    Listener listener;
  };
  using Subscribers = std::vector<Subscriber>;

  int fd_;
  std::filesystem::path path_;
  std::string run_id_;
  mutable std::recursive_mutex mutex_;
  // Copied on (un)subscribe, never changed in place: notify() holds its own reference, so a
  // listener may (un)subscribe while the others are called, and an event costs one reference
  // count instead of a copy of the list. Null when nobody listens.
  std::shared_ptr<const Subscribers> listeners_;
  size_t next_listener_ = 1;
  std::optional<std::string> write_error_;  // the first failed write, under mutex_
  std::shared_ptr<const secrets::SecretSet> secrets_;  // null (the usual run): nothing to redact
};

struct LogReadResult {
  std::vector<Json> events;
  std::vector<std::string> warnings;
};

// Reads a JSONL event log. Lines that are not JSON objects are skipped with a warning naming
// the line (a torn last line, from a killed run, gets its own wording). Fails only when the
// file cannot be read.
Result<LogReadResult> readEventLog(const std::filesystem::path& path);

// The same over lines read elsewhere (the PostgreSQL store's oe_events); `source` names them in
// the warnings ("<source>:<line number>: ...").
LogReadResult parseEventLines(std::string_view source, const std::vector<std::string_view>& lines);

}  // namespace oe::events
