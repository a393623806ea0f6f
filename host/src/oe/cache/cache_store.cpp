// Cache keys (OpenSSL SHA-256 over canonical JSON) and the SQLite-backed CacheStore.
#include "oe/cache/cache_store.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <fstream>
#include <map>
#include <system_error>

#include "oe/common/file.hpp"
#include "oe/common/sqlite.hpp"

namespace oe::cache {

namespace {

constexpr std::string_view kKeyVersion = "oe-cache/2";

constexpr const char* kSchemaSql =
    "CREATE TABLE IF NOT EXISTS cache_entries (key TEXT PRIMARY KEY, node_id TEXT NOT NULL, "
    "run_id TEXT NOT NULL, created_at TEXT NOT NULL, output TEXT NOT NULL);";
constexpr std::string_view kGetSql = "SELECT output FROM cache_entries WHERE key = ?1";
constexpr std::string_view kPutSql =
    "INSERT INTO cache_entries (key, node_id, run_id, created_at, output) "
    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(key) DO UPDATE SET node_id = excluded.node_id, "
    "run_id = excluded.run_id, created_at = excluded.created_at, output = excluded.output";
constexpr std::string_view kListSql =
    "SELECT key, node_id, run_id, created_at, length(CAST(output AS BLOB)), "
    "COALESCE(last_used_run, ''), COALESCE(last_used_at, '') FROM cache_entries "
    "ORDER BY created_at, key";
constexpr std::string_view kTouchSql =
    "UPDATE cache_entries SET last_used_run = ?2, last_used_at = ?3 WHERE key = ?1";
// Entries no kept run refers to (gc_keep is a temp table prune() fills).
constexpr const char* kUnreferenced =
    " FROM cache_entries WHERE run_id NOT IN (SELECT run_id FROM temp.gc_keep) AND "
    "(last_used_run IS NULL OR last_used_run NOT IN (SELECT run_id FROM temp.gc_keep))";

// Journals: `journal-<pid>-<random>.jsonl`, one entry per line,
// {"k":key,"n":node_id,"r":run_id,"t":created_at,"o":output}.
constexpr std::string_view kJournalPrefix = "journal-";

// Every complete entry of a journal's text. A line that does not parse (the torn last line of a
// killed store) is skipped: its node never reached node.finished, so nothing relies on it.
std::vector<JournalEntry> parseJournal(std::string_view text) {
  std::vector<JournalEntry> out;
  Journal::forEachLine(text, [&out](std::string_view text_line) {
    const Json line = Json::parse(text_line, nullptr, false);
    if (!line.is_object()) {
      return;
    }
    auto field = [&line](const char* name) -> const std::string* {
      auto it = line.find(name);
      return it != line.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
    };
    const auto* key = field("k");
    const auto* node_id = field("n");
    const auto* run_id = field("r");
    const auto* created_at = field("t");
    const auto output = line.find("o");
    if (key == nullptr || node_id == nullptr || run_id == nullptr || created_at == nullptr ||
        output == line.end()) {
      return;
    }
    out.push_back(JournalEntry{*key, *node_id, *run_id, *created_at, output->dump()});
  });
  return out;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};

std::string toHex(const unsigned char* digest, unsigned int len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
  return out;
}

// Canonical text: nlohmann's default object is a sorted map and dump() is compact, so equal
// values give equal text. Invalid UTF-8 is replaced rather than thrown on.
void appendCanonical(std::string& out, const Json& value) {
  out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool hasColumn(sqlite3* db, const char* table, std::string_view column) {
  auto stmt = sqlite::prepare(db, std::string("PRAGMA table_info(") + table + ")");
  if (!stmt) {
    return false;
  }
  while (sqlite3_step(stmt->get()) == SQLITE_ROW) {
    if (sqlite::columnView(stmt->get(), 1) == column) {
      return true;
    }
  }
  return false;
}

// last_used_run / last_used_at came after the first cache format: a file written before them
// gets them here (NULL = never replayed), so old caches keep working. Checked again inside an
// IMMEDIATE transaction because two processes may open the same old file at once.
Result<void> addUsageColumns(sqlite3* db) {
  if (hasColumn(db, "cache_entries", "last_used_run")) {
    return {};
  }
  if (auto r = sqlite::exec(db, "BEGIN IMMEDIATE"); !r) {
    return r;
  }
  Result<void> r;
  if (!hasColumn(db, "cache_entries", "last_used_run")) {
    r = sqlite::exec(db,
                     "ALTER TABLE cache_entries ADD COLUMN last_used_run TEXT;"
                     "ALTER TABLE cache_entries ADD COLUMN last_used_at TEXT;");
  }
  if (!r) {
    (void)sqlite::exec(db, "ROLLBACK");
    return makeError("cannot add the usage columns to the cache: " + r.error().message);
  }
  return sqlite::exec(db, "COMMIT");
}

Result<std::string> digestFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    return makeError("cannot read " + p.string() + " to hash it for the cache key: " +
                     std::error_code(errno, std::generic_category()).message());
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return makeError("cannot initialise SHA-256 (OpenSSL)");
  }
  std::array<char, 64 * 1024> buf{};
  while (in) {
    in.read(buf.data(), buf.size());
    const std::streamsize n = in.gcount();
    if (n > 0) {
      EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n));
    }
  }
  if (in.bad()) {
    return makeError("cannot read " + p.string() + " to hash it for the cache key");
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  return toHex(md, len);
}

}  // namespace

