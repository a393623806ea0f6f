// The approvals file: one row per question of a chain of runs, decided by one conditional
// UPDATE (docs/policy.md, "Approvals").
#include "oe/approvals/approval_store.hpp"

#include <cstdlib>
#include <ctime>

#include "oe/common/clock.hpp"
#include "oe/common/sqlite.hpp"
#include "oe/pg/connection.hpp"

namespace oe::approvals {

namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS approvals ("
    " chain_id TEXT NOT NULL, node_id TEXT NOT NULL, run_id TEXT NOT NULL,"
    " prompt TEXT NOT NULL, shown TEXT NOT NULL, requested_at TEXT NOT NULL,"
    " deadline_ms INTEGER NOT NULL, on_timeout TEXT NOT NULL,"
    " decision TEXT, decided_by TEXT, decided_at TEXT, comment TEXT, timed_out INTEGER,"
    " PRIMARY KEY (chain_id, node_id));";

constexpr const char* kColumns =
    "chain_id, node_id, run_id, prompt, shown, requested_at, deadline_ms, on_timeout, decision, "
    "decided_by, decided_at, comment, timed_out";

Request rowOf(sqlite3_stmt* stmt) {
  Request r;
  r.chain_id = sqlite::columnText(stmt, 0);
  r.node_id = sqlite::columnText(stmt, 1);
  r.run_id = sqlite::columnText(stmt, 2);
  r.prompt = sqlite::columnText(stmt, 3);
  r.shown = Json::parse(sqlite::columnText(stmt, 4), nullptr, false);
  if (r.shown.is_discarded()) {
    r.shown = Json::object();
  }
  r.requested_at = sqlite::columnText(stmt, 5);
  r.deadline_ms = sqlite3_column_int64(stmt, 6);
  r.on_timeout = sqlite::columnText(stmt, 7);
  if (sqlite3_column_type(stmt, 8) != SQLITE_NULL) {
    Decision d;
    d.decision = sqlite::columnText(stmt, 8);
    d.by = sqlite::columnText(stmt, 9);
    d.at = sqlite::columnText(stmt, 10);
    d.comment = sqlite::columnText(stmt, 11);
    d.timed_out = sqlite3_column_int(stmt, 12) != 0;
    r.decision = std::move(d);
  }
  return r;
}

}  // namespace

class SqliteStore final : public Store {
 public:
  SqliteStore(sqlite::Db db, std::filesystem::path path)
      : db_(std::move(db)), path_(std::move(path)) {}
  Result<Request> ask(const Request& request) override;
  Result<std::optional<Request>> find(std::string_view chain_id, std::string_view node_id) override;
  Result<std::vector<Request>> list(std::string_view chain_id) override;
  Result<DecideResult> decide(std::string_view chain_id, std::string_view node_id,
                              const Decision& decision) override;

 private:
  sqlite::Db db_;
  std::filesystem::path path_;
};

std::filesystem::path storePath(const std::filesystem::path& workspace_dir) {
  return workspace_dir / "approvals.sqlite";
}

int64_t nowMs() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read only, nothing sets it while oe runs
  if (const char* fake = std::getenv("OE_APPROVALS_NOW"); fake != nullptr && *fake != '\0') {
    const std::string text(fake);
    if (text.find('T') != std::string::npos) {
      std::tm tm{};
      int millis = 0;
      if (sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &millis) >= 6) {
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        return static_cast<int64_t>(timegm(&tm)) * 1000 + millis;
      }
    } else {
      char* end = nullptr;
      const long long ms = std::strtoll(text.c_str(), &end, 10);
      if (end != nullptr && *end == '\0') {
        return ms;
      }
    }
  }
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

std::string isoOfMs(int64_t ms) { return isoTime(ms / 1000, static_cast<int>(ms % 1000)); }

Json Decision::toJson() const {
  return Json{{"decision", decision}, {"approved", approved()}, {"by", by}, {"at", at},
              {"comment", comment},   {"timed_out", timed_out}};
}

Json Request::toJson() const {
  Json out = {{"chain_id", chain_id},    {"node_id", node_id}, {"run_id", run_id},
              {"prompt", prompt},        {"show", shown},      {"requested_at", requested_at},
              {"on_timeout", on_timeout}};
  out["deadline"] = deadline_ms >= 0 ? Json(isoOfMs(deadline_ms)) : Json();
  out["decision"] = decision ? decision->toJson() : Json();
  return out;
}

Result<std::unique_ptr<Store>> Store::open(const std::string& where) {
  if (pg::isUrl(where)) {
    return openPgStore(where);
  }
  return openSqliteStore(where);
}

Result<std::unique_ptr<Store>> openSqliteStore(const std::filesystem::path& path) {
  auto db = sqlite::openStoreFile(path, kSchema, "approvals");
  if (!db) {
    return db.error();
  }
  return std::unique_ptr<Store>(std::make_unique<SqliteStore>(std::move(db).value(), path));
}

