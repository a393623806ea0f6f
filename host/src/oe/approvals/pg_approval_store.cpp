// The approvals of a PostgreSQL store (oe_approvals, schema version 4): the same questions and
// decisions as approvals.sqlite, reachable from every machine that serves the store, so a person
// can decide on one machine what a run parked on another. Two deciders at once: the second's
// UPDATE waits for the first's row lock, then finds the row decided and changes nothing.
#include "oe/approvals/approval_store.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pg/schema.hpp"

namespace oe::approvals {

namespace {

constexpr const char* kPgColumns =
    "chain_id, node_id, run_id, prompt, shown, requested_at, deadline_ms, on_timeout, decision, "
    "decided_by, decided_at, comment, timed_out";

Request pgRowOf(const pg::Rows& rows, int i) {
  Request r;
  r.chain_id = std::string(rows.text(i, 0));
  r.node_id = std::string(rows.text(i, 1));
  r.run_id = std::string(rows.text(i, 2));
  r.prompt = std::string(rows.text(i, 3));
  r.shown = Json::parse(rows.text(i, 4), nullptr, false);
  if (r.shown.is_discarded()) {
    r.shown = Json::object();
  }
  r.requested_at = std::string(rows.text(i, 5));
  r.deadline_ms = rows.int64(i, 6);
  r.on_timeout = std::string(rows.text(i, 7));
  if (!rows.isNull(i, 8)) {
    Decision d;
    d.decision = std::string(rows.text(i, 8));
    d.by = std::string(rows.text(i, 9));
    d.at = std::string(rows.text(i, 10));
    d.comment = std::string(rows.text(i, 11));
    d.timed_out = rows.boolean(i, 12);
    r.decision = std::move(d);
  }
  return r;
}

class PgStore final : public Store {
 public:
  explicit PgStore(std::unique_ptr<pg::Connection> conn) : conn_(std::move(conn)) {}

  Result<Request> ask(const Request& request) override {
    auto inserted = conn_->exec(
        "INSERT INTO oe_approvals (chain_id, node_id, run_id, prompt, shown, requested_at, "
        "deadline_ms, on_timeout) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
        "ON CONFLICT (chain_id, node_id) DO NOTHING",
        {request.chain_id, request.node_id, request.run_id, request.prompt, request.shown.dump(),
         request.requested_at, request.deadline_ms, request.on_timeout});
    if (!inserted) {
      return makeError("cannot record the approval of node \"" + request.node_id + "\" in " +
                       pg::redact(conn_->url()) + ": " + inserted.error().message);
    }
    auto stored = find(request.chain_id, request.node_id);
    if (!stored) {
      return stored.error();
    }
    if (!*stored) {
      return makeError("the approval of node \"" + request.node_id + "\" vanished from " +
                       pg::redact(conn_->url()));
    }
    return std::move(**stored);
  }

  Result<std::optional<Request>> find(std::string_view chain_id,
                                      std::string_view node_id) override {
    auto rows = conn_->exec(std::string("SELECT ") + kPgColumns +
                                " FROM oe_approvals WHERE chain_id = $1 AND node_id = $2",
                            {chain_id, node_id});
    if (!rows) {
      return rows.error();
    }
    if (rows->empty()) {
      return std::optional<Request>();
    }
    return std::optional<Request>(pgRowOf(*rows, 0));
  }

  Result<std::vector<Request>> list(std::string_view chain_id) override {
    auto rows = conn_->exec(std::string("SELECT ") + kPgColumns +
                                " FROM oe_approvals WHERE $1 = '' OR chain_id = $1 "
                                "ORDER BY requested_at, node_id",
                            {chain_id});
    if (!rows) {
      return rows.error();
    }
    std::vector<Request> out;
    for (int i = 0; i < rows->size(); ++i) {
      out.push_back(pgRowOf(*rows, i));
    }
    return out;
  }

  Result<DecideResult> decide(std::string_view chain_id, std::string_view node_id,
                              const Decision& decision) override {
    auto updated = conn_->exec(
        "UPDATE oe_approvals SET decision = $3, decided_by = $4, decided_at = $5, comment = $6, "
        "timed_out = $7 WHERE chain_id = $1 AND node_id = $2 AND decision IS NULL",
        {chain_id, node_id, decision.decision, decision.by, decision.at, decision.comment,
         decision.timed_out});
    if (!updated) {
      return makeError("cannot record the decision on node \"" + std::string(node_id) + "\" in " +
                       pg::redact(conn_->url()) + ": " + updated.error().message);
    }
    const bool won = updated->affected() == 1;
    auto stored = find(chain_id, node_id);
    if (!stored) {
      return stored.error();
    }
    if (!*stored) {
      return makeError("no approval of node \"" + std::string(node_id) +
                       "\" was asked in this chain of runs; `oe runs --waiting` lists what "
                       "waits");
    }
    return DecideResult{won, std::move(**stored)};
  }

 private:
  std::unique_ptr<pg::Connection> conn_;
};

}  // namespace

Result<std::unique_ptr<Store>> openPgStore(const std::string& url) {
  auto conn = pg::Connection::open(
      url, {.retry_for = std::chrono::seconds(10), .application_name = "oe approvals"});
  if (!conn) {
    return makeError("the approvals of " + pg::redact(url) +
                     " cannot be used: " + conn.error().message);
  }
  if (auto migrated = pg::migrate(**conn); !migrated) {
    return makeError("the approvals of " + pg::redact(url) +
                     " cannot be used: " + migrated.error().message);
  }
  return std::unique_ptr<Store>(std::make_unique<PgStore>(std::move(conn).value()));
}

}  // namespace oe::approvals
