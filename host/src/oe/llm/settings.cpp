// Settings of a run's LLM service; see settings.hpp.
#include "oe/llm/settings.hpp"

#include <cstdlib>

namespace oe::llm {
namespace {

std::string envOr(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads
  return value == nullptr ? std::string() : std::string(value);
}

template <class T>
std::optional<T> optNumber(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    return std::nullopt;
  }
  return it->get<T>();
}

Limit readLimit(const Json& object) {
  Limit limit;
  limit.max_in_flight = optNumber<int>(object, "max_in_flight");
  limit.requests_per_minute = optNumber<int>(object, "requests_per_minute");
  limit.tokens_per_minute = optNumber<int64_t>(object, "tokens_per_minute");
  return limit;
}

}  // namespace

Environment Environment::fromProcess() {
  Environment env;
  env.anthropic_api_key = envOr("ANTHROPIC_API_KEY");
  env.openai_api_key = envOr("OPENAI_API_KEY");
  env.openai_base_url = envOr("OPENAI_BASE_URL");
  env.anthropic_model = envOr("OE_ANTHROPIC_MODEL");
  env.openai_model = envOr("OE_OPENAI_MODEL");
  return env;
}

std::map<std::string, Price, std::less<>> defaultPrices() {
  // List prices in USD per million tokens (input, output). A dated snapshot matches its family
  // by prefix (findPrice); runtime.prices overrides or extends the table.
  return {
      {"claude-opus-4-5", {5.0, 25.0}},     {"claude-opus-4-1", {15.0, 75.0}},
      {"claude-opus-4", {15.0, 75.0}},      {"claude-sonnet-4-6", {3.0, 15.0}},
      {"claude-sonnet-4-5", {3.0, 15.0}},   {"claude-sonnet-4", {3.0, 15.0}},
      {"claude-3-7-sonnet", {3.0, 15.0}},   {"claude-haiku-4-5", {1.0, 5.0}},
      {"claude-3-5-haiku", {0.8, 4.0}},     {"gpt-5", {1.25, 10.0}},
      {"gpt-5-mini", {0.25, 2.0}},          {"gpt-5-nano", {0.05, 0.4}},
      {"gpt-4.1", {2.0, 8.0}},              {"gpt-4.1-mini", {0.4, 1.6}},
      {"gpt-4.1-nano", {0.1, 0.4}},         {"gpt-4o", {2.5, 10.0}},
      {"gpt-4o-mini", {0.15, 0.6}},         {"o3", {2.0, 8.0}},
      {"o3-mini", {1.1, 4.4}},              {"o4-mini", {1.1, 4.4}},
  };
}

Result<void> applyRuntime(const Json& runtime, Settings& settings) {
  if (settings.prices.empty()) {
    settings.prices = defaultPrices();
  }
  if (!runtime.is_object()) {
    return {};
  }
  if (auto limits = runtime.find("limits"); limits != runtime.end() && limits->is_object()) {
    for (const auto& [provider, entry] : limits->items()) {
      if (!entry.is_object()) {
        continue;
      }
      ProviderLimits& target = settings.limits[provider];
      target.limit = readLimit(entry);
      if (auto models = entry.find("models"); models != entry.end() && models->is_object()) {
        for (const auto& [model, limit] : models->items()) {
          if (limit.is_object()) {
            target.models[model] = readLimit(limit);
          }
        }
      }
    }
  }
  if (auto budget = runtime.find("budget"); budget != runtime.end() && budget->is_object()) {
    if (auto tokens = optNumber<int64_t>(*budget, "max_tokens")) {
      settings.budget.max_tokens = tokens;
    }
    if (auto cost = optNumber<double>(*budget, "max_cost_usd")) {
      settings.budget.max_cost_usd = cost;
    }
  }
  if (auto prices = runtime.find("prices"); prices != runtime.end() && prices->is_object()) {
    for (const auto& [model, price] : prices->items()) {
      if (!price.is_object()) {
        continue;
      }
      Price p{price.value("input", 0.0), price.value("output", 0.0)};
      if (p.input < 0 || p.output < 0) {
        return makeError("runtime.prices." + model +
                         ": prices are USD per million tokens and cannot be negative");
      }
      settings.prices[model] = p;
    }
  }
  return {};
}

const Price* findPrice(const Settings& settings, std::string_view model) {
  if (auto it = settings.prices.find(model); it != settings.prices.end()) {
    return &it->second;
  }
  const Price* best = nullptr;
  size_t best_len = 0;
  for (const auto& [name, price] : settings.prices) {
    if (name.size() > best_len && model.starts_with(name)) {
      best = &price;
      best_len = name.size();
    }
  }
  return best;
}

}  // namespace oe::llm
