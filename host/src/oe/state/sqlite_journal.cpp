// StateStore's durability on SQLite: a write is a journal line, committed in batches (group
// commit) and folded into the database; a crashed writer's journal is folded by the next opener;
// a chain of runs records landed-write marks so that a resumed chain applies no write twice.
#include "oe/state/state_store.hpp"

#include <system_error>

#include "oe/common/sqlite.hpp"
#include "oe/state/store_sql.hpp"
#include "oe/state/value_codec.hpp"

namespace oe::state {

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

}  // namespace oe::state
