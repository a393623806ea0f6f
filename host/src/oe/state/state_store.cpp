// StateStore: type checks and merges, the group-commit journal, SQLite; reads from the mirror.
#include "oe/state/state_store.hpp"

#include <system_error>

#include "oe/common/sqlite.hpp"

namespace oe::state {

namespace {

constexpr const char* kSchemaSql =
    "CREATE TABLE IF NOT EXISTS state_snapshot (field TEXT PRIMARY KEY, value TEXT NOT NULL, "
    "updated_at TEXT NOT NULL, updated_by_node TEXT NOT NULL, updated_by_run TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS state_history (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "field TEXT NOT NULL, value_old TEXT, value_new TEXT NOT NULL, node_id TEXT NOT NULL, "
    "run_id TEXT NOT NULL, ts TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS idx_history_field ON state_history(field);"
    "CREATE INDEX IF NOT EXISTS idx_history_run ON state_history(run_id);"
    // oe's own (not upstream's): how far each group-commit journal is folded.
    "CREATE TABLE IF NOT EXISTS oe_journal_folds (journal TEXT PRIMARY KEY, "
    "folded_bytes INTEGER NOT NULL);"
    // oe's own: the writes that landed in each chain of runs (`oe resume` does not apply them
    // again), the chains (numbered, so a mark does not repeat the chain's id) and the runs
    // that landed writes in each (oe gc keeps a chain's marks while one of them is kept).
    "CREATE TABLE IF NOT EXISTS oe_chains (id INTEGER PRIMARY KEY, "
    "chain_id TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS oe_chain_runs (chain INTEGER NOT NULL, run_id TEXT NOT NULL, "
    "PRIMARY KEY (chain, run_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS oe_landed_writes (chain INTEGER NOT NULL, "
    "write_key TEXT NOT NULL, input_key TEXT NOT NULL, PRIMARY KEY (chain, write_key)) "
    "WITHOUT ROWID;"
    // The marks as oe writes them now: one row per (chain, commit), `marks` a JSON array of
    // [write_key, input_key] pairs in landing order (a later pair with the same key wins).
    // A row per mark cost a B-tree insert per node write; oe_landed_writes, above, keeps the
    // marks older versions wrote, which are still read.
    "CREATE TABLE IF NOT EXISTS oe_landed_batches (id INTEGER PRIMARY KEY, "
    "chain INTEGER NOT NULL, marks TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS idx_landed_batches_chain ON oe_landed_batches(chain);";

constexpr std::string_view kUpsertSql =
    "INSERT INTO state_snapshot (field, value, updated_at, updated_by_node, updated_by_run) "
    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(field) DO UPDATE SET value = excluded.value, "
    "updated_at = excluded.updated_at, updated_by_node = excluded.updated_by_node, "
    "updated_by_run = excluded.updated_by_run";
constexpr std::string_view kHistorySql =
    "INSERT INTO state_history (field, value_old, value_new, node_id, run_id, ts) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
constexpr std::string_view kByFieldSql =
    "SELECT id, field, value_old, value_new, node_id, run_id, ts FROM state_history "
    "WHERE field = ?1 ORDER BY id";
constexpr std::string_view kFoldedSql =
    "INSERT INTO oe_journal_folds (journal, folded_bytes) VALUES (?1, ?2) "
    "ON CONFLICT(journal) DO UPDATE SET folded_bytes = excluded.folded_bytes";
constexpr std::string_view kSnapshotOfSql = "SELECT value FROM state_snapshot WHERE field = ?1";
constexpr std::string_view kChainSql =
    "INSERT INTO oe_chains (chain_id) VALUES (?1) ON CONFLICT(chain_id) DO NOTHING";
constexpr std::string_view kChainNumberSql = "SELECT id FROM oe_chains WHERE chain_id = ?1";
constexpr std::string_view kMemberSql =
    "INSERT INTO oe_chain_runs (chain, run_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING";
constexpr std::string_view kMarkSql =
    "INSERT INTO oe_landed_batches (chain, marks) VALUES (?1, ?2)";
// The rows of older versions first, then the batches in commit order: a later mark wins.
constexpr std::string_view kMarksOfChainSql =
    "SELECT write_key, input_key, NULL FROM oe_landed_writes WHERE chain = "
    "(SELECT id FROM oe_chains WHERE chain_id = ?1) UNION ALL "
    "SELECT * FROM (SELECT NULL, NULL, marks FROM oe_landed_batches WHERE chain = "
    "(SELECT id FROM oe_chains WHERE chain_id = ?1) ORDER BY id)";
constexpr std::string_view kFoldedBytesSql =
    "SELECT folded_bytes FROM oe_journal_folds WHERE journal = ?1";
constexpr std::string_view kByRunSql =
    "SELECT id, field, value_old, value_new, node_id, run_id, ts FROM state_history "
    "WHERE run_id = ?1 ORDER BY id";

constexpr size_t kMaxJsonInMessage = 200;

// The journals of the database at `db`: `<db file name>-oe-journal-<pid>-<random>.jsonl`.
std::string journalPrefix(const std::filesystem::path& db) {
  return db.filename().string() + "-oe-journal-";
}

std::filesystem::path dirOf(const std::filesystem::path& db) {
  return db.has_parent_path() ? db.parent_path() : std::filesystem::path(".");
}

const char* typeName(spec::FieldType type) {
  switch (type) {
    case spec::FieldType::kString: return "string";
    case spec::FieldType::kNumber: return "number";
    case spec::FieldType::kBoolean: return "boolean";
    case spec::FieldType::kObject: return "object";
    case spec::FieldType::kArray: return "array";
    case spec::FieldType::kNull: return "null";
    case spec::FieldType::kAny: return "any";
    default: return "unknown";
  }
}

// Upstream's checks (§3.6): kAny ($ref-only or no `type`) and kNull are never checked.
bool typeMatches(spec::FieldType type, const Json& value) {
  switch (type) {
    case spec::FieldType::kString: return value.is_string();
    case spec::FieldType::kNumber: return value.is_number();
    case spec::FieldType::kBoolean: return value.is_boolean();
    case spec::FieldType::kObject: return value.is_object();
    case spec::FieldType::kArray: return value.is_array();
    default: return true;
  }
}

// The JS-style name of a value's type, as upstream's message shows it.
const char* valueTypeName(const Json& value) {
  if (value.is_number()) {
    return "number";
  }
  return value.type_name();
}

// JSON for an error message, cut at ~200 bytes on a UTF-8 character boundary.
std::string shortJson(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() <= kMaxJsonInMessage) {
    return text;
  }
  size_t cut = kMaxJsonInMessage - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  text.resize(cut);
  text += "...";
  return text;
}

// jsonQuoted without its string: ids, keys and hex input keys need no escaping and are copied.
void appendQuoted(std::string& out, std::string_view s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {
      out += jsonQuoted(s);
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}

std::string inQuotes(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

// Serialises a value the way it is stored; invalid UTF-8 in a string is an error for the node,
// not an exception.
Result<std::string> toText(const Json& value, std::string_view node_id, std::string_view field) {
  try {
    return value.dump();
  } catch (const Json::exception& e) {
    return makeError("Node " + inQuotes(node_id) + " wrote a value to field " + inQuotes(field) +
                     " that cannot be stored as JSON (" + e.what() +
                     "). Fix the node's output (strings must be UTF-8).");
  }
}

// D17: the value_old of a history row that records an append onto an array of `length`
// elements. An array field's real old value is never an object, so a reader cannot mistake it.
std::string appendMarker(size_t length) {
  return "{\"$oe_append\":{\"from_length\":" + std::to_string(length) + "}}";
}

// Appends the items of each append row (array texts) to `value`, the array text they were
// appended onto; a value that is not an array counts as [] (the merge rule).
template <class RowPtrs>
void appendItems(std::string& value, const RowPtrs& appends) {
  while (!value.empty() && (value.back() == ' ' || value.back() == '\n' || value.back() == '\t' ||
                            value.back() == '\r')) {
    value.pop_back();
  }
  if (value.size() < 2 || value.front() != '[' || value.back() != ']') {
    value = "[]";
  }
  bool empty = value.find_first_not_of(" \n\t\r", 1) == value.size() - 1;
  size_t extra = 0;
  for (const auto* a : appends) {
    extra += a->new_text.size();
  }
  value.reserve(value.size() + extra);
  for (const auto* a : appends) {
    const std::string& items = a->new_text;
    if (items.size() <= 2) {
      continue;  // "[]"
    }
    if (empty) {
      value = items;
      empty = false;
      continue;
    }
    value.pop_back();
    value += ',';
    value.append(items, 1, std::string::npos);
  }
}

// The from_length of an append marker (D17); nullopt for any other value.
std::optional<size_t> appendedOnto(const Json& old) {
  if (!old.is_object() || old.size() != 1) {
    return std::nullopt;
  }
  const auto it = old.find("$oe_append");
  if (it == old.end() || !it->is_object()) {
    return std::nullopt;
  }
  const auto len = it->find("from_length");
  if (len == it->end() || !len->is_number_unsigned()) {
    return std::nullopt;
  }
  return len->get<size_t>();
}

Json parseStored(std::string_view text) {
  Json value = Json::parse(text, nullptr, false);
  // A row edited by hand into invalid JSON is shown as its raw text rather than dropped.
  return value.is_discarded() ? Json(std::string(text)) : value;
}

}  // namespace

struct StateStore::Private {};

struct StateStore::Sql {
  sqlite::Db db;
  sqlite::Stmt begin;
  sqlite::Stmt commit;
  sqlite::Stmt rollback;
  sqlite::Stmt upsert;
  sqlite::Stmt insert_history;
  sqlite::Stmt folded;
  sqlite::Stmt snapshot_of;
  sqlite::Stmt insert_chain;
  sqlite::Stmt chain_number;
  sqlite::Stmt insert_member;
  sqlite::Stmt insert_mark;
  sqlite::Stmt by_field;
  sqlite::Stmt by_run;
};

namespace {

Result<void> stepDone(sqlite3* db, sqlite3_stmt* stmt) {
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    std::string msg = sqlite::errorOf(db);
    sqlite3_reset(stmt);
    return makeError(std::move(msg));
  }
  sqlite3_reset(stmt);
  return {};
}

}  // namespace

StateStore::StateStore(const Private&, std::filesystem::path db_path,
                       const spec::StateSpec& schema)
    : path_(std::move(db_path)), sql_(std::make_unique<Sql>()) {
  slots_.reserve(schema.fields.size());
  for (const spec::FieldSpec& f : schema.fields) {
    if (by_name_.find(f.name) != by_name_.end()) {
      continue;  // the validator reports duplicates; the first declaration wins here
    }
    by_name_.emplace(f.name, slots_.size());
    slots_.push_back(Slot{f.name, f.type, f.merge, std::nullopt, {}});
  }
}

StateStore::~StateStore() {
  std::unique_ptr<FoldTimer> timer;
  {
    std::lock_guard lock(mutex_);
    timer = std::move(timer_);
  }
  // Joined without mutex_ held: a fold it is running takes mutex_. No fold from its thread
  // after this.
  timer.reset();
  std::lock_guard lock(mutex_);
  if (!journal_.isOpen()) {
    return;
  }
  // Committed, then the journal goes; on failure it stays and the next open() folds it.
  if (foldLocked()) {
    journal_.remove();
    // Its oe_journal_folds row with it; a row left behind only names a file that is gone (the
    // next open forgets it), so a failure here loses nothing.
    (void)forgetFoldedJournals();
  }
}

Result<std::unique_ptr<StateStore>> StateStore::open(const std::filesystem::path& db_path,
                                                     const spec::StateSpec& schema) {
  auto store = std::make_unique<StateStore>(Private{}, db_path, schema);
  if (auto r = store->init(); !r) {
    return makeError("cannot open the state database " + db_path.string() + ": " +
                     r.error().message);
  }
  return store;
}

Result<std::unique_ptr<StateStore>> StateStore::open(std::unique_ptr<StateBackend> backend,
                                                     const spec::StateSpec& schema) {
  const std::string where = backend->describe();
  auto store = std::make_unique<StateStore>(Private{}, where, schema);
  store->backend_ = std::move(backend);
  if (auto r = store->initBackend(); !r) {
    return makeError("cannot open the state store " + where + ": " + r.error().message);
  }
  return store;
}

Result<void> StateStore::initBackend() {
  auto rows = backend_->loadSnapshot();
  if (!rows) {
    return rows.error();
  }
  // Declared fields only, as init() loads state.sqlite.
  for (auto& [field, text] : *rows) {
    Slot* slot = find(field);
    if (slot == nullptr) {
      continue;
    }
    Json value = Json::parse(text, nullptr, false);
    if (value.is_discarded()) {
      return makeError("state field " + inQuotes(slot->name) +
                       " holds text that is not JSON. Reset the state (oe reset-state --yes).");
    }
    slot->text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
    slot->value = std::move(value);
  }
  return {};
}

Result<void> StateStore::init() {
  std::error_code ec;
  if (path_.has_parent_path()) {
    std::filesystem::create_directories(path_.parent_path(), ec);
    if (ec) {
      return makeError("cannot create " + path_.parent_path().string() + ": " + ec.message());
    }
  }
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
  struct Want {
    sqlite::Stmt* slot;
    std::string_view sql;
  };
  for (const Want& w : {Want{&sql_->begin, "BEGIN IMMEDIATE"}, Want{&sql_->commit, "COMMIT"},
                        Want{&sql_->rollback, "ROLLBACK"}, Want{&sql_->upsert, kUpsertSql},
                        Want{&sql_->insert_history, kHistorySql},
                        Want{&sql_->folded, kFoldedSql}, Want{&sql_->insert_chain, kChainSql},
                        Want{&sql_->snapshot_of, kSnapshotOfSql},
                        Want{&sql_->chain_number, kChainNumberSql},
                        Want{&sql_->insert_member, kMemberSql}, Want{&sql_->insert_mark, kMarkSql},
                        Want{&sql_->by_field, kByFieldSql}, Want{&sql_->by_run, kByRunSql}}) {
    auto stmt = sqlite::prepare(h, w.sql);
    if (!stmt) {
      return stmt.error();
    }
    *w.slot = std::move(*stmt);
  }

  // What killed stores left in their journals goes in before the mirror is loaded.
  Journal::foldOrphans(dirOf(path_), journalPrefix(path_),
                       [this](const std::filesystem::path& journal, std::string_view text) {
                         return foldOrphan(journal, text);
                       });
  if (auto r = forgetFoldedJournals(); !r) {
    return r;
  }

  // Load the mirror: declared fields only (rows of fields no longer declared stay in the file,
  // unseen, as upstream's snapshot() hides them).
  auto load = sqlite::prepare(h, "SELECT field, value FROM state_snapshot");
  if (!load) {
    return load.error();
  }
  sqlite3_stmt* stmt = load->get();
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    Slot* slot = find(sqlite::columnView(stmt, 0));
    if (slot == nullptr) {
      continue;
    }
    Json value = Json::parse(sqlite::columnView(stmt, 1), nullptr, false);
    if (value.is_discarded()) {
      return makeError("state field " + inQuotes(slot->name) +
                       " holds text that is not JSON. Reset the state (oe reset-state --yes).");
    }
    slot->text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
    slot->value = std::move(value);
  }
  if (rc != SQLITE_DONE) {
    return makeError(sqlite::errorOf(h));
  }
  return {};
}

