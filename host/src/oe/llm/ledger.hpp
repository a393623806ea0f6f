// Token and cost accounting of a run, and its budget (`runtime.budget`): every call reserves
// an upper bound of what it can spend before it is sent, so the run's total never passes the
// budget, even with many calls in flight; the reservation is settled with the real usage.
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

class Ledger {
 public:
  // `prior`: what the runs this one resumes already spent (the budget covers the whole chain).
  Ledger(Budget budget, Usage prior) : budget_(budget), spent_(prior) {}

  struct Reservation {
    int64_t tokens = 0;
    double cost_usd = 0;
  };

  // Reserves `tokens` / `cost_usd` against the budget. On refusal, the message says what the
  // call needed, what is left, and which limit; nothing is reserved.
  struct Refusal {
    std::string message;
  };
  std::optional<Refusal> reserve(const Reservation& need);
  // A refusal when what is spent already reaches a limit: the check for work whose cost is
  // known only once it is done (a coding CLI run), which may start while anything is left.
  [[nodiscard]] std::optional<Refusal> exhausted() const;

  // Replaces a reservation by what the call really spent (`used`, with its cost).
  void settle(const Reservation& reserved, const Usage& used);
  // Gives back a reservation whose call failed before spending anything.
  void cancel(const Reservation& reserved);

  [[nodiscard]] Usage spent() const;  // prior + this run
  [[nodiscard]] const Budget& budget() const { return budget_; }
  [[nodiscard]] bool limitsCost() const { return budget_.max_cost_usd.has_value(); }

 private:
  mutable std::mutex mutex_;
  Budget budget_;
  Usage spent_;
  Reservation reserved_;
};

}  // namespace oe::llm