std::string sha256Hex(std::string_view data) {
  // Fetched once: EVP_sha256() makes OpenSSL 3 look the algorithm up at every digest. A
  // function-local constant, never freed (it lives as long as the process).
  static EVP_MD* const kSha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, kSha256 != nullptr ? kSha256 : EVP_sha256(),
             nullptr);
  return toHex(md, len);
}

std::string canonicalJson(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string cacheKey(const Json& node_spec, const Json& state_view, const Json& edge_inputs,
                     const Json& args, const std::vector<FileDigest>& files, const Json& kind) {
  return cacheKeyOfText(canonicalJson(node_spec), canonicalJson(state_view),
                        canonicalJson(edge_inputs), canonicalJson(args), files,
                        canonicalJson(kind));
}

std::string cacheKeyOfText(std::string_view node_spec, std::string_view state_view,
                           std::string_view edge_inputs, std::string_view args,
                           const std::vector<FileDigest>& files, std::string_view kind) {
  // Written out member by member (keys in sorted order) instead of building a Json object:
  // the same text as dumping {"a":..,"e":..,...}, without deep-copying the inputs.
  std::vector<const FileDigest*> sorted;
  sorted.reserve(files.size());
  for (const FileDigest& f : files) {
    sorted.push_back(&f);
  }
  std::sort(sorted.begin(), sorted.end(), [](const FileDigest* x, const FileDigest* y) {
    return x->path != y->path ? x->path < y->path : x->sha256 < y->sha256;
  });
  std::string text;
  text.reserve(64 + node_spec.size() + state_view.size() + edge_inputs.size() + args.size() +
               kind.size() + files.size() * 128);
  text += "{\"a\":";
  text += args;
  text += ",\"e\":";
  text += edge_inputs;
  text += ",\"f\":[";
  for (size_t i = 0; i < sorted.size(); ++i) {
    text += i == 0 ? "{\"path\":" : ",{\"path\":";
    appendCanonical(text, Json(sorted[i]->path));
    text += ",\"sha256\":";
    appendCanonical(text, Json(sorted[i]->sha256));
    text += '}';
  }
  text += "],\"k\":";
  text += kind;
  text += ",\"n\":";
  text += node_spec;
  text += ",\"s\":";
  text += state_view;
  text += ",\"v\":\"";
  text += kKeyVersion;
  text += "\"}";
  return sha256Hex(text);
}

Result<std::string> fileDigest(const std::filesystem::path& p) {
  std::error_code ec;
  const auto status = std::filesystem::status(p, ec);
  if (ec || !std::filesystem::exists(status)) {
    return makeError("cannot hash " + p.string() + " for the cache key: " +
                     (ec ? ec.message() : std::string("no such file or directory")));
  }
  if (!std::filesystem::is_directory(status)) {
    return digestFile(p);
  }
  const std::filesystem::path skill = p / "SKILL.md";
  if (std::filesystem::is_regular_file(skill, ec)) {
    return digestFile(skill);
  }
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::filesystem::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) {
      continue;
    }
    auto digest = digestFile(it->path());
    if (!digest) {
      return digest.error();
    }
    entries.emplace_back(it->path().filename().string(), std::move(*digest));
  }
  if (ec) {
    return makeError("cannot list " + p.string() + " to hash it for the cache key: " +
                     ec.message());
  }
  std::sort(entries.begin(), entries.end());
  std::string listing;
  for (const auto& [name, digest] : entries) {
    listing += name;
    listing += '\0';
    listing += digest;
    listing += '\n';
  }
  return sha256Hex(listing);
}