StateStore::Slot* StateStore::find(std::string_view name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &slots_[it->second];
}

const StateStore::Slot* StateStore::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &slots_[it->second];
}

const Json* StateStore::field(std::string_view name) const {
  const Slot* slot = find(name);
  return slot != nullptr && slot->value ? &*slot->value : nullptr;
}

Json StateStore::snapshot() const {
  Json out = Json::object();
  for (const Slot& slot : slots_) {
    if (slot.value) {
      out[slot.name] = *slot.value;
    }
  }
  return out;
}

Result<std::vector<std::string>> StateStore::write(const Json& delta, const WriteMeta& meta) {
  const std::string_view node = meta.node_id;
  if (!delta.is_object()) {
    return makeError("Node " + inQuotes(node) + " returned a state_delta that is " +
                     valueTypeName(delta) +
                     ", not an object. Return {\"<field>\": <value>, ...} from the node.");
  }

  // Phase 1, in memory only: check every key and compute its merged text. Nothing is touched
  // until all keys pass, so an error leaves both the file and the mirror as they were.
  const Json null_value;  // D10: an absent/undefined value is stored as JSON null
  std::vector<Pending> pending;
  pending.reserve(delta.size());
  for (const auto& [key, raw_value] : delta.items()) {
    const Json& incoming = raw_value.is_discarded() ? null_value : raw_value;
    Slot* slot = find(key);
    if (slot == nullptr) {
      return makeError("Node " + inQuotes(node) + " wrote to undeclared state field " +
                       inQuotes(key) +
                       ". Declare it in state.schema or remove it from the node's output.");
    }
    if (!incoming.is_null() && !typeMatches(slot->type, incoming)) {
      return makeError("Node " + inQuotes(node) + " wrote " + valueTypeName(incoming) +
                       " to field " + inQuotes(key) + ", which is declared as type " +
                       typeName(slot->type) +
                       " in state.schema. Fix the node's output or update state.schema.");
    }
    switch (slot->merge) {
      case spec::MergeStrategy::kArrayAppend: {
        if (!incoming.is_array()) {
          return makeError("Field " + inQuotes(key) +
                           " uses array_append but write is not an array");
        }
        auto text = toText(incoming, node, key);
        if (!text) {
          return text.error();
        }
        if (slot->value && slot->value->is_array()) {
          // D17: onto an existing array, the history row (and the journal line) records what
          // was appended, not the whole list twice: a write stays O(appended items).
          pending.push_back(Pending{slot, &incoming, true, std::move(*text)});
        } else {
          pending.push_back(Pending{slot, &incoming, false, std::move(*text)});
        }
        break;
      }
      case spec::MergeStrategy::kSetOnce: {
        if (slot->value) {
          if (*slot->value == incoming) {
            continue;  // D2: the same value again is a no-op (re-runs, resume, cache replay)
          }
          if (!slot->value->is_null()) {
            return makeError("Field " + inQuotes(key) + " is set_once and already has value " +
                             shortJson(*slot->value) + "; node " + inQuotes(node) +
                             " tried to write " + shortJson(incoming) +
                             ". Reset the state (oe reset-state --yes) or make the field "
                             "last_wins.");
          }
        }
        [[fallthrough]];
      }
      default: {
        auto text = toText(incoming, node, key);
        if (!text) {
          return text.error();
        }
        pending.push_back(Pending{slot, &incoming, false, std::move(*text)});
        break;
      }
    }
  }

  std::vector<std::string> written;
  // Every tracked write lands its mark, a last_wins one too: applied again on a resume, it
  // would put back a value that a later node had overwritten. A tracked write whose fields
  // were all skipped (set_once, same value) still lands its mark; an empty delta, which
  // changes nothing however often it is applied, records none.
  const bool mark = !delta.empty() && !meta.write_key.empty() && !chain_id_.empty();
  if (pending.empty() && !mark) {
    return written;
  }

  // Phase 2: one journal line, {"n":node,"r":run,"t":ts,["c":chain,"k":write_key,
  // "i":input_key,]"w":[[field,old,new],...]} with old and new as stored (old null when
  // unset), appended with one write(2): from here the write, and its mark, survive a kill.
  // All rows share one ts (upstream does the same).
  const std::string ts = sqlite::isoNow();
  if (backend_) {
    if (auto r = writeBackend(pending, meta, ts, mark); !r) {
      return r.error();
    }
  } else if (auto r = writeJournal(pending, meta, ts, mark); !r) {
    return r.error();
  }

  // Phase 3: stored; update the mirror (cannot fail).
  if (mark) {
    if (auto it = landed_.find(meta.write_key); it != landed_.end()) {
      it->second.assign(meta.input_key);
    } else {
      landed_.emplace(std::string(meta.write_key), std::string(meta.input_key));
    }
  }
  written.reserve(pending.size());
  for (Pending& p : pending) {
    Slot& slot = *p.slot;
    if (p.append) {
      slot.value->insert(slot.value->end(), p.incoming->begin(), p.incoming->end());
      slot.text_stale = true;  // rebuilt only if ever needed (an array stays an array)
    } else {
      slot.value = *p.incoming;
      slot.text = std::move(p.text);
      slot.text_stale = false;
    }
    written.push_back(slot.name);
  }
  return written;
}