Result<Request> SqliteStore::ask(const Request& request) {
  sqlite3* h = db_.get();
  auto insert = sqlite::prepare(
      h,
      "INSERT OR IGNORE INTO approvals (chain_id, node_id, run_id, prompt, shown, requested_at, "
      "deadline_ms, on_timeout) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  if (!insert) {
    return insert.error();
  }
  const std::string shown = request.shown.dump();
  sqlite::bindText(insert->get(), 1, request.chain_id);
  sqlite::bindText(insert->get(), 2, request.node_id);
  sqlite::bindText(insert->get(), 3, request.run_id);
  sqlite::bindText(insert->get(), 4, request.prompt);
  sqlite::bindText(insert->get(), 5, shown);
  sqlite::bindText(insert->get(), 6, request.requested_at);
  sqlite3_bind_int64(insert->get(), 7, request.deadline_ms);
  sqlite::bindText(insert->get(), 8, request.on_timeout);
  if (sqlite3_step(insert->get()) != SQLITE_DONE) {
    return makeError("cannot record the approval of node \"" + request.node_id + "\" in " +
                     path_.string() + ": " + sqlite::errorOf(h));
  }
  auto stored = find(request.chain_id, request.node_id);
  if (!stored) {
    return stored.error();
  }
  if (!*stored) {
    return makeError("the approval of node \"" + request.node_id + "\" vanished from " +
                     path_.string());
  }
  return std::move(**stored);
}

Result<std::optional<Request>> SqliteStore::find(std::string_view chain_id,
                                                 std::string_view node_id) {
  sqlite3* h = db_.get();
  auto select = sqlite::prepare(h, std::string("SELECT ") + kColumns +
                                       " FROM approvals WHERE chain_id = ?1 AND node_id = ?2");
  if (!select) {
    return select.error();
  }
  sqlite::bindText(select->get(), 1, chain_id);
  sqlite::bindText(select->get(), 2, node_id);
  const int rc = sqlite3_step(select->get());
  if (rc == SQLITE_ROW) {
    return std::optional<Request>(rowOf(select->get()));
  }
  if (rc != SQLITE_DONE) {
    return makeError("cannot read " + path_.string() + ": " + sqlite::errorOf(h));
  }
  return std::optional<Request>();
}

Result<std::vector<Request>> SqliteStore::list(std::string_view chain_id) {
  sqlite3* h = db_.get();
  auto select = sqlite::prepare(
      h, std::string("SELECT ") + kColumns +
             " FROM approvals WHERE ?1 = '' OR chain_id = ?1 ORDER BY requested_at, node_id");
  if (!select) {
    return select.error();
  }
  // Never a null pointer: SQLite binds that as NULL, which `?1 = ''` does not match.
  sqlite::bindText(select->get(), 1, chain_id.empty() ? std::string_view("") : chain_id);
  std::vector<Request> out;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(select->get())) == SQLITE_ROW) {
    out.push_back(rowOf(select->get()));
  }
  if (rc != SQLITE_DONE) {
    return makeError("cannot read " + path_.string() + ": " + sqlite::errorOf(h));
  }
  return out;
}

Result<DecideResult> SqliteStore::decide(std::string_view chain_id, std::string_view node_id,
                                         const Decision& decision) {
  sqlite3* h = db_.get();
  // The one statement that decides: whoever's UPDATE finds the row undecided wins; SQLite runs
  // writers one at a time (the busy timeout makes the other wait, not fail).
  auto update = sqlite::prepare(
      h,
      "UPDATE approvals SET decision = ?3, decided_by = ?4, decided_at = ?5, comment = ?6, "
      "timed_out = ?7 WHERE chain_id = ?1 AND node_id = ?2 AND decision IS NULL");
  if (!update) {
    return update.error();
  }
  sqlite::bindText(update->get(), 1, chain_id);
  sqlite::bindText(update->get(), 2, node_id);
  sqlite::bindText(update->get(), 3, decision.decision);
  sqlite::bindText(update->get(), 4, decision.by);
  sqlite::bindText(update->get(), 5, decision.at);
  sqlite::bindText(update->get(), 6, decision.comment);
  sqlite3_bind_int(update->get(), 7, decision.timed_out ? 1 : 0);
  if (sqlite3_step(update->get()) != SQLITE_DONE) {
    return makeError("cannot record the decision on node \"" + std::string(node_id) + "\" in " +
                     path_.string() + ": " + sqlite::errorOf(h));
  }
  const bool won = sqlite3_changes(h) == 1;
  auto stored = find(chain_id, node_id);
  if (!stored) {
    return stored.error();
  }
  if (!*stored) {
    return makeError("no approval of node \"" + std::string(node_id) +
                     "\" was asked in this chain of runs; `oe runs --waiting` lists what waits");
  }
  return DecideResult{won, std::move(**stored)};
}

Result<Request> Store::settleTimeout(const Request& request, int64_t now_ms) {
  if (request.decision || request.deadline_ms < 0 || now_ms < request.deadline_ms) {
    return request;
  }
  Decision d;
  d.decision = request.on_timeout == "approve"  ? "approved"
               : request.on_timeout == "reject" ? "rejected"
                                                : "expired";
  d.by = "timeout";
  d.at = isoOfMs(request.deadline_ms);  // when it timed out, not when someone looked
  d.comment = "no decision by the deadline; on_timeout: " + request.on_timeout;
  d.timed_out = true;
  auto decided = decide(request.chain_id, request.node_id, d);
  if (!decided) {
    return decided.error();
  }
  return std::move(decided->request);
}

}  // namespace oe::approvals