struct CacheStore::Private {};

struct CacheStore::Sql {
  sqlite::Db db;
  sqlite::Stmt begin_read;
  sqlite::Stmt end_read;
  sqlite::Stmt get;
  sqlite::Stmt put;
  sqlite::Stmt list;
  sqlite::Stmt touch;
};

CacheStore::CacheStore(const Private&) : sql_(std::make_unique<Sql>()) {}

CacheStore::~CacheStore() {
  std::lock_guard lock(mutex_);
  endRead();
  // Committed, then the journal goes; on failure it stays and the next open() folds it.
  if (journal_.isOpen() && flushLocked()) {
    journal_.remove();
  }
}

Result<std::unique_ptr<CacheStore>> CacheStore::open(const std::filesystem::path& cache_dir) {
  auto store = std::make_unique<CacheStore>(Private{});
  if (auto r = store->init(cache_dir); !r) {
    return makeError("cannot open the cache in " + cache_dir.string() + ": " + r.error().message);
  }
  return store;
}

std::unique_ptr<CacheStore> CacheStore::open(std::unique_ptr<RemoteCache> remote) {
  auto store = std::make_unique<CacheStore>(Private{});
  store->path_ = remote->describe();
  store->remote_ = std::move(remote);
  return store;
}

Result<void> CacheStore::init(const std::filesystem::path& cache_dir) {
  std::error_code ec;
  std::filesystem::create_directories(cache_dir, ec);
  if (ec) {
    return makeError(ec.message());
  }
  path_ = cache_dir / "cache.sqlite";
  auto db = sqlite::open(path_);
  if (!db) {
    return db.error();
  }
  sql_->db = std::move(*db);
  sqlite3* h = sql_->db.get();
  if (auto r = sqlite::useWal(h); !r) {
    return r;
  }
  if (auto r = sqlite::createSchema(h, kSchemaSql); !r) {
    return r;
  }
  if (auto r = addUsageColumns(h); !r) {
    return r;
  }
  for (auto [slot, sql] : {std::pair{&sql_->begin_read, std::string_view("BEGIN")},
                           std::pair{&sql_->end_read, std::string_view("COMMIT")},
                           std::pair{&sql_->get, kGetSql}, std::pair{&sql_->put, kPutSql},
                           std::pair{&sql_->list, kListSql}, std::pair{&sql_->touch, kTouchSql}}) {
    auto stmt = sqlite::prepare(h, sql);
    if (!stmt) {
      return stmt.error();
    }
    *slot = std::move(*stmt);
  }
  Journal::foldOrphans(cache_dir, kJournalPrefix,
                       [this](const std::filesystem::path& journal, std::string_view text) {
                         return foldOrphan(journal, text);
                       });
  return {};
}

void CacheStore::endRead() {
  if (reading_) {
    sqlite3_step(sql_->end_read.get());
    sqlite3_reset(sql_->end_read.get());
    reading_ = false;
  }
}