std::optional<std::string> StateStore::oldTextOf(const Pending& p) {
  if (p.append) {
    return appendMarker(p.slot->value->size());
  }
  if (p.slot->value) {
    return p.slot->text;
  }
  return std::nullopt;
}

Result<void> StateStore::writeBackend(const std::vector<Pending>& pending, const WriteMeta& meta,
                                      const std::string& ts, bool mark) {
  std::vector<BackendRow> rows;
  rows.reserve(pending.size());
  for (const Pending& p : pending) {
    rows.push_back(BackendRow{p.slot->name, oldTextOf(p), p.text, p.append});
  }
  // Unique across the processes writing the scope: a retried transaction recognizes its rows.
  const std::string write_id = std::string(meta.run_id) + ":" + std::to_string(++writes_);
  const BackendWrite write{write_id,
                           meta.node_id,
                           meta.run_id,
                           ts,
                           mark ? std::string_view(chain_id_) : std::string_view(),
                           meta.write_key,
                           meta.input_key,
                           rows};
  if (auto r = backend_->write(write); !r) {
    return makeError("cannot write the state of node " + inQuotes(meta.node_id) + ": " +
                     r.error().message + ". Nothing of the node's output was applied.");
  }
  return {};
}

Result<void> StateStore::writeJournal(const std::vector<Pending>& pending, const WriteMeta& meta,
                                      const std::string& ts, bool mark) {
  const std::string_view node = meta.node_id;
  std::string line;
  line.reserve(64 + node.size() + meta.run_id.size() + pending.size() * 32 +
               (mark ? chain_quoted_.size() + meta.write_key.size() + meta.input_key.size() + 16
                     : 0));
  line += "{\"n\":";
  appendQuoted(line, node);
  line += ",\"r\":";
  appendQuoted(line, meta.run_id);
  line += ",\"t\":\"";
  line += ts;
  line += '"';
  // Where the mark's quoted key and input sit in the line: the batch's row reuses them.
  size_t key_at = 0;
  size_t key_end = 0;
  size_t input_at = 0;
  if (mark) {
    line += ",\"c\":";
    line += chain_quoted_;
    line += ",\"k\":";
    key_at = line.size();
    appendQuoted(line, meta.write_key);
    key_end = line.size();
    line += ",\"i\":";
    input_at = line.size();
    appendQuoted(line, meta.input_key);
  }
  const size_t input_end = line.size();
  line += ",\"w\":[";
  for (size_t i = 0; i < pending.size(); ++i) {
    const Pending& p = pending[i];
    line += i == 0 ? "[" : ",[";
    line += jsonQuoted(p.slot->name);
    line += ',';
    if (p.append) {
      // [field, {"$oe_append":{"from_length":N}}, items, "append"]: the 4th element says the
      // row is an append (the fold rebuilds the snapshot from the stored value).
      line += appendMarker(p.slot->value->size());
      line += ',';
      line += p.text;
      line += ",\"append\"]";
      continue;
    }
    line += p.slot->value ? std::string_view(p.slot->text) : std::string_view("null");
    line += ',';
    line += p.text;
    line += ']';
  }
  line += "]}\n";
  {
    std::lock_guard lock(mutex_);
    if (!journal_.isOpen()) {
      // A journal that failed and closed still has a batch in it: committed under its own
      // name first, so that its file, now unlocked, is never folded twice.
      if (auto r = foldLocked(); !r) {
        return makeError("cannot write the state of node " + inQuotes(node) + ": " +
                         r.error().message + ". Nothing of the node's output was applied.");
      }
      auto journal = Journal::create(dirOf(path_), journalPrefix(path_));
      if (!journal) {
        return makeError("cannot write the state of node " + inQuotes(node) + ": " +
                         journal.error().message + ". Nothing of the node's output was applied.");
      }
      journal_ = std::move(*journal);
    }
    if (auto r = journal_.append(line); !r) {
      return makeError("cannot write the state of node " + inQuotes(node) + ": " +
                       r.error().message + ". Nothing of the node's output was applied.");
    }
    const bool first = batch_.empty() && marks_ == 0;
    for (const Pending& p : pending) {
      batch_.push_back(Row{p.slot->name, oldTextOf(p), p.text, std::string(node),
                           std::string(meta.run_id), ts, p.append});
    }
    if (mark) {
      const std::string_view text(line);
      addMark(members_, chain_id_, meta.run_id, text.substr(key_at, key_end - key_at),
              text.substr(input_at, input_end - input_at));
      ++marks_;
    }
    if (batch_.size() >= kFoldRows || marks_ >= kFoldRows) {
      // A failed fold keeps the rows (journal and batch): the next fold retries; the write
      // itself is already durable.
      (void)foldLocked();
    } else if (first) {
      if (!timer_) {
        timer_ = std::make_unique<FoldTimer>(kFoldDelay, [this] {
          std::lock_guard timed(mutex_);
          (void)foldLocked();
        });
      }
      timer_->arm();
    }
  }
  return {};
}

