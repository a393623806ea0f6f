// Accounting and budget; see ledger.hpp.
#include "oe/llm/ledger.hpp"

#include <cstdio>

namespace oe::llm {
namespace {

constexpr int64_t kFramingPerMessage = 8;  // role markers and separators of a chat format
constexpr int64_t kFramingPerRequest = 16;

std::string usd(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.4f", value);
  return buf;
}

int64_t textBytes(const Json& value) {
  if (value.is_string()) {
    return static_cast<int64_t>(value.get_ref<const std::string&>().size());
  }
  if (value.is_null()) {
    return 0;
  }
  return static_cast<int64_t>(value.dump().size());
}

}  // namespace

Json Usage::toJson() const {
  return Json{{"input_tokens", input_tokens},
              {"output_tokens", output_tokens},
              {"cost_usd", cost_usd},
              {"llm_calls", calls}};
}

Usage Usage::fromJson(const Json& json) {
  Usage u;
  if (!json.is_object()) {
    return u;
  }
  u.input_tokens = json.value("input_tokens", int64_t{0});
  u.output_tokens = json.value("output_tokens", int64_t{0});
  u.cost_usd = json.value("cost_usd", 0.0);
  u.calls = json.value("llm_calls", int64_t{0});
  return u;
}

int64_t maxInputTokens(const Json& request) {
  int64_t bound = kFramingPerRequest;
  if (auto system = request.find("system"); system != request.end()) {
    bound += textBytes(*system);
  }
  if (auto messages = request.find("messages"); messages != request.end() && messages->is_array()) {
    for (const auto& message : *messages) {
      bound += kFramingPerMessage +
               textBytes(message.is_object() ? message.value("content", Json()) : message);
    }
  }
  if (auto tools = request.find("tools"); tools != request.end()) {
    bound += textBytes(*tools);
  }
  return bound;
}

std::optional<Ledger::Refusal> Ledger::check(const Usage& spent, const Reservation& held,
                                             const Reservation& need) const {
  if (budget_.max_tokens) {
    const int64_t committed = spent.tokens() + held.tokens;
    if (committed + need.tokens > *budget_.max_tokens) {
      return Refusal{"run budget exhausted: the call could use up to " +
                     std::to_string(need.tokens) + " tokens, but runtime.budget.max_tokens is " +
                     std::to_string(*budget_.max_tokens) + " and " +
                     std::to_string(spent.tokens()) + " are spent and " +
                     std::to_string(held.tokens) + " held by calls in flight"};
    }
  }
  if (budget_.max_cost_usd) {
    const double committed = spent.cost_usd + held.cost_usd;
    if (committed + need.cost_usd > *budget_.max_cost_usd) {
      return Refusal{"run budget exhausted: the call could cost up to " + usd(need.cost_usd) +
                     ", but runtime.budget.max_cost_usd is " + usd(*budget_.max_cost_usd) +
                     " and " + usd(spent.cost_usd) + " is spent and " + usd(held.cost_usd) +
                     " held by calls in flight"};
    }
  }
  return std::nullopt;
}

std::optional<Ledger::Refusal> Ledger::checkSpent(const Usage& spent) const {
  if (budget_.max_tokens && spent.tokens() >= *budget_.max_tokens) {
    return Refusal{"run budget exhausted: runtime.budget.max_tokens is " +
                   std::to_string(*budget_.max_tokens) + " and " + std::to_string(spent.tokens()) +
                   " are spent"};
  }
  if (budget_.max_cost_usd && spent.cost_usd >= *budget_.max_cost_usd) {
    return Refusal{"run budget exhausted: runtime.budget.max_cost_usd is " +
                   usd(*budget_.max_cost_usd) + " and " + usd(spent.cost_usd) + " is spent"};
  }
  return std::nullopt;
}

std::optional<Ledger::Refusal> Ledger::reserve(Reservation& need) {
  if (shared_ != nullptr) {
    return reserveShared(need);
  }
  std::lock_guard lock(mutex_);
  if (auto refused = check(spent_, reserved_, need)) {
    return refused;
  }
  reserved_.tokens += need.tokens;
  reserved_.cost_usd += need.cost_usd;
  return std::nullopt;
}

std::optional<Ledger::Refusal> Ledger::reserveShared(Reservation& need) {
  if (!budget_.max_tokens && !budget_.max_cost_usd) {
    return std::nullopt;  // nothing to hold against: the spending is still added at settle()
  }
  auto hold = shared_->reserve(budget_, need.tokens, need.cost_usd);
  if (!hold) {
    // A budget that cannot be checked is not spent blindly.
    return Refusal{"run budget cannot be checked: " + hold.error().message};
  }
  if (hold->id != 0) {
    need.hold = hold->id;
    return std::nullopt;
  }
  const Reservation held{hold->totals.held_tokens, hold->totals.held_cost_usd};
  if (auto refused = check(hold->totals.spent, held, need)) {
    refused->message += " across every process of the run";
    return refused;
  }
  return Refusal{"run budget exhausted across every process of the run"};
}

std::optional<Ledger::Refusal> Ledger::exhausted() const {
  if (!budget_.max_tokens && !budget_.max_cost_usd) {
    return std::nullopt;
  }
  if (shared_ != nullptr) {
    auto totals = shared_->totals();
    if (!totals) {
      return Refusal{"run budget cannot be checked: " + totals.error().message};
    }
    return checkSpent(totals->spent);
  }
  std::lock_guard lock(mutex_);
  return checkSpent(spent_);
}

void Ledger::count(const Usage& used) {
  std::lock_guard lock(mutex_);
  spent_ += used;
}

void Ledger::settle(const Reservation& reserved, const Usage& used) {
  if (shared_ != nullptr) {
    // On failure the hold stays (renewed while this process lives): the budget errs on the
    // side of having less left, never more.
    (void)shared_->settle(reserved.hold, used);
    std::lock_guard lock(mutex_);
    spent_ += used;
    return;
  }
  std::lock_guard lock(mutex_);
  reserved_.tokens -= reserved.tokens;
  reserved_.cost_usd -= reserved.cost_usd;
  spent_ += used;
}

void Ledger::cancel(const Reservation& reserved) {
  if (shared_ != nullptr) {
    if (reserved.hold != 0) {
      (void)shared_->cancel(reserved.hold);
    }
    return;
  }
  std::lock_guard lock(mutex_);
  reserved_.tokens -= reserved.tokens;
  reserved_.cost_usd -= reserved.cost_usd;
}

Usage Ledger::spent() const {
  std::lock_guard lock(mutex_);
  return spent_;
}

}  // namespace oe::llm
