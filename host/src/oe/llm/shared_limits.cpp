// Limits and budget in PostgreSQL; see shared_limits.hpp.
#include "oe/llm/shared_limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <random>

#include "oe/cache/cache_store.hpp"
#include "oe/pg/schema.hpp"

namespace oe::llm {
namespace {

// The channel a scope's releases wake its waiters on: one per scope, so that a run's releases
// do not wake another run's waiters; a hash, since a channel name is at most 63 bytes and the
// scope (a chain id) is the user's to choose. A wake-up only makes waiters ask again.
std::string roomChannel(std::string_view scope) {
  return "oe_limits_" + cache::sha256Hex(scope).substr(0, 32);
}
// The longest the renewal thread waits for a notification, so that it sees a stop request even
// when the NOTIFY the destructor sends cannot reach the server.
constexpr auto kMaxListen = std::chrono::milliseconds(500);

std::string defaultHolder() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) {
    host[0] = '\0';
  }
  std::random_device random;
  char tag[17];
  std::snprintf(tag, sizeof tag, "%08x%08x", random(), random());
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + tag;
}

// A bigint[] literal for `= ANY($n::bigint[])`.
std::string idArray(const std::vector<int64_t>& ids) {
  std::string text = "{";
  for (size_t i = 0; i < ids.size(); ++i) {
    text += (i == 0 ? "" : ",") + std::to_string(ids[i]);
  }
  return text + "}";
}

// The totals of a budget query: spent (4 columns) then held (2), from column `first`.
SharedBudget::Totals totalsAt(const pg::Rows& rows, int first) {
  SharedBudget::Totals totals;
  totals.spent.input_tokens = rows.int64(0, first);
  totals.spent.output_tokens = rows.int64(0, first + 1);
  totals.spent.cost_usd = rows.real(0, first + 2);
  totals.spent.calls = rows.int64(0, first + 3);
  totals.held_tokens = rows.int64(0, first + 4);
  totals.held_cost_usd = rows.real(0, first + 5);
  return totals;
}

std::string ttlSql(int param) { return "now() + $" + std::to_string(param) + " * interval '1 ms'"; }

}  // namespace

SharedLimits::SharedLimits(std::string url, std::string scope, Options options)
    : url_(std::move(url)),
      scope_(std::move(scope)),
      channel_(roomChannel(scope_)),
      options_(std::move(options)) {
  if (options_.holder.empty()) {
    options_.holder = defaultHolder();
  }
}

Result<std::unique_ptr<SharedLimits>> SharedLimits::open(const std::string& url, std::string scope,
                                                         const Usage& prior, Options options) {
  const std::string where = "shared runtime.limits/runtime.budget store " + pg::redact(url);
  if (scope.empty()) {
    return makeError(where + ": no scope (the run's chain id) to count them in");
  }
  std::unique_ptr<SharedLimits> shared(new SharedLimits(url, std::move(scope), std::move(options)));
  auto conn = shared->borrow();
  if (!conn) {
    return makeError(where + ": " + conn.error().message);
  }
  if (auto migrated = pg::migrate(**conn); !migrated) {
    return makeError(where + ": " + migrated.error().message);
  }
  // The first process of the chain records what it spent before; later ones keep the row.
  auto row = (*conn)->exec(
      "INSERT INTO oe_budget (chain_id, input_tokens, output_tokens, cost_usd, calls) "
      "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (chain_id) DO NOTHING",
      {shared->scope_, prior.input_tokens, prior.output_tokens, prior.cost_usd, prior.calls});
  if (!row) {
    return makeError(where + ": " + row.error().message);
  }
  shared->giveBack(std::move(*conn));
  auto listener = pg::Connection::open(
      url, pg::retrying(shared->options_.retry_for, "oe-limits-renew"));
  if (!listener) {
    return makeError(where + ": " + listener.error().message);
  }
  if (auto listening = (*listener)->listen(shared->channel_); !listening) {
    return makeError(where + ": " + listening.error().message);
  }
  shared->renewer_ = std::thread(
      [raw = shared.get(), c = std::move(*listener)]() mutable { raw->renewLoop(std::move(c)); });
  return shared;
}