void StateStore::addMark(std::vector<Member>& members, std::string_view chain_id,
                         std::string_view run_id, std::string_view quoted_key,
                         std::string_view quoted_input) {
  if (members.empty() || members.back().run_id != run_id ||
      members.back().chain_id != chain_id) {
    members.push_back(Member{std::string(chain_id), std::string(run_id), "["});
  }
  std::string& pairs = members.back().pairs;
  pairs += pairs.size() == 1 ? "[" : ",[";
  pairs += quoted_key;
  pairs += ',';
  pairs += quoted_input;
  pairs += ']';
}

Result<void> StateStore::commitRows(const std::vector<Row>& rows,
                                    const std::vector<Member>& members,
                                    const std::string& journal, uint64_t folded_bytes) {
  sqlite3* h = sql_->db.get();
  if (auto r = stepDone(h, sql_->begin.get()); !r) {
    return makeError("cannot start a state transaction in " + path_.string() + ": " +
                     r.error().message);
  }
  Result<void> r;
  // History rows as they are (an append row holds the appended items, D17); the snapshot row
  // of each field once, from its last full value (in the batch, else in state_snapshot) plus
  // the items appended after it: a batch of appends costs O(list + items), not O(list) each.
  struct FieldEnd {
    const Row* last = nullptr;
    const Row* full = nullptr;  // the last non-append row, if any
    std::vector<const Row*> appends;  // after `full`
  };
  std::vector<std::pair<std::string_view, FieldEnd>> ends;  // first-write order
  std::unordered_map<std::string_view, size_t> end_of;
  for (const Row& row : rows) {
    auto [at, added] = end_of.try_emplace(row.field, ends.size());
    if (added) {
      ends.emplace_back(row.field, FieldEnd{});
    }
    FieldEnd& end = ends[at->second].second;
    end.last = &row;
    if (row.append) {
      end.appends.push_back(&row);
    } else {
      end.full = &row;
      end.appends.clear();
    }
    sqlite3_stmt* hist = sql_->insert_history.get();
    sqlite::StmtScope scope(hist);
    sqlite::bindText(hist, 1, row.field);
    if (row.old_text) {
      sqlite::bindText(hist, 2, *row.old_text);
    } else {
      sqlite3_bind_null(hist, 2);
    }
    sqlite::bindText(hist, 3, row.new_text);
    sqlite::bindText(hist, 4, row.node_id);
    sqlite::bindText(hist, 5, row.run_id);
    sqlite::bindText(hist, 6, row.ts);
    r = stepDone(h, hist);
    if (!r) {
      r = makeError("cannot write state field " + inQuotes(row.field) + " for node " +
                    inQuotes(row.node_id) + ": " + r.error().message);
      break;
    }
  }
  for (size_t i = 0; r && i < ends.size(); ++i) {
    const FieldEnd& end = ends[i].second;
    std::string value;
    if (end.full != nullptr) {
      value = end.full->new_text;
    } else {
      sqlite3_stmt* get = sql_->snapshot_of.get();
      sqlite::StmtScope scope(get);
      sqlite::bindText(get, 1, ends[i].first);
      const int rc = sqlite3_step(get);
      if (rc == SQLITE_ROW) {
        value = sqlite::columnText(get, 0);
      } else if (rc == SQLITE_DONE) {
        value = "[]";  // no value yet: appended onto nothing
      } else {
        r = makeError("cannot read the value of field " + inQuotes(std::string(ends[i].first)) +
                      ": " + sqlite::errorOf(h));
        break;
      }
    }
    if (!end.appends.empty()) {
      appendItems(value, end.appends);
    }
    sqlite3_stmt* up = sql_->upsert.get();
    sqlite::StmtScope scope(up);
    sqlite::bindText(up, 1, ends[i].first);
    sqlite::bindText(up, 2, value);
    sqlite::bindText(up, 3, end.last->ts);
    sqlite::bindText(up, 4, end.last->node_id);
    sqlite::bindText(up, 5, end.last->run_id);
    r = stepDone(h, up);
    if (!r) {
      r = makeError("cannot write state field " + inQuotes(std::string(ends[i].first)) +
                    " for node " + inQuotes(end.last->node_id) + ": " + r.error().message);
    }
  }
  // The marks: each (chain, run) pair once (the chain numbered on first use), then one upsert
  // per mark.
  std::vector<int64_t> chain_of(members.size(), 0);
  for (size_t i = 0; r && i < members.size(); ++i) {
    const Member& m = members[i];
    {
      sqlite3_stmt* ins = sql_->insert_chain.get();
      sqlite::StmtScope scope(ins);
      sqlite::bindText(ins, 1, m.chain_id);
      r = stepDone(h, ins);
    }
    if (r) {
      sqlite3_stmt* num = sql_->chain_number.get();
      sqlite::StmtScope scope(num);
      sqlite::bindText(num, 1, m.chain_id);
      if (sqlite3_step(num) == SQLITE_ROW) {
        chain_of[i] = sqlite3_column_int64(num, 0);
      } else {
        r = makeError(sqlite::errorOf(h));
      }
    }
    if (r) {
      sqlite3_stmt* ins = sql_->insert_member.get();
      sqlite::StmtScope scope(ins);
      sqlite3_bind_int64(ins, 1, chain_of[i]);
      sqlite::bindText(ins, 2, m.run_id);
      r = stepDone(h, ins);
    }
    if (!r) {
      r = makeError("cannot record chain " + inQuotes(m.chain_id) + ": " + r.error().message);
    }
  }
  // The marks: one row per (chain, run) pair of the batch, their pairs in landing order.
  std::string text;
  for (size_t i = 0; r && i < members.size(); ++i) {
    text = members[i].pairs;
    text += ']';
    sqlite3_stmt* ins = sql_->insert_mark.get();
    sqlite::StmtScope scope(ins);
    sqlite3_bind_int64(ins, 1, chain_of[i]);
    sqlite::bindText(ins, 2, text);
    r = stepDone(h, ins);
    if (!r) {
      r = makeError("cannot record the landed writes of run " + inQuotes(members[i].run_id) +
                    ": " + r.error().message);
    }
  }
  if (r) {
    sqlite3_stmt* folded = sql_->folded.get();
    sqlite::StmtScope scope(folded);
    sqlite::bindText(folded, 1, journal);
    sqlite3_bind_int64(folded, 2, static_cast<sqlite3_int64>(folded_bytes));
    r = stepDone(h, folded);
  }
  if (r) {
    r = stepDone(h, sql_->commit.get());
  }
  if (!r) {
    (void)stepDone(h, sql_->rollback.get());
    return makeError("cannot commit state rows to " + path_.string() + ": " + r.error().message +
                     ". They are kept in " + journal + " and committed later.");
  }
  return {};
}

