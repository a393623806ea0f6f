// StateStore: type checks and merges, the in-memory mirror, the choice of backend (SQLite or a
// StateBackend); reads from the mirror. The SQLite journal and landed marks are in
// sqlite_journal.cpp, the history reads in history.cpp, pruning and removal in maintenance.cpp.
#include "oe/state/state_store.hpp"

#include <system_error>

#include "oe/common/sqlite.hpp"
#include "oe/state/store_sql.hpp"
#include "oe/state/value_codec.hpp"

namespace oe::state {

struct StateStore::Private {};

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
    noteLanded(meta);
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

Result<void> StateStore::recordDecision(const WriteMeta& meta) {
  if (meta.write_key.empty() || chain_id_.empty()) {
    return {};
  }
  const std::vector<Pending> no_rows;
  const std::string ts = sqlite::isoNow();
  if (backend_) {
    if (auto r = writeBackend(no_rows, meta, ts, /*mark=*/true); !r) {
      return r.error();
    }
  } else if (auto r = writeJournal(no_rows, meta, ts, /*mark=*/true); !r) {
    return r.error();
  }
  noteLanded(meta);
  return {};
}

void StateStore::noteLanded(const WriteMeta& meta) {
  if (auto it = landed_.find(meta.write_key); it != landed_.end()) {
    it->second.assign(meta.input_key);
  } else {
    landed_.emplace(std::string(meta.write_key), std::string(meta.input_key));
  }
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

}  // namespace oe::state