SharedLimits::~SharedLimits() {
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = true;
  }
  if (renewer_.joinable()) {
    // Wakes the renewal thread out of its LISTEN wait through an idle connection, if there is
    // one: opening a new one could wait out retry_for on a database that is away, and the
    // thread looks at stop_ every kMaxListen anyway.
    std::unique_ptr<pg::Connection> conn;
    {
      std::lock_guard lock(pool_mutex_);
      if (!idle_.empty()) {
        conn = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (conn) {
      (void)conn->exec("SELECT pg_notify($1, '')", {channel_});
    }
    renewer_.join();
  }
}

Result<std::unique_ptr<pg::Connection>> SharedLimits::borrow() {
  {
    std::lock_guard lock(pool_mutex_);
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
  }
  return pg::Connection::open(url_, pg::retrying(options_.retry_for, "oe-limits"));
}

void SharedLimits::giveBack(std::unique_ptr<pg::Connection> conn) {
  if (!conn->healthy()) {
    return;  // the next borrow opens a fresh one
  }
  std::lock_guard lock(pool_mutex_);
  idle_.push_back(std::move(conn));
}

template <class T>
Result<T> SharedLimits::withConnection(const std::function<Result<T>(pg::Connection&)>& work) {
  auto conn = borrow();
  if (!conn) {
    return conn.error();
  }
  Result<T> outcome = work(**conn);
  giveBack(std::move(*conn));
  return outcome;
}

Error SharedLimits::failure(std::string_view what, const Error& error) const {
  return makeError(std::string(what) + " shared in " + pg::redact(url_) + ": " + error.message);
}

Result<void> SharedLimits::inTransaction(const std::function<Result<void>(pg::Connection&)>& work) {
  auto conn = borrow();
  if (!conn) {
    return conn.error();
  }
  Result<void> outcome = (*conn)->transaction(work);
  giveBack(std::move(*conn));
  return outcome;
}

void SharedLimits::onRoom(std::function<void()> wake) {
  std::lock_guard lock(wake_mutex_);
  wake_ = std::move(wake);
}

void SharedLimits::renewLoop(std::unique_ptr<pg::Connection> conn) {
  const auto every = std::max(options_.ttl / 3, std::chrono::milliseconds(1));
  auto next = std::chrono::steady_clock::now() + every;
  for (;;) {
    {
      std::lock_guard lock(stop_mutex_);
      if (stop_) {
        return;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next) {
      std::vector<int64_t> slots;
      std::vector<int64_t> holds;
      {
        std::lock_guard lock(live_mutex_);
        slots.assign(live_slots_.begin(), live_slots_.end());
        holds.assign(live_holds_.begin(), live_holds_.end());
      }
      if (!slots.empty() || !holds.empty()) {
        // A failure is retried at the next turn; rows lapse only after a whole ttl of them.
        (void)conn->exec(
            "WITH s AS (UPDATE oe_limit_slots SET expires_at = " + ttlSql(3) +
                " WHERE id = ANY($1::bigint[])) "
                "UPDATE oe_budget_holds SET expires_at = " +
                ttlSql(3) + " WHERE id = ANY($2::bigint[])",
            {idArray(slots), idArray(holds), static_cast<int64_t>(options_.ttl.count())});
      }
      next = now + every;
    }
    const auto wait =
        std::min(std::chrono::duration_cast<std::chrono::milliseconds>(next - now), kMaxListen);
    if (conn->waitForNotify(std::max(wait, std::chrono::milliseconds(1)))) {
      std::lock_guard lock(wake_mutex_);
      if (wake_) {
        wake_();
      }
    } else if (!conn->healthy()) {
      (void)conn->reconnect();  // LISTENs again; bounded by retry_for
    }
  }
}

Result<SharedCounters::Taken> SharedLimits::take(const std::vector<Bucket>& buckets,
                                                 int64_t tokens) {
  std::vector<Bucket> sorted = buckets;
  // One lock order for every process: two calls that share two buckets cannot deadlock.
  std::sort(sorted.begin(), sorted.end(),
            [](const Bucket& a, const Bucket& b) { return a.name < b.name; });
  const std::string window = std::to_string(RateLimiter::kWindow.count()) + " seconds";
  std::string locks = "SELECT ";
  std::string names;
  std::vector<pg::Param> params = {scope_};
  for (size_t i = 0; i < sorted.size(); ++i) {
    const std::string n = "$" + std::to_string(i + 2);
    locks += (i == 0 ? "" : ", ") + ("pg_advisory_xact_lock(hashtext($1), hashtext(" + n + "))");
    names += (i == 0 ? "" : ", ") + n;
    params.emplace_back(sorted[i].name);
  }
  const std::string count =
      "WITH gone AS (DELETE FROM oe_limit_slots WHERE scope = $1 AND name IN (" + names +
      ") AND started_at <= now() - interval '" + window +
      "' AND (NOT in_flight OR expires_at <= now())) "
      "SELECT name, count(*) FILTER (WHERE in_flight AND expires_at > now()), "
      "count(*) FILTER (WHERE started_at > now() - interval '" +
      window +
      "'), "
      "coalesce(sum(tokens) FILTER (WHERE started_at > now() - interval '" +
      window +
      "'), 0), "
      "coalesce(ceil(extract(epoch FROM min(started_at) FILTER (WHERE started_at > now() - "
      "interval '" +
      window + "') + interval '" + window +
      "' - now()) * 1000), 0)::bigint "
      "FROM oe_limit_slots WHERE scope = $1 AND name IN (" +
      names + ") GROUP BY name";
  std::string insert =
      "INSERT INTO oe_limit_slots (scope, name, holder, tokens, expires_at) VALUES ";
  const std::string holder_param = "$" + std::to_string(sorted.size() + 2);
  const std::string tokens_param = "$" + std::to_string(sorted.size() + 3);
  for (size_t i = 0; i < sorted.size(); ++i) {
    insert += (i == 0 ? "(" : ", (") + std::string("$1, $") + std::to_string(i + 2) + ", " +
              holder_param + ", " + tokens_param + ", " +
              ttlSql(static_cast<int>(sorted.size()) + 4) + ")";
  }
  insert += " RETURNING id";
  std::vector<pg::Param> insert_params = params;
  insert_params.emplace_back(options_.holder);
  insert_params.emplace_back(tokens);
  insert_params.emplace_back(static_cast<int64_t>(options_.ttl.count()));

  Taken taken;
  auto done = inTransaction([&](pg::Connection& tx) -> Result<void> {
    taken = Taken{};
    if (auto locked = tx.exec(locks, params); !locked) {
      return locked.error();
    }
    auto rows = tx.exec(count, params);
    if (!rows) {
      return rows.error();
    }
    for (int r = 0; r < rows->size(); ++r) {
      const auto it = std::find_if(sorted.begin(), sorted.end(),
                                   [&](const Bucket& b) { return b.name == rows->text(r, 0); });
      if (it == sorted.end()) {
        continue;
      }
      const Limit& l = *it->limit;
      const int64_t in_flight = rows->int64(r, 1);
      const int64_t starts = rows->int64(r, 2);
      const int64_t window_tokens = rows->int64(r, 3);
      const auto until_oldest_leaves = std::chrono::milliseconds(rows->int64(r, 4));
      const auto later = [&taken](std::chrono::milliseconds in) {
        taken.retry_in = taken.retry_in ? std::min(*taken.retry_in, in) : in;
      };
      // The same rules as RateLimiter::tryAcquire, on every process's calls.
      if (l.max_in_flight && in_flight >= *l.max_in_flight) {
        return {};  // frees on a release
      }
      if (l.requests_per_minute && starts >= *l.requests_per_minute) {
        later(until_oldest_leaves);
        return {};
      }
      if (l.tokens_per_minute && window_tokens > 0 &&
          window_tokens + tokens > *l.tokens_per_minute) {
        later(until_oldest_leaves);
        return {};
      }
    }
    auto ids = tx.exec(insert, insert_params);
    if (!ids) {
      return ids.error();
    }
    taken.granted = true;
    for (int r = 0; r < ids->size(); ++r) {
      taken.slots.push_back(ids->int64(r, 0));
    }
    return {};
  });
  if (!done) {
    return failure("runtime.limits", done.error());
  }
  if (taken.granted) {
    std::lock_guard lock(live_mutex_);
    live_slots_.insert(taken.slots.begin(), taken.slots.end());
  }
  return taken;
}

void SharedLimits::release(const std::vector<int64_t>& slots, int64_t actual_tokens) {
  if (slots.empty()) {
    return;
  }
  {
    std::lock_guard lock(live_mutex_);
    for (int64_t id : slots) {
      live_slots_.erase(id);
    }
  }
  // On failure the rows lapse after the ttl (nothing renews them any more): the limit is
  // tighter for a while, never looser.
  (void)withConnection<pg::Rows>([&](pg::Connection& conn) {
    return conn.exec(
        "WITH done AS (UPDATE oe_limit_slots SET in_flight = false, tokens = $2 "
        "WHERE id = ANY($1::bigint[])) SELECT pg_notify($3, $4)",
        {idArray(slots), actual_tokens, channel_, scope_});
  });
}

Result<SharedBudget::Hold> SharedLimits::reserve(const Budget& budget, int64_t tokens,
                                                 double cost_usd) {
  Hold hold;
  auto done = inTransaction([&](pg::Connection& tx) -> Result<void> {
    // The chain's row is the lock: reservations of one chain are decided one at a time, and
    // each sees every hold committed before it.
    auto locked = tx.exec("SELECT 1 FROM oe_budget WHERE chain_id = $1 FOR UPDATE", {scope_});
    if (!locked) {
      return locked.error();
    }
    if (locked->empty()) {
      return makeError("the budget row of chain " + scope_ + " is missing from oe_budget");
    }
    auto rows = tx.exec(
        "WITH spent AS (SELECT input_tokens, output_tokens, cost_usd, calls FROM oe_budget "
        "WHERE chain_id = $1), "
        "held AS (SELECT coalesce(sum(tokens), 0)::bigint AS tokens, "
        "coalesce(sum(cost_usd), 0)::float8 AS cost FROM oe_budget_holds "
        "WHERE chain_id = $1 AND expires_at > now()), "
        "ins AS (INSERT INTO oe_budget_holds (chain_id, holder, tokens, cost_usd, expires_at) "
        "SELECT $1, $2, $3, $4, " +
            ttlSql(7) +
            " FROM spent, held "
            "WHERE ($5::bigint IS NULL OR spent.input_tokens + spent.output_tokens + held.tokens "
            "+ $3 <= $5) AND ($6::float8 IS NULL OR spent.cost_usd + held.cost + $4 <= $6) "
            "RETURNING id) "
            "SELECT spent.input_tokens, spent.output_tokens, spent.cost_usd, spent.calls, "
            "held.tokens, held.cost, coalesce((SELECT id FROM ins), 0) FROM spent, held",
        {scope_, options_.holder, tokens, cost_usd,
         budget.max_tokens ? pg::Param(*budget.max_tokens) : pg::Param(nullptr),
         budget.max_cost_usd ? pg::Param(*budget.max_cost_usd) : pg::Param(nullptr),
         static_cast<int64_t>(options_.ttl.count())});
    if (!rows) {
      return rows.error();
    }
    hold.totals = totalsAt(*rows, 0);
    hold.id = rows->int64(0, 6);
    return {};
  });
  if (!done) {
    return failure("runtime.budget", done.error());
  }
  if (hold.id != 0) {
    std::lock_guard lock(live_mutex_);
    live_holds_.insert(hold.id);
  }
  return hold;
}

Result<void> SharedLimits::settle(int64_t id, const Usage& used) {
  {
    std::lock_guard lock(live_mutex_);
    live_holds_.erase(id);
  }
  auto done = withConnection<pg::Rows>([&](pg::Connection& conn) {
    return conn.exec(
        "WITH gone AS (DELETE FROM oe_budget_holds WHERE id = $1) "
        "UPDATE oe_budget SET input_tokens = input_tokens + $2, output_tokens = output_tokens + "
        "$3, cost_usd = cost_usd + $4, calls = calls + $5 WHERE chain_id = $6",
        {id, used.input_tokens, used.output_tokens, used.cost_usd, used.calls, scope_});
  });
  if (!done) {
    return failure("runtime.budget", done.error());
  }
  return {};
}

Result<void> SharedLimits::cancel(int64_t id) {
  {
    std::lock_guard lock(live_mutex_);
    live_holds_.erase(id);
  }
  auto done = withConnection<pg::Rows>([&](pg::Connection& conn) {
    return conn.exec("DELETE FROM oe_budget_holds WHERE id = $1", {id});
  });
  if (!done) {
    return failure("runtime.budget", done.error());
  }
  return {};
}

Result<SharedBudget::Totals> SharedLimits::totals() {
  auto rows = withConnection<pg::Rows>([&](pg::Connection& conn) {
    return conn.exec(
        "SELECT input_tokens, output_tokens, cost_usd, calls, "
        "(SELECT coalesce(sum(tokens), 0)::bigint FROM oe_budget_holds h "
        " WHERE h.chain_id = $1 AND h.expires_at > now()), "
        "(SELECT coalesce(sum(cost_usd), 0)::float8 FROM oe_budget_holds h "
        " WHERE h.chain_id = $1 AND h.expires_at > now()) "
        "FROM oe_budget WHERE chain_id = $1",
        {scope_});
  });
  if (!rows) {
    return failure("runtime.budget", rows.error());
  }
  return rows->empty() ? Totals{} : totalsAt(*rows, 0);
}

}  // namespace oe::llm
