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
#include "oe/state/state_backend.hpp"

namespace oe::state {

struct WriteMeta {
  std::string_view run_id;
  std::string_view node_id;
  // The write's identity in its chain of runs: "node", "node#3" (for_each item 3),
  // "stage@pipeline#2", "body@loop#1"; empty = not tracked (no mark recorded, never skipped).
  std::string_view write_key = {};
  // What the write was computed from (the call's cache key); empty when unknown.
  std::string_view input_key = {};
};

struct HistoryRow {
  int64_t id = 0;
  std::string field;
  std::optional<Json> value_old;  // nullopt: the field had no value before this write
  Json value_new;                 // the merged value (but see append_from)
  // D17: set when the row records an array_append onto an array of that many elements. Then
  // value_new holds only the appended items and value_old is {"$oe_append":{"from_length":N}};
  // the full value is the last row without append_from followed by the items of the rows after.
  std::optional<size_t> append_from;
  std::string node_id;
  std::string run_id;
  std::string ts;
};

// D17 undone for a reader that wants upstream's shape (an old and a new whole value per row,
// e.g. a per-field diff): `rows` are one field's rows in id order, from its last full row on
// (what history() returns, or what `oe gc` keeps); each append row gets its whole old and new
// list back and loses append_from. An append row with no full row before it is left as it is.
// The output is as large as upstream's rows: ask for the window you need.
[[nodiscard]] std::vector<HistoryRow> expandAppends(std::vector<HistoryRow> rows);

// A history row from its stored columns (value_old NULL = nullopt; an append marker sets
// append_from, D17), for a StateBackend's history().
[[nodiscard]] HistoryRow historyRowOf(int64_t id, std::string field,
                                      const std::optional<std::string_view>& old_text,
                                      std::string_view new_text, std::string node_id,
                                      std::string run_id, std::string ts);

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

