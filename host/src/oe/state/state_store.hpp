// The run's persistent state: state.sqlite (reference §5, upstream tables), the state.schema type
// checks and merge strategies (§3.6, D2, D10), and an in-memory mirror that serves every read.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "oe/common/journal.hpp"
#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/expr/state_reader.hpp"
#include "oe/spec/experience.hpp"

namespace oe::state {

struct WriteMeta {
  std::string_view run_id;
  std::string_view node_id;
};

struct HistoryRow {
  int64_t id = 0;
  std::string field;
  std::optional<Json> value_old;  // nullopt: the field had no value before this write
  Json value_new;                 // the merged value
  std::string node_id;
  std::string run_id;
  std::string ts;
};

// One store per run, used from ONE thread (the scheduler's): the mirror and write() have no
// locks. Reads never touch SQLite: the mirror holds every declared field's value, loaded once at
// open and updated after each write. The mirror assumes this store is the only writer of the
// file while it is open (another process writing the same state.sqlite concurrently is not
// seen).
//
// Group commit: write() appends the node's rows to this store's journal
// (`<db>-oe-journal-<pid>-<random>.jsonl` beside the database, one write(2), as durable against
// a kill as a SQLite commit with synchronous=NORMAL) and batches them; the batch is committed to
// SQLite in one transaction when it reaches kFoldRows rows, kFoldDelay after its first row (on
// a timer thread, so a long node does not hold it back), on flush() and on close. Each commit
// records how far into the journal it got (table oe_journal_folds, in the same transaction), so
// the journal of a killed store is folded exactly once, from there on, by the next open().
// Until a batch is committed, another process reading state.sqlite sees the state as of the
// previous commit: at most kFoldDelay old.
class StateStore : public expr::StateReader {
 public:
  struct Private;  // lets open() use make_unique on the private constructor

  static constexpr size_t kFoldRows = 512;
  static constexpr std::chrono::milliseconds kFoldDelay{100};

  // Opens or creates the database (and its parent folders), WAL mode, upstream tables, and
  // folds the journals that killed stores left.
  static Result<std::unique_ptr<StateStore>> open(const std::filesystem::path& db_path,
                                                  const spec::StateSpec& schema);

  StateStore(const Private&, std::filesystem::path db_path, const spec::StateSpec& schema);
  ~StateStore() override;
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // O(1). nullptr = unset (or not declared). The pointer stays valid for the store's life; the
  // value it points to changes when the field is written.
  const Json* field(std::string_view name) const override;

  // Every declared field that has a value (a stored JSON null included).
  Json snapshot() const;

  // Applies `delta` ({field: value}) in ONE transaction, fields in sorted key order. Returns the
  // fields actually written in that order (a set_once field written again with the same value is
  // skipped, D2). On any error nothing is applied: not in the file, not in the mirror.
  Result<std::vector<std::string>> write(const Json& delta, const WriteMeta& meta);

  // Commits the batched rows now. An error leaves them in the journal (and the batch), for a
  // later flush, the close or the next open() to commit.
  Result<void> flush();

  // Rows ordered by id (oldest first), this store's batch included.
  // (Non-const: the batch is committed first.)
  std::vector<HistoryRow> history(std::string_view field);
  std::vector<HistoryRow> historyForRun(std::string_view run_id);

  const std::filesystem::path& path() const { return path_; }

 private:
  struct Slot {
    std::string name;
    spec::FieldType type = spec::FieldType::kAny;
    spec::MergeStrategy merge = spec::MergeStrategy::kLastWins;
    std::optional<Json> value;
    std::string text;  // `value` as stored (compact JSON): value_old and array_append reuse it
  };
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  struct Sql;
  // A history row (and the snapshot row it sets) not yet committed to SQLite.
  struct Row {
    std::string field;
    std::optional<std::string> old_text;  // nullopt: the field had no value before
    std::string new_text;
    std::string node_id;
    std::string run_id;
    std::string ts;
  };

  Result<void> init();
  // Commits `rows` and records that `journal` is folded up to `folded_bytes`, in ONE
  // transaction. Call with mutex_ held.
  Result<void> commitRows(const std::vector<Row>& rows, const std::string& journal,
                          uint64_t folded_bytes);
  Result<void> foldLocked();  // the batch; mutex_ held
  bool foldOrphan(const std::filesystem::path& journal, std::string_view text);
  void forgetFoldedJournals();  // rows of oe_journal_folds whose journal is gone
  Slot* find(std::string_view name);
  const Slot* find(std::string_view name) const;
  std::vector<HistoryRow> queryHistory(std::string_view key, bool by_run);

  std::filesystem::path path_;
  std::vector<Slot> slots_;  // declaration order
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> by_name_;
  // Guards sql_, journal_ and batch_, which the fold timer's thread uses too.
  std::mutex mutex_;
  std::unique_ptr<Sql> sql_;
  Journal journal_;
  std::vector<Row> batch_;
  std::unique_ptr<FoldTimer> timer_;  // declared last: stopped before the rest goes
};

// What pruneHistory() removed (or, dry run, would remove).
struct HistoryPruneStats {
  size_t rows = 0;
  uint64_t value_bytes = 0;  // the value_old + value_new text of those rows
};

// `oe gc`: deletes the state_history rows of every run not in `keep_runs`, except the newest
// row of each field, so the history still explains every current value; state_snapshot is
// never touched. Then VACUUM (only when pages were freed) and wal_checkpoint(TRUNCATE) give the
// space back to the filesystem. `dry_run` only counts. A missing file is not created (zero
// rows). Safe while a run writes the same file from another process (SQLite locks; the mirror
// of that run does not cover history).
Result<HistoryPruneStats> pruneHistory(const std::filesystem::path& db_path,
                                       const std::unordered_set<std::string>& keep_runs,
                                       bool dry_run);

// D11 (`oe reset-state`): removes the database and its -wal, -shm (and -journal) side files,
// and the group-commit journals of stores that are gone.
// Files that do not exist are fine. Close every StateStore on the file first.
Result<void> removeStateFiles(const std::filesystem::path& db_path);

}  // namespace oe::state