Result<void> StateStore::foldLocked() {
  if (batch_.empty() && marks_ == 0) {
    return {};
  }
  if (timer_) {
    timer_->disarm();
  }
  if (auto r =
          commitRows(batch_, members_, journal_.path().filename().string(), journal_.size());
      !r) {
    return r;
  }
  batch_.clear();
  members_.clear();
  marks_ = 0;
  return {};
}

Result<void> StateStore::flush() {
  std::lock_guard lock(mutex_);
  return foldLocked();
}

bool StateStore::foldOrphan(const std::filesystem::path& journal, std::string_view text) {
  const std::string name = journal.filename().string();
  // How far it is folded. Not knowing (a failed query) must not mean "from 0": that would
  // apply the folded lines twice. The journal is then left for the next open.
  uint64_t from = 0;
  auto stmt = sqlite::prepare(sql_->db.get(), kFoldedBytesSql);
  if (!stmt) {
    return false;
  }
  sqlite::bindText(stmt->get(), 1, name);
  const int rc = sqlite3_step(stmt->get());
  if (rc == SQLITE_ROW) {
    from = static_cast<uint64_t>(sqlite3_column_int64(stmt->get(), 0));
  } else if (rc != SQLITE_DONE) {
    return false;
  }
  sqlite3_reset(stmt->get());  // its read ends before the fold's write transaction
  std::vector<Row> rows;
  std::vector<Member> members;
  if (from < text.size()) {
    // A line that does not parse (the torn last line of a killed store) is skipped: its node
    // never reached node.finished, so nothing relies on it.
    Journal::forEachLine(text.substr(from), [&rows, &members](std::string_view line) {
      const Json entry = Json::parse(line, nullptr, false);
      if (!entry.is_object()) {
        return;
      }
      const auto node = entry.find("n");
      const auto run = entry.find("r");
      const auto ts = entry.find("t");
      const auto writes = entry.find("w");
      if (node == entry.end() || !node->is_string() || run == entry.end() ||
          !run->is_string() || ts == entry.end() || !ts->is_string() ||
          writes == entry.end() || !writes->is_array()) {
        return;
      }
      // Lines written before landed-write marks have no "c"/"k"/"i": no mark.
      const auto chain = entry.find("c");
      const auto key = entry.find("k");
      const auto input = entry.find("i");
      if (chain != entry.end() && chain->is_string() && key != entry.end() &&
          key->is_string() && input != entry.end() && input->is_string()) {
        addMark(members, chain->get_ref<const std::string&>(),
                run->get_ref<const std::string&>(), jsonQuoted(key->get_ref<const std::string&>()),
                jsonQuoted(input->get_ref<const std::string&>()));
      }
      for (const Json& w : *writes) {
        // [field, old, new] or, an append (D17), [field, marker, items, "append"].
        const bool append = w.is_array() && w.size() == 4 && w[3] == "append";
        if (!w.is_array() || (w.size() != 3 && !append) || !w[0].is_string()) {
          continue;
        }
        rows.push_back(Row{w[0].get<std::string>(),
                           w[1].is_null() ? std::nullopt : std::optional<std::string>(w[1].dump()),
                           w[2].dump(), node->get<std::string>(), run->get<std::string>(),
                           ts->get<std::string>(), append});
      }
    });
  }
  return (rows.empty() && members.empty()) || commitRows(rows, members, name, text.size());
}