  // The same store over another backend (PostgreSQL, pgstore/): the same checks, merges and
  // mirror; each write() is committed by the backend before it returns (no journal, no batch).
  static Result<std::unique_ptr<StateStore>> open(std::unique_ptr<StateBackend> backend,
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

  // The chain of runs the writes of this store belong to: a fresh `oe run` starts a chain named
  // by its run id, `oe resume X` continues X's chain. Loads the marks already landed in that
  // chain (table oe_landed_writes). From here on, write() with a write_key records its mark
  // (chain, write_key, input_key) atomically with its rows: same journal line, same commit;
  // for every merge strategy (a last_wins write applied again on a resume would put back a
  // value a later write had replaced). An empty delta records none. Without a chain, no mark.
  Result<void> beginChain(std::string_view chain_id);
  // True when a write with this write_key already landed in the current chain with the same
  // input_key (or either input_key is empty): the engine then does not apply it again. One hash
  // lookup; false before beginChain().
  [[nodiscard]] bool landed(std::string_view write_key, std::string_view input_key) const;
  // The input key of the write with this write_key that landed in the current chain, or
  // nullptr when none did (or before beginChain()). One hash lookup. The engine treats a call
  // whose write landed as done: not applied again, and replayed from the cache entry of this
  // key when its own key differs (docs/durability.md).
  [[nodiscard]] const std::string* landedInput(std::string_view write_key) const;
  // Records a decision the run made from the state of the moment (a `when` that held or not)
  // as a mark of the current chain that carries no rows: `meta.write_key` names the decision,
  // `meta.input_key` is what was decided. A resume reads it back with landedInput() and decides
  // the same, whatever the state holds by then (docs/durability.md, "Decisions"). Durable as a
  // write's mark is; without a chain (or with an empty key) nothing is recorded.
  Result<void> recordDecision(const WriteMeta& meta);
  // Calls `visit(write_key, input_key)` for every mark of the current chain (those beginChain()
  // loaded and this store's own since), in no particular order.
  void forEachLanded(
      const std::function<void(std::string_view write_key, std::string_view input_key)>& visit)
      const;
  const std::string& chainId() const { return chain_id_; }

  // Commits the batched rows now. An error leaves them in the journal (and the batch), for a
  // later flush, the close or the next open() to commit.
  Result<void> flush();

  // Rows ordered by id (oldest first), this store's batch included, as stored: an append
  // onto an array is one row holding the appended items (HistoryRow::append_from, D17).
  // (Non-const: the batch is committed first.) An error when that commit or the query fails
  // (not a silently shorter history).
  Result<std::vector<HistoryRow>> history(std::string_view field);
  Result<std::vector<HistoryRow>> historyForRun(std::string_view run_id);

  const std::filesystem::path& path() const { return path_; }

 private:
  struct Slot {
    std::string name;
    spec::FieldType type = spec::FieldType::kAny;
    spec::MergeStrategy merge = spec::MergeStrategy::kLastWins;
    std::optional<Json> value;
    std::string text;  // `value` as stored (compact JSON): value_old reuses it
    // After an append (D17) `text` is not kept up to date: an array_append field's value stays
    // an array, whose text no write needs again.
    bool text_stale = false;
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
    // D17: an array_append onto an array. old_text is the marker, new_text the appended items;
    // the snapshot is rebuilt at commit from the field's last full value.
    bool append = false;
  };
  // The landed-write marks of a batch not yet committed, per (chain, run) pair (committed as
  // one row, in the same transaction as the rows of the journal lines they came from).
  // `pairs` is the row's text, built as the writes come: "[[\"k\",\"i\"],..." without its
  // closing bracket, the pairs quoted once for the journal line and reused here.
  struct Member {
    std::string chain_id;
    std::string run_id;
    std::string pairs;
  };
  // Appends the mark pair ["write_key","input_key"] (already JSON strings) to the batch's
  // member for (chain, run), opening one when the pair differs from the last member's.
  static void addMark(std::vector<Member>& members, std::string_view chain_id,
                      std::string_view run_id, std::string_view quoted_key,
                      std::string_view quoted_input);

  // One key of a delta that passed the checks, with its merged text.
  struct Pending {
    Slot* slot;
    const Json* incoming;
    // array_append onto an existing array: `text` is the appended items only (D17), the mirror
    // is extended in place.
    bool append;
    std::string text;
  };

  // A row's value_old as stored: the append marker (D17), the value before, or none.
  static std::optional<std::string> oldTextOf(const Pending& p);
  // The mirror of a mark that has just been stored.
  void noteLanded(const WriteMeta& meta);

  Result<void> init();
  Result<void> initBackend();
  // write()'s phase 2, one per kind of store: the rows (and mark) made durable, or an error
  // that leaves nothing applied.
  Result<void> writeJournal(const std::vector<Pending>& pending, const WriteMeta& meta,
                            const std::string& ts, bool mark);
  Result<void> writeBackend(const std::vector<Pending>& pending, const WriteMeta& meta,
                            const std::string& ts, bool mark);
  // Commits `rows` and records that `journal` is folded up to `folded_bytes`, in ONE
  // transaction. Call with mutex_ held.
  Result<void> commitRows(const std::vector<Row>& rows, const std::vector<Member>& members,
                          const std::string& journal, uint64_t folded_bytes);
  Result<void> foldLocked();  // the batch; mutex_ held
  bool foldOrphan(const std::filesystem::path& journal, std::string_view text);
  Result<void> forgetFoldedJournals();  // rows of oe_journal_folds whose journal is gone
  Slot* find(std::string_view name);
  const Slot* find(std::string_view name) const;
  Result<std::vector<HistoryRow>> queryHistory(std::string_view key, bool by_run);

  std::filesystem::path path_;
  std::vector<Slot> slots_;  // declaration order
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> by_name_;
  // Guards sql_, journal_ and batch_, which the fold timer's thread uses too.
  std::mutex mutex_;
  std::unique_ptr<Sql> sql_;
  Journal journal_;
  std::vector<Row> batch_;
  std::vector<Member> members_;  // the batch's marks, per (chain, run)
  size_t marks_ = 0;             // how many marks members_ holds
  // The current chain and its landed writes (write_key -> input_key), as committed plus this
  // store's own writes since beginChain(). Used by the scheduler's thread only.
  std::string chain_id_;
  std::string chain_quoted_;  // chain_id_ as a JSON string, for each journal line's mark
  std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> landed_;
  // Set: the rows go there instead of the journal and SQLite (sql_ is then unused).
  std::unique_ptr<StateBackend> backend_;
  uint64_t writes_ = 0;               // numbers the backend's write ids
  std::unique_ptr<FoldTimer> timer_;  // declared last: stopped before the rest goes
};

// What pruneHistory() removed (or, dry run, would remove).
struct HistoryPruneStats {
  size_t rows = 0;
  uint64_t value_bytes = 0;  // the value_old + value_new text of those rows
  size_t marks = 0;          // landed-write marks (oe_landed_writes) of chains no kept run is in
};

// `oe gc`: deletes the state_history rows of every run not in `keep_runs`, except, for each
// field, its newest row holding a full value and every row after it (appends, D17), so the
// history still explains every current value; state_snapshot is
// never touched. Then VACUUM (only when pages were freed) and wal_checkpoint(TRUNCATE) give the
// space back to the filesystem. `dry_run` only counts. A missing file is not created (zero
// rows). Safe while a run writes the same file from another process (SQLite locks; the mirror
// of that run does not cover history).
//
// Landed-write marks of a chain are deleted when no kept run belongs to it: the chain is kept
// when its id (its first run) is in `keep_runs` or `keep_chains`, or when one of its marks was
// landed by a kept run. The caller passes in `keep_chains` the chains its kept runs continue
// (their resumed_from, as far as the logs tell), so a kept resume that landed nothing itself
// still keeps its chain's marks.
Result<HistoryPruneStats> pruneHistory(const std::filesystem::path& db_path,
                                       const std::unordered_set<std::string>& keep_runs,
                                       bool dry_run,
                                       const std::unordered_set<std::string>& keep_chains = {});

// D11 (`oe reset-state`): removes the database and its -wal, -shm (and -journal) side files,
// and the group-commit journals of stores that are gone.
// Files that do not exist are fine. Close every StateStore on the file first.
Result<void> removeStateFiles(const std::filesystem::path& db_path);

}  // namespace oe::state