Result<void> CacheStore::commitEntries(const std::vector<JournalEntry>& entries,
                                      const std::string& where) {
  endRead();
  sqlite3* h = sql_->db.get();
  auto fail = [&](const std::string& message) -> Result<void> {
    (void)sqlite::exec(h, "ROLLBACK");
    return makeError("cannot fold the cache journal " + where + " into " + path_.string() +
                     ": " + message);
  };
  if (auto r = sqlite::exec(h, "BEGIN IMMEDIATE"); !r) {
    return fail(r.error().message);
  }
  sqlite3_stmt* stmt = sql_->put.get();
  for (const JournalEntry& e : entries) {
    sqlite::StmtScope scope(stmt);
    sqlite::bindText(stmt, 1, e.key);
    sqlite::bindText(stmt, 2, e.node_id);
    sqlite::bindText(stmt, 3, e.run_id);
    sqlite::bindText(stmt, 4, e.created_at);
    sqlite::bindText(stmt, 5, e.output);
    if (sqlite3_step(stmt) != SQLITE_DONE) {
      return fail(sqlite::errorOf(h));
    }
  }
  if (auto r = sqlite::exec(h, "COMMIT"); !r) {
    return fail(r.error().message);
  }
  return {};
}

bool CacheStore::foldOrphan(const std::filesystem::path& journal, std::string_view text) {
  const auto entries = parseJournal(text);
  return entries.empty() || commitEntries(entries, journal.string());
}

std::optional<Json> CacheStore::get(std::string_view key) {
  std::lock_guard lock(mutex_);
  if (remote_) {
    auto text = remote_->get(key);
    if (!text) {
      return std::nullopt;
    }
    Json output = Json::parse(*text, nullptr, false);
    return output.is_discarded() ? std::nullopt : std::optional<Json>(std::move(output));
  }
  if (!batch_index_.empty()) {
    if (auto it = batch_index_.find(std::string(key)); it != batch_index_.end()) {
      Json output = Json::parse(batch_[it->second].output, nullptr, false);
      return output.is_discarded() ? std::nullopt : std::optional<Json>(std::move(output));
    }
  }
  const auto now = std::chrono::steady_clock::now();
  if (reading_ && now - read_started_ > kReadSpan) {
    endRead();
  }
  if (!reading_) {
    // Without it (BEGIN failing) each lookup is its own read transaction: slower, as correct.
    reading_ = sqlite3_step(sql_->begin_read.get()) == SQLITE_DONE;
    sqlite3_reset(sql_->begin_read.get());
    read_started_ = now;
  }
  sqlite3_stmt* stmt = sql_->get.get();
  sqlite::StmtScope scope(stmt);
  sqlite::bindText(stmt, 1, key);
  if (sqlite3_step(stmt) != SQLITE_ROW) {
    return std::nullopt;
  }
  Json output = Json::parse(sqlite::columnView(stmt, 0), nullptr, false);
  if (output.is_discarded()) {
    return std::nullopt;
  }
  return output;
}

Result<void> CacheStore::put(std::string_view key, std::string_view node_id,
                             std::string_view run_id, const Json& output) {
  std::string text;
  try {
    text = output.dump();
  } catch (const Json::exception& e) {
    return makeError("cannot cache the output of node \"" + std::string(node_id) +
                     "\": " + e.what());
  }
  if (remote_) {
    std::lock_guard lock(mutex_);
    if (auto r = remote_->put(key, node_id, run_id, text); !r) {
      return makeError("cannot store the cache entry of node \"" + std::string(node_id) + "\" in " +
                       path_.string() + ": " + r.error().message);
    }
    return {};
  }
  JournalEntry entry{std::string(key), std::string(node_id), std::string(run_id),
                     sqlite::isoNow(), std::move(text)};
  std::string line;
  line.reserve(entry.output.size() + key.size() + node_id.size() + run_id.size() + 64);
  line += "{\"k\":";
  line += jsonQuoted(key);
  line += ",\"n\":";
  line += jsonQuoted(node_id);
  line += ",\"r\":";
  line += jsonQuoted(run_id);
  line += ",\"t\":\"";
  line += entry.created_at;
  line += "\",\"o\":";
  line += entry.output;
  line += "}\n";
  std::lock_guard lock(mutex_);
  if (!journal_.isOpen()) {
    auto journal = Journal::create(path_.parent_path(), kJournalPrefix);
    if (!journal) {
      return makeError("cannot store the cache entry of node \"" + std::string(node_id) +
                       "\": " + journal.error().message);
    }
    journal_ = std::move(*journal);
  }
  if (auto r = journal_.append(line); !r) {
    // The journal cut off what got in (or, failing that, closed: the next put() starts a new
    // one), so a torn line can only cost itself.
    return makeError("cannot store the cache entry of node \"" + std::string(node_id) +
                     "\": " + r.error().message);
  }
  if (auto it = batch_index_.find(entry.key); it != batch_index_.end()) {
    batch_[it->second] = std::move(entry);
  } else {
    batch_index_.emplace(entry.key, batch_.size());
    batch_.push_back(std::move(entry));
  }
  if (batch_.size() >= kFoldEntries) {
    (void)flushLocked();  // on failure the entries stay batched and journaled: retried later
  }
  return {};
}

