// Token and cost accounting of a run, and its budget (`runtime.budget`): every call reserves
// an upper bound of what it can spend before it is sent, so the run's total never passes the
// budget, even with many calls in flight; the reservation is settled with the real usage. With
// SharedBudget, the budget is checked against what every process of the chain spent and holds.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "oe/common/json.hpp"
#include "oe/llm/settings.hpp"

namespace oe::llm {

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  int64_t calls = 0;

  Usage& operator+=(const Usage& other) {
    input_tokens += other.input_tokens;
    output_tokens += other.output_tokens;
    cost_usd += other.cost_usd;
    calls += other.calls;
    return *this;
  }
  [[nodiscard]] int64_t tokens() const { return input_tokens + output_tokens; }
  [[nodiscard]] Json toJson() const;
  static Usage fromJson(const Json& json);
};

// An upper bound of the input tokens of `request` (the oe.llm/1 request JSON): one token per
// byte of text (no tokenizer in use makes a token shorter than a byte) plus the per-message
// framing the chat formats add. Loose by ~4x on English, but it is a bound.
[[nodiscard]] int64_t maxInputTokens(const Json& request);

// runtime.budget's counters held outside the process, for a budget that several processes
// share (shared_limits.hpp). [thread-safe, blocking: each call is a few database round trips]
class SharedBudget {
 public:
  virtual ~SharedBudget() = default;
  struct Totals {
    Usage spent;  // by every call of the chain so far
    int64_t held_tokens = 0;
    double held_cost_usd = 0;
  };
  struct Hold {
    int64_t id = 0;  // 0: refused, nothing held; `totals` say why
    Totals totals;
  };
  // Holds `tokens` / `cost_usd` when the chain's spent + held + them stays within `budget`.
  virtual Result<Hold> reserve(const Budget& budget, int64_t tokens, double cost_usd) = 0;
  // Ends hold `id` (0: none) and adds `used` to what the chain spent.
  virtual Result<void> settle(int64_t id, const Usage& used) = 0;
  virtual Result<void> cancel(int64_t id) = 0;
  virtual Result<Totals> totals() = 0;
};

class Ledger {
 public:
  // `prior`: what the runs this one resumes already spent (the budget covers the whole chain).
  // `shared` (not owned, outlives this; may be null): where the budget is checked instead; the
  // ledger still counts this process's own spending (spent()).
  Ledger(Budget budget, Usage prior, SharedBudget* shared = nullptr)
      : budget_(budget), spent_(prior), shared_(shared) {}

  struct Reservation {
    int64_t tokens = 0;
    double cost_usd = 0;
    int64_t hold = 0;  // SharedBudget's hold, set by reserve()
  };

  // Reserves `tokens` / `cost_usd` against the budget. On refusal, the message says what the
  // call needed, what is left, and which limit; nothing is reserved.
  struct Refusal {
    std::string message;
  };
  std::optional<Refusal> reserve(Reservation& need);
  // A refusal when what is spent already reaches a limit: the check for work whose cost is
  // known only once it is done (a coding CLI run), which may start while anything is left.
  [[nodiscard]] std::optional<Refusal> exhausted() const;

  // Replaces a reservation by what the call really spent (`used`, with its cost).
  void settle(const Reservation& reserved, const Usage& used);
  // Gives back a reservation whose call failed before spending anything.
  void cancel(const Reservation& reserved);
  // Counts what another process's calls for this run spent (an `oe worker`'s, which charged the
  // shared budget itself): only this ledger's spent() grows.
  void count(const Usage& used);

  [[nodiscard]] Usage spent() const;  // prior + this run
  [[nodiscard]] const Budget& budget() const { return budget_; }
  [[nodiscard]] bool limitsCost() const { return budget_.max_cost_usd.has_value(); }

 private:
  // The refusal of `need` on top of `spent` and `held`, or nullopt when it fits.
  [[nodiscard]] std::optional<Refusal> check(const Usage& spent, const Reservation& held,
                                             const Reservation& need) const;
  [[nodiscard]] std::optional<Refusal> checkSpent(const Usage& spent) const;
  std::optional<Refusal> reserveShared(Reservation& need);

  mutable std::mutex mutex_;
  Budget budget_;
  Usage spent_;
  Reservation reserved_;
  SharedBudget* shared_ = nullptr;
};

}  // namespace oe::llm