Result<void> StateStore::forgetFoldedJournals() {
  sqlite3* h = sql_->db.get();
  auto names = sqlite::prepare(h, "SELECT journal FROM oe_journal_folds");
  if (!names) {
    return names.error();
  }
  std::vector<std::string> gone;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(names->get())) == SQLITE_ROW) {
    std::string name = sqlite::columnText(names->get(), 0);
    std::error_code ec;
    if (!std::filesystem::exists(dirOf(path_) / name, ec)) {
      gone.push_back(std::move(name));
    }
  }
  if (rc != SQLITE_DONE) {
    return makeError(sqlite::errorOf(h));
  }
  sqlite3_reset(names->get());
  if (gone.empty()) {
    return {};
  }
  auto forget = sqlite::prepare(h, "DELETE FROM oe_journal_folds WHERE journal = ?1");
  if (!forget) {
    return forget.error();
  }
  for (const std::string& name : gone) {
    sqlite::StmtScope scope(forget->get());
    sqlite::bindText(forget->get(), 1, name);
    if (auto r = stepDone(h, forget->get()); !r) {
      return r;
    }
  }
  return {};
}

Result<void> StateStore::beginChain(std::string_view chain_id) {
  if (backend_) {
    auto marks = backend_->landedWrites(chain_id);
    if (!marks) {
      return makeError("cannot read the landed writes of chain " + inQuotes(chain_id) + " in " +
                       path_.string() + ": " + marks.error().message);
    }
    landed_.clear();
    for (auto& [key, input] : *marks) {
      landed_.emplace(key, std::move(input));
    }
    chain_id_.assign(chain_id);
    return {};
  }
  std::lock_guard lock(mutex_);
  // The batch may hold marks of the previous chain: committed first, so the query below sees
  // everything this store landed.
  if (auto r = foldLocked(); !r) {
    return r;
  }
  auto stmt = sqlite::prepare(sql_->db.get(), kMarksOfChainSql);
  if (!stmt) {
    return makeError("cannot read the landed writes of chain " + inQuotes(chain_id) + " in " +
                     path_.string() + ": " + stmt.error().message);
  }
  sqlite::bindText(stmt->get(), 1, chain_id);
  std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> landed;
  auto put = [&landed](std::string key, std::string input) {
    landed.insert_or_assign(std::move(key), std::move(input));
  };
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(stmt->get())) == SQLITE_ROW) {
    if (sqlite3_column_type(stmt->get(), 2) == SQLITE_NULL) {
      put(sqlite::columnText(stmt->get(), 0), sqlite::columnText(stmt->get(), 1));
      continue;
    }
    // A batch: [[write_key, input_key], ...]. A row that is not that shape (edited by hand)
    // is skipped: its writes then count as not landed, as before marks existed.
    const Json pairs = Json::parse(sqlite::columnView(stmt->get(), 2), nullptr, false);
    for (const Json& pair : pairs.is_array() ? pairs : Json::array()) {
      if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string()) {
        put(pair[0].get<std::string>(), pair[1].get<std::string>());
      }
    }
  }
  if (rc != SQLITE_DONE) {
    return makeError("cannot read the landed writes of chain " + inQuotes(chain_id) + " in " +
                     path_.string() + ": " + sqlite::errorOf(sql_->db.get()));
  }
  chain_id_.assign(chain_id);
  chain_quoted_ = jsonQuoted(chain_id);
  landed_ = std::move(landed);
  return {};
}