Result<void> CacheStore::flushLocked() {
  if (batch_.empty()) {
    return {};
  }
  if (auto r = commitEntries(batch_, journal_.path().string()); !r) {
    return r;
  }
  // Committed: start the journal again (a kill before this only means folding it twice, and
  // folding is an upsert of the same rows). If it cannot be emptied it goes, and the next put()
  // opens a new one.
  if (!journal_.clear()) {
    journal_.remove();
  }
  batch_.clear();
  batch_index_.clear();
  return {};
}

Result<void> CacheStore::flush() {
  std::lock_guard lock(mutex_);
  return flushLocked();
}

std::vector<CacheEntry> CacheStore::list() {
  std::lock_guard lock(mutex_);
  if (remote_) {
    return {};
  }
  endRead();
  (void)flushLocked();  // on failure its entries are still listed from the journal below
  sqlite3_stmt* stmt = sql_->list.get();
  sqlite::StmtScope scope(stmt);
  std::vector<CacheEntry> out;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    CacheEntry e;
    e.key = sqlite::columnText(stmt, 0);
    e.node_id = sqlite::columnText(stmt, 1);
    e.run_id = sqlite::columnText(stmt, 2);
    e.created_at = sqlite::columnText(stmt, 3);
    e.size_bytes = static_cast<size_t>(sqlite3_column_int64(stmt, 4));
    e.last_used_run = sqlite::columnText(stmt, 5);
    e.last_used_at = sqlite::columnText(stmt, 6);
    out.push_back(std::move(e));
  }
  // Entries still in journals: this store's when the fold failed, and those of runs going on
  // now in other processes. A journal entry is newer than a row with the same key.
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < out.size(); ++i) {
    index.emplace(out[i].key, i);
  }
  for (const auto& journal : Journal::list(path_.parent_path(), kJournalPrefix)) {
    for (JournalEntry& j : parseJournal(readFile(journal).value_or(std::string()))) {
      CacheEntry e{j.key, j.node_id, j.run_id, j.created_at, j.output.size(), {}, {}};
      if (auto at = index.find(j.key); at != index.end()) {
        e.last_used_run = out[at->second].last_used_run;
        e.last_used_at = out[at->second].last_used_at;
        out[at->second] = std::move(e);
      } else {
        index.emplace(j.key, out.size());
        out.push_back(std::move(e));
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const CacheEntry& a, const CacheEntry& b) {
    return a.created_at != b.created_at ? a.created_at < b.created_at : a.key < b.key;
  });
  return out;
}

