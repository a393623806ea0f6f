// Node memoization (reference §3.7, D4): canonical SHA-256 keys over a node's inputs and the
// content of the files it names, and the store of outputs under `.openexpertise/cache/`.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "oe/cache/remote_cache.hpp"
#include "oe/common/journal.hpp"
#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::cache {

// Lowercase hex SHA-256 of `data`.
std::string sha256Hex(std::string_view data);

struct FileDigest {
  std::string path;    // as the node spec or its args name it (the key sorts the list by it)
  std::string sha256;  // fileDigest() of it

  bool operator==(const FileDigest&) const = default;
};

// SHA-256 hex of the canonical (sorted keys, compact) JSON
//   {"a":args,"e":edge_inputs,"f":[{"path":..,"sha256":..}...],"k":kind,"n":node_spec,
//    "s":state_view,"v":"oe-cache/2"}
// `files` may come in any order. `kind` is the canonical JSON of the identity of the plugin
// that runs the node ({"plugin","sha256","version"}, or null). Changing the version string
// invalidates every cache (docs/durability.md, "What the cache key covers").
std::string cacheKey(const Json& node_spec, const Json& state_view, const Json& edge_inputs,
                     const Json& args, const std::vector<FileDigest>& files,
                     const Json& kind = Json());

// The same key from the canonical text of each part (compact, sorted keys, invalid UTF-8
// replaced: `dump(-1, ' ', false, error_handler_t::replace)`), for a caller that has those
// dumps anyway (the run sends the same text to the plugin).
std::string cacheKeyOfText(std::string_view node_spec, std::string_view state_view,
                           std::string_view edge_inputs, std::string_view args,
                           const std::vector<FileDigest>& files, std::string_view kind = "null");

// The canonical text cacheKeyOfText expects.
std::string canonicalJson(const Json& value);

// SHA-256 of a file's content. For a folder (a skill): of its SKILL.md when present, else of the
// sorted (name, digest) list of the regular files directly inside it.
Result<std::string> fileDigest(const std::filesystem::path& p);

struct CacheEntry {
  std::string key;
  std::string node_id;
  std::string run_id;
  std::string created_at;
  size_t size_bytes = 0;  // of the stored output JSON
  std::string last_used_run;  // the last run that replayed it (touch()); empty: never replayed
  std::string last_used_at;
};

// An entry as a cache journal line and the store's batch hold it.
struct JournalEntry {
  std::string key;
  std::string node_id;
  std::string run_id;
  std::string created_at;
  std::string output;  // JSON text
};

// What prune() removed (or, dry run, would remove).
struct PruneStats {
  size_t entries = 0;
  uint64_t output_bytes = 0;  // sum of the stored outputs' sizes
};

// One SQLite file (`cache.sqlite`, WAL) holds the entries: creating a file per entry costs 30 µs
// to 850 µs on this filesystem (machine-limits), a row costs one ~27 µs commit. A run does not
// pay that commit per node: put() appends the entry to this store's journal
// (`journal-<pid>-<random>.jsonl` in the same folder, one write(2), as durable against a kill as
// the event log, see common/journal.hpp) and batches it; the batch goes into cache.sqlite in one
// transaction every kFoldEntries entries, on flush() and when the store closes. A journal whose
// store died is folded by the next open() (folding is an upsert, so folding a line twice is
// harmless), so an entry written before a kill is found by the resume. list() shows the entries
// of live journals too. Thread-safe (one lock). There is no expiry; deleting the folder clears
// the cache.
class CacheStore {
 public:
  struct Private;  // lets open() use make_unique on the private constructor

  static constexpr size_t kFoldEntries = 512;

  static Result<std::unique_ptr<CacheStore>> open(const std::filesystem::path& cache_dir);
  // A store whose entries live in `remote` (PostgreSQL, shared by every coordinator and
  // worker): get/put/touch go there, each put() durable when it returns (no journal); list,
  // prune and compact are not supported on it yet (list() is empty, the others fail).
  static std::unique_ptr<CacheStore> open(std::unique_ptr<RemoteCache> remote);

  explicit CacheStore(const Private&);
  ~CacheStore();
  CacheStore(const CacheStore&) = delete;
  CacheStore& operator=(const CacheStore&) = delete;

  // nullopt on a miss, or when the stored entry is not valid JSON (it is then a miss that the
  // next put() overwrites).
  std::optional<Json> get(std::string_view key);
  // Inserts or replaces the entry.
  Result<void> put(std::string_view key, std::string_view node_id, std::string_view run_id,
                   const Json& output);
  // Oldest first.
  std::vector<CacheEntry> list();
  // Commits the batched entries now (they stay in the journal on failure).
  Result<void> flush();

  // Records that `run_id` replayed the entries `keys` (its cache hits), in ONE transaction. Call
  // it once at the end of a run, not per hit: a commit costs ~27 µs and the hot path must not
  // pay it. Keys no longer in the cache are ignored; an empty list does nothing. It is what
  // lets `oe gc` keep an entry that a kept run replayed but an older, pruned run wrote.
  Result<void> touch(const std::vector<std::string>& keys, std::string_view run_id);

  // Deletes the entries that none of `keep_runs` refers to: neither written by one of them
  // (run_id) nor last replayed by one of them (last_used_run). `dry_run` only counts them.
  Result<PruneStats> prune(const std::unordered_set<std::string>& keep_runs, bool dry_run);

  // VACUUM (when pages are free, e.g. after prune()) and wal_checkpoint(TRUNCATE), so the space
  // goes back to the filesystem. VACUUM rewrites the file: for `oe gc`, never during a run.
  Result<void> compact();

  const std::filesystem::path& path() const { return path_; }

 private:
  struct Sql;
  Result<void> init(const std::filesystem::path& cache_dir);

  Result<void> commitEntries(const std::vector<JournalEntry>& entries, const std::string& where);
  bool foldOrphan(const std::filesystem::path& journal, std::string_view text);
  Result<void> flushLocked();  // mutex_ held
  void endRead();              // mutex_ held: ends get()'s read transaction, if open

  std::filesystem::path path_;
  std::mutex mutex_;
  std::unique_ptr<Sql> sql_;
  std::unique_ptr<RemoteCache> remote_;  // set: the entries live there, sql_ is unused
  Journal journal_;
  std::vector<JournalEntry> batch_;
  // The batch's outputs by key: get() sees them before they are committed.
  std::unordered_map<std::string, size_t> batch_index_;
  // get() keeps one read transaction open across lookups, so a lookup takes no lock (~3 us of
  // fcntl calls each), for at most kReadSpan: other processes' commits are seen that late, and
  // their checkpoints wait that long. Whatever writes ends it first.
  static constexpr std::chrono::milliseconds kReadSpan{100};
  bool reading_ = false;
  std::chrono::steady_clock::time_point read_started_;
};

}  // namespace oe::cache