bool StateStore::landed(std::string_view write_key, std::string_view input_key) const {
  if (write_key.empty()) {
    return false;
  }
  auto it = landed_.find(write_key);
  if (it == landed_.end()) {
    return false;
  }
  return input_key.empty() || it->second.empty() || it->second == input_key;
}

const std::string* StateStore::landedInput(std::string_view write_key) const {
  if (write_key.empty()) {
    return nullptr;
  }
  auto it = landed_.find(write_key);
  return it == landed_.end() ? nullptr : &it->second;
}

void StateStore::forEachLanded(
    const std::function<void(std::string_view write_key, std::string_view input_key)>& visit)
    const {
  for (const auto& [key, input] : landed_) {
    visit(key, input);
  }
}

Result<std::vector<HistoryRow>> StateStore::queryHistory(std::string_view key, bool by_run) {
  if (backend_) {
    return backend_->history(key, by_run);
  }
  std::lock_guard lock(mutex_);
  if (auto r = foldLocked(); !r) {
    return makeError("cannot read the state history: " + r.error().message);
  }
  sqlite3_stmt* stmt = by_run ? sql_->by_run.get() : sql_->by_field.get();
  sqlite::StmtScope scope(stmt);
  sqlite::bindText(stmt, 1, key);
  std::vector<HistoryRow> rows;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    std::optional<std::string_view> old_text;
    if (sqlite3_column_type(stmt, 2) != SQLITE_NULL) {
      old_text = sqlite::columnView(stmt, 2);
    }
    rows.push_back(historyRowOf(sqlite3_column_int64(stmt, 0), sqlite::columnText(stmt, 1),
                                old_text, sqlite::columnView(stmt, 3), sqlite::columnText(stmt, 4),
                                sqlite::columnText(stmt, 5), sqlite::columnText(stmt, 6)));
  }
  if (rc != SQLITE_DONE) {
    return makeError("cannot read the state history in " + path_.string() + ": " +
                     sqlite::errorOf(sql_->db.get()));
  }
  return rows;
}

Result<std::vector<HistoryRow>> StateStore::history(std::string_view field) {
  return queryHistory(field, false);
}

Result<std::vector<HistoryRow>> StateStore::historyForRun(std::string_view run_id) {
  return queryHistory(run_id, true);
}

HistoryRow historyRowOf(int64_t id, std::string field,
                        const std::optional<std::string_view>& old_text, std::string_view new_text,
                        std::string node_id, std::string run_id, std::string ts) {
  HistoryRow row;
  row.id = id;
  row.field = std::move(field);
  if (old_text) {
    row.value_old = parseStored(*old_text);
    row.append_from = appendedOnto(*row.value_old);
  }
  row.value_new = parseStored(new_text);
  row.node_id = std::move(node_id);
  row.run_id = std::move(run_id);
  row.ts = std::move(ts);
  return row;
}

std::vector<HistoryRow> expandAppends(std::vector<HistoryRow> rows) {
  std::optional<Json> current;  // the field's whole value after the previous row
  for (HistoryRow& row : rows) {
    if (!row.append_from) {
      current = row.value_new;
      continue;
    }
    if (!current || !current->is_array() || current->size() != *row.append_from) {
      current.reset();  // nothing (or not the right list) to extend: left in the append form
      continue;
    }
    Json whole = *current;
    for (const Json& item : row.value_new) {
      whole.push_back(item);
    }
    row.value_old = std::move(*current);
    row.value_new = whole;
    row.append_from.reset();
    current = std::move(whole);
  }
  return rows;
}