Result<void> CacheStore::touch(const std::vector<std::string>& keys, std::string_view run_id) {
  if (keys.empty()) {
    return {};
  }
  const std::string used_at = sqlite::isoNow();
  std::lock_guard lock(mutex_);
  if (remote_) {
    return remote_->touch(keys, run_id);
  }
  endRead();
  if (auto r = flushLocked(); !r) {
    return r;
  }
  sqlite3* h = sql_->db.get();
  if (auto r = sqlite::exec(h, "BEGIN IMMEDIATE"); !r) {
    return makeError("cannot record the cache entries run " + std::string(run_id) +
                     " replayed in " + path_.string() + ": " + r.error().message);
  }
  sqlite3_stmt* stmt = sql_->touch.get();
  for (const std::string& key : keys) {
    sqlite::StmtScope scope(stmt);
    sqlite::bindText(stmt, 1, key);
    sqlite::bindText(stmt, 2, run_id);
    sqlite::bindText(stmt, 3, used_at);
    if (sqlite3_step(stmt) != SQLITE_DONE) {
      std::string message = sqlite::errorOf(h);
      (void)sqlite::exec(h, "ROLLBACK");
      return makeError("cannot record the cache entries run " + std::string(run_id) +
                       " replayed in " + path_.string() + ": " + message);
    }
  }
  if (auto r = sqlite::exec(h, "COMMIT"); !r) {
    (void)sqlite::exec(h, "ROLLBACK");
    return makeError("cannot record the cache entries run " + std::string(run_id) +
                     " replayed in " + path_.string() + ": " + r.error().message);
  }
  return {};
}

Result<PruneStats> CacheStore::prune(const std::unordered_set<std::string>& keep_runs,
                                     bool dry_run) {
  std::lock_guard lock(mutex_);
  if (remote_) {
    return makeError("pruning the cache is not supported for a PostgreSQL store yet (" +
                     path_.string() + ")");
  }
  endRead();
  if (auto r = flushLocked(); !r) {
    return r.error();
  }
  sqlite3* h = sql_->db.get();
  // One transaction, so what is counted is what is deleted even if a run writes meanwhile.
  auto fail = [&](const std::string& message) -> Result<PruneStats> {
    (void)sqlite::exec(h, "ROLLBACK");  // fails harmlessly when no transaction is open
    return makeError("cannot prune the cache " + path_.string() + ": " + message);
  };
  if (auto r = sqlite::beginWithKeptRuns(h, keep_runs); !r) {
    return fail(r.error().message);
  }
  PruneStats stats;
  {
    auto count = sqlite::prepare(
        h, std::string("SELECT COUNT(*), COALESCE(SUM(length(CAST(output AS BLOB))), 0)") +
               kUnreferenced);
    if (!count) {
      return fail(count.error().message);
    }
    if (sqlite3_step(count->get()) != SQLITE_ROW) {
      return fail(sqlite::errorOf(h));
    }
    stats.entries = static_cast<size_t>(sqlite3_column_int64(count->get(), 0));
    stats.output_bytes = static_cast<uint64_t>(sqlite3_column_int64(count->get(), 1));
  }
  if (!dry_run && stats.entries > 0) {
    if (auto r = sqlite::exec(h, (std::string("DELETE") + kUnreferenced).c_str()); !r) {
      return fail(r.error().message);
    }
  }
  if (auto r = sqlite::exec(h, "DELETE FROM temp.gc_keep; COMMIT"); !r) {
    return fail(r.error().message);
  }
  return stats;
}

Result<void> CacheStore::compact() {
  if (remote_) {
    return makeError("compacting the cache is not supported for a PostgreSQL store yet (" +
                     path_.string() + ")");
  }
  std::lock_guard lock(mutex_);
  endRead();
  if (auto r = flushLocked(); !r) {
    return r;
  }
  sqlite3* h = sql_->db.get();
  int64_t free_pages = 0;
  if (auto pragma = sqlite::prepare(h, "PRAGMA freelist_count");
      pragma && sqlite3_step(pragma->get()) == SQLITE_ROW) {
    free_pages = sqlite3_column_int64(pragma->get(), 0);
  }
  // VACUUM rebuilds the file without its free pages (in WAL mode through the WAL): only worth
  // it when there are some. The TRUNCATE checkpoint then copies the WAL back and empties it.
  if (free_pages > 0) {
    if (auto r = sqlite::exec(h, "VACUUM"); !r) {
      return makeError("cannot compact the cache " + path_.string() + ": " + r.error().message);
    }
  }
  if (auto r = sqlite::exec(h, "PRAGMA wal_checkpoint(TRUNCATE)"); !r) {
    return makeError("cannot checkpoint the cache " + path_.string() + ": " + r.error().message);
  }
  return {};
}

}  // namespace oe::cache