Result<HistoryPruneStats> pruneHistory(const std::filesystem::path& db_path,
                                       const std::unordered_set<std::string>& keep_runs,
                                       bool dry_run,
                                       const std::unordered_set<std::string>& keep_chains) {
  HistoryPruneStats stats;
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) {
    return stats;
  }
  const std::string where = "cannot prune the state history in " + db_path.string() + ": ";
  auto db = sqlite::open(db_path);
  if (!db) {
    return makeError(where + db.error().message);
  }
  sqlite3* h = db->get();
  auto fail = [&](const std::string& message) -> Result<HistoryPruneStats> {
    (void)sqlite::exec(h, "ROLLBACK");  // fails harmlessly when no transaction is open
    return makeError(where + message);
  };
  if (auto r = sqlite::useWal(h); !r) {
    return fail(r.error().message);
  }
  if (auto r = sqlite::createSchema(h, kSchemaSql); !r) {
    return fail(r.error().message);
  }
  // The kept runs go into a temp table; the count and the delete share one transaction so the
  // report matches what was deleted even if a run writes meanwhile.
  if (auto r = sqlite::beginWithKeptRuns(h, keep_runs); !r) {
    return fail(r.error().message);
  }
  // Per field, its newest row with a full value (not an append, D17): that row and every row
  // after it explain the current value and are kept.
  if (auto r = sqlite::exec(
          h,
          "CREATE TEMP TABLE IF NOT EXISTS gc_base (field TEXT PRIMARY KEY, base_id INTEGER);"
          "DELETE FROM temp.gc_base;"
          "INSERT INTO temp.gc_base SELECT field, MAX(id) FROM state_history WHERE "
          "value_old IS NULL OR substr(value_old, 1, 14) != '{\"$oe_append\":' GROUP BY field;");
      !r) {
    return fail(r.error().message);
  }
  constexpr std::string_view kPrunable =
      " FROM state_history WHERE run_id NOT IN (SELECT run_id FROM temp.gc_keep) AND "
      "id < (SELECT base_id FROM temp.gc_base b WHERE b.field = state_history.field)";
  {
    auto count = sqlite::prepare(
        h, std::string("SELECT COUNT(*), COALESCE(SUM(COALESCE(length(CAST(value_old AS BLOB)), "
                       "0) + length(CAST(value_new AS BLOB))), 0)") +
               std::string(kPrunable));
    if (!count) {
      return fail(count.error().message);
    }
    if (sqlite3_step(count->get()) != SQLITE_ROW) {
      return fail(sqlite::errorOf(h));
    }
    stats.rows = static_cast<size_t>(sqlite3_column_int64(count->get(), 0));
    stats.value_bytes = static_cast<uint64_t>(sqlite3_column_int64(count->get(), 1));
  }
  if (!dry_run && stats.rows > 0) {
    if (auto r = sqlite::exec(h, ("DELETE" + std::string(kPrunable)).c_str()); !r) {
      return fail(r.error().message);
    }
  }
  // Landed-write marks of chains that no kept run belongs to.
  if (auto r = sqlite::exec(h, "CREATE TEMP TABLE IF NOT EXISTS gc_keep_chains (chain_id TEXT "
                               "PRIMARY KEY); DELETE FROM temp.gc_keep_chains;");
      !r) {
    return fail(r.error().message);
  }
  {
    auto insert = sqlite::prepare(h, "INSERT OR IGNORE INTO temp.gc_keep_chains VALUES (?1)");
    if (!insert) {
      return fail(insert.error().message);
    }
    for (const std::string& id : keep_chains) {
      sqlite::StmtScope scope(insert->get());
      sqlite::bindText(insert->get(), 1, id);
      if (sqlite3_step(insert->get()) != SQLITE_DONE) {
        return fail(sqlite::errorOf(h));
      }
    }
  }
  if (auto r = sqlite::exec(
          h,
          "CREATE TEMP TABLE IF NOT EXISTS gc_doomed_chains (id INTEGER PRIMARY KEY);"
          "DELETE FROM temp.gc_doomed_chains;"
          "INSERT INTO temp.gc_doomed_chains SELECT id FROM oe_chains WHERE "
          "chain_id NOT IN (SELECT run_id FROM temp.gc_keep) AND "
          "chain_id NOT IN (SELECT chain_id FROM temp.gc_keep_chains) AND "
          "id NOT IN (SELECT chain FROM oe_chain_runs WHERE run_id IN "
          "(SELECT run_id FROM temp.gc_keep));");
      !r) {
    return fail(r.error().message);
  }
  {
    auto count = sqlite::prepare(
        h,
        "SELECT (SELECT COUNT(*) FROM oe_landed_writes WHERE chain IN "
        "(SELECT id FROM temp.gc_doomed_chains)) + (SELECT COALESCE(SUM(json_array_length("
        "CASE WHEN json_valid(marks) THEN marks ELSE '[]' END)), 0) FROM oe_landed_batches "
        "WHERE chain IN (SELECT id FROM temp.gc_doomed_chains))");
    if (!count) {
      return fail(count.error().message);
    }
    if (sqlite3_step(count->get()) != SQLITE_ROW) {
      return fail(sqlite::errorOf(h));
    }
    stats.marks = static_cast<size_t>(sqlite3_column_int64(count->get(), 0));
  }
  if (!dry_run) {
    if (auto r = sqlite::exec(
            h,
            "DELETE FROM oe_landed_writes WHERE chain IN (SELECT id FROM temp.gc_doomed_chains);"
            "DELETE FROM oe_landed_batches WHERE chain IN (SELECT id FROM temp.gc_doomed_chains);"
            "DELETE FROM oe_chain_runs WHERE chain IN (SELECT id FROM temp.gc_doomed_chains);"
            "DELETE FROM oe_chains WHERE id IN (SELECT id FROM temp.gc_doomed_chains);");
        !r) {
      return fail(r.error().message);
    }
  }
  if (auto r = sqlite::exec(h, "COMMIT"); !r) {
    return fail(r.error().message);
  }
  if (dry_run) {
    return stats;
  }
  int64_t free_pages = 0;
  if (auto pragma = sqlite::prepare(h, "PRAGMA freelist_count");
      pragma && sqlite3_step(pragma->get()) == SQLITE_ROW) {
    free_pages = sqlite3_column_int64(pragma->get(), 0);
  }
  // VACUUM rewrites the whole file: only worth it when pages were freed. It goes through the
  // WAL; the TRUNCATE checkpoint copies it back and empties the WAL (also the one a killed run
  // left behind).
  if (free_pages > 0) {
    if (auto r = sqlite::exec(h, "VACUUM"); !r) {
      return makeError(where + "VACUUM failed: " + r.error().message);
    }
  }
  if (auto r = sqlite::exec(h, "PRAGMA wal_checkpoint(TRUNCATE)"); !r) {
    return makeError(where + "checkpoint failed: " + r.error().message);
  }
  return stats;
}

Result<void> removeStateFiles(const std::filesystem::path& db_path) {
  std::vector<std::filesystem::path> files = Journal::list(dirOf(db_path), journalPrefix(db_path));
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::filesystem::path p = db_path;
    p += suffix;
    files.push_back(std::move(p));
  }
  for (const std::filesystem::path& p : files) {
    std::error_code ec;
    std::filesystem::remove(p, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return makeError("cannot remove " + p.string() + ": " + ec.message());
    }
  }
  return {};
}

}  // namespace oe::state
