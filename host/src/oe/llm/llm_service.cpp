// The run's LLM service; see llm_service.hpp.
#include "oe/llm/llm_service.hpp"

#include <cstring>

#include "oe/llm/stand_in.hpp"
#include "oe/plugins/host_context.hpp"

namespace oe::llm {
namespace {

constexpr int64_t kDefaultMaxTokens = 4096;  // what the provider plugin sends when none is given
constexpr const char* kAnthropicDefault = "claude-sonnet-4-6";
constexpr const char* kOpenAiDefault = "gpt-4o-2024-11-20";

Answer fail(oe_status status, std::string message) { return Answer{status, std::move(message)}; }

std::string nodeTag(const Site& site) { return "node \"" + std::string(site.node_id) + "\": "; }

// node.activity and node.tokens are what `oe inspect` and the budgets' reports read: an event
// the host refused is a warning with its cause, not silence (issue 10, item 9).
void emitOrWarn(oe_host_ctx& ctx, std::string_view type, const std::string& fields,
                const Site& site) {
  const oe_status status = ctx.emitEvent(type, fields);
  if (status != OE_OK) {
    ctx.log(OE_LOG_WARN, nodeTag(site) + "cannot record the " + std::string(type) +
                             " event (status " + std::to_string(static_cast<int>(status)) +
                             "): " + fields.substr(0, 200));
  }
}

}  // namespace

Result<ProviderChoice> chooseProvider(const Settings& settings) {
  const Environment& env = settings.env;
  const auto anthropic = [&] {
    return ProviderChoice{"anthropic",
                          env.anthropic_model.empty() ? kAnthropicDefault : env.anthropic_model};
  };
  const auto openai = [&] {
    return ProviderChoice{"openai", env.openai_model.empty() ? kOpenAiDefault : env.openai_model};
  };
  const std::string& flag = settings.provider_flag;
  if (flag == "anthropic") {
    if (env.anthropic_api_key.empty()) {
      return makeError("--llm anthropic requires ANTHROPIC_API_KEY");
    }
    return anthropic();
  }
  if (flag == "openai") {
    // oe extension: a local OpenAI-compatible server (OPENAI_BASE_URL) may need no key.
    if (env.openai_api_key.empty() && env.openai_base_url.empty()) {
      return makeError("--llm openai requires OPENAI_API_KEY");
    }
    return openai();
  }
  if (!flag.empty()) {
    return makeError("unknown --llm value: " + flag + ". Use 'anthropic' or 'openai'.");
  }
  if (!env.anthropic_api_key.empty()) {
    return anthropic();
  }
  if (!env.openai_api_key.empty() || !env.openai_base_url.empty()) {
    return openai();
  }
  return makeError(
      "No LLM provider configured. Set ANTHROPIC_API_KEY or OPENAI_API_KEY, or pass --llm "
      "<anthropic|openai>.");
}

LlmService::LlmService(Settings settings, const plugins::PluginRegistry& registry, Usage prior,
                       std::unique_ptr<SharedLimits> shared)
    : settings_(std::move(settings)),
      registry_(registry),
      shared_(std::move(shared)),
      ledger_(settings_.budget, prior, shared_.get()),
      limiter_(settings_.limits, shared_.get()),
      prior_(prior) {}

Result<std::unique_ptr<LlmService>> LlmService::create(Settings settings,
                                                       const plugins::PluginRegistry& registry,
                                                       Usage prior) {
  if (settings.prices.empty()) {
    settings.prices = defaultPrices();
  }
  std::unique_ptr<SharedLimits> shared;
  // A stand-in or replayed run calls no provider, and a run with neither limits nor budget has
  // nothing to count: no connection, no renewal thread, no round trip per call.
  const bool counts = !settings.limits.empty() || settings.budget.max_tokens ||
                      settings.budget.max_cost_usd;
  if (!settings.shared_store_url.empty() && counts && !settings.stand_in &&
      !settings.replay_file) {
    auto opened = SharedLimits::open(settings.shared_store_url, settings.shared_scope, prior);
    if (!opened) {
      return opened.error();
    }
    shared = std::move(opened).value();
  }
  std::unique_ptr<LlmService> service(
      new LlmService(std::move(settings), registry, prior, std::move(shared)));
  if (service->settings_.replay_file) {
    auto replayer = Replayer::load(*service->settings_.replay_file);
    if (!replayer) {
      return replayer.error();
    }
    service->replayer_ = std::move(replayer).value();
  }
  if (service->settings_.record_file) {
    auto recorder = Recorder::open(*service->settings_.record_file);
    if (!recorder) {
      return recorder.error();
    }
    service->recorder_ = std::move(recorder).value();
  }
  return service;
}

void LlmService::setSecrets(std::shared_ptr<const secrets::SecretSet> secrets) {
  if (!secrets || secrets->empty()) {
    return;
  }
  secrets_ = secrets;
  if (recorder_) {
    recorder_->setSecrets(std::move(secrets));
  }
}

Json LlmService::redactedCopy(const Json& request) const {
  Json copy = request;
  secrets_->redact(copy);
  return copy;
}

Usage LlmService::runUsage() const {
  Usage total = ledger_.spent();
  total.input_tokens -= prior_.input_tokens;
  total.output_tokens -= prior_.output_tokens;
  total.cost_usd -= prior_.cost_usd;
  total.calls -= prior_.calls;
  return total;
}

Result<const LlmService::Provider*> LlmService::provider() {
  std::lock_guard lock(provider_mutex_);
  if (!provider_) {
    provider_ = [&]() -> Result<Provider> {
      auto choice = chooseProvider(settings_);
      if (!choice) {
        return choice.error();
      }
      // The registry decided who serves each name: a built-in plugin, unless the experience
      // overrides it (plugins.override, docs/trust.md).
      if (const plugins::LoadedProvider* found = registry_.provider(choice->provider);
          found != nullptr && found->table != nullptr && found->plugin->library) {
        Json config = {{"provider", choice->provider}};
        return Provider{choice->provider, choice->default_model, found->table,
                        found->plugin->library->self(), config.dump()};
      }
      return makeError("no loaded plugin provides the LLM provider \"" + choice->provider +
                       "\" (oe.llm-provider/1); is openai_llm.so installed? `oe plugins` lists "
                       "what loaded");
    }();
  }
  if (!provider_->ok()) {
    return provider_->error();
  }
  return &provider_->value();
}

Answer LlmService::complete(const Site& site, std::string_view request_json) {
  CallObserver* observer = settings_.observer;
  if (observer == nullptr) {
    return completeCall(site, request_json, nullptr);
  }
  CallRecord record;
  record.node_id = site.node_id;
  record.start = std::chrono::system_clock::now();
  Answer answer = completeCall(site, request_json, &record);
  record.end = std::chrono::system_clock::now();
  record.status = answer.status;
  if (answer.status != OE_OK) {
    record.error = answer.body;
    if (secrets_) {
      secrets_->redact(record.error);  // a provider's error may quote what it was sent
    }
  }
  observer->onLlmCall(record);
  return answer;
}

Answer LlmService::completeCall(const Site& site, std::string_view request_json,
                                CallRecord* record) {
  Json request = Json::parse(request_json, nullptr, false);
  if (request.is_discarded() || !request.is_object() || !request.contains("messages") ||
      !request["messages"].is_array()) {
    return fail(OE_INVALID_ARGUMENT,
                nodeTag(site) + "oe.llm/1 request is not a JSON object with a \"messages\" array");
  }
  if (settings_.stand_in) {
    const Json answer = standInResponse(request);
    account(site, "stand-in", answer["model"].get<std::string>(), answer, Ledger::Reservation{},
            record);
    return Answer{OE_OK, answer.dump()};
  }
  const std::string key = requestKey(secrets_ ? redactedCopy(request) : request);

  if (replayer_) {
    const Replayer::Exchange* found = replayer_->find(key);
    if (found == nullptr) {
      return fail(OE_FAILED_PRECONDITION,
                  nodeTag(site) + "no recorded LLM response for this request (key " +
                      key.substr(0, 12) + ") in " + replayer_->path().string() +
                      "; the prompt, model, schema or inputs changed since it was recorded: "
                      "re-record with --llm-record " +
                      replayer_->path().string());
    }
    const std::string model = stringField(found->response, "model", stringField(request, "model"));
    if (record != nullptr) {
      record->replayed = true;
      record->provider = found->provider;
      record->request_model = stringField(request, "model", model);
    }
    Usage used = Usage::fromJson(found->response.value("usage", Json::object()));
    Ledger::Reservation exact{used.tokens(), 0, 0};
    if (const Price* price = findPrice(settings_, model)) {
      exact.cost_usd = (static_cast<double>(used.input_tokens) * price->input +
                        static_cast<double>(used.output_tokens) * price->output) /
                       1e6;
    }
    if (auto refused = ledger_.reserve(exact)) {
      if (site.usage != nullptr) {
        site.usage->budget_refused = true;
      }
      return fail(OE_RESOURCE_EXHAUSTED, nodeTag(site) + refused->message);
    }
    account(site, found->provider, model, found->response, exact, record);
    return Answer{OE_OK, found->response.dump()};
  }

  auto resolved = provider();
  if (!resolved) {
    return fail(OE_FAILED_PRECONDITION, nodeTag(site) + resolved.error().message);
  }
  const Provider& p = **resolved;
  Json sent = request;
  if (!sent.contains("model") || !sent["model"].is_string() ||
      sent["model"].get_ref<const std::string&>().empty()) {
    sent["model"] = p.default_model;
  }
  const std::string model = sent["model"].get<std::string>();
  if (record != nullptr) {
    record->provider = p.name;
    record->request_model = model;
  }

  // The most this call can spend: every input byte a token, plus the full max_tokens answer.
  const int64_t max_out = sent.value("max_tokens", kDefaultMaxTokens);
  const int64_t max_in = maxInputTokens(sent);
  Ledger::Reservation need{max_in + max_out, 0};
  const Price* price = findPrice(settings_, model);
  if (price != nullptr) {
    need.cost_usd = (static_cast<double>(max_in) * price->input +
                     static_cast<double>(max_out) * price->output) /
                    1e6;
  } else if (ledger_.limitsCost()) {
    return fail(OE_FAILED_PRECONDITION,
                nodeTag(site) + "runtime.budget.max_cost_usd is set but model \"" + model +
                    "\" has no price: add runtime.prices." + model +
                    ": {input: <USD per million tokens>, output: <USD per million tokens>}");
  }
  if (auto refused = ledger_.reserve(need)) {
    if (site.usage != nullptr) {
      site.usage->budget_refused = true;
    }
    return fail(OE_RESOURCE_EXHAUSTED, nodeTag(site) + refused->message);
  }

  std::optional<RateLimiter::Ticket> ticket = waitForRoom(site, p.name, model, need.tokens);
  if (!ticket) {
    ledger_.cancel(need);
    return fail(OE_CANCELLED,
                nodeTag(site) + "cancelled while waiting for " + p.name + " rate limits");
  }

  oe_writer response;
  oe_writer error;
  const std::string sent_text = sent.dump();
  const oe_status status =
      p.table->complete(p.self, site.ctx != nullptr ? site.ctx->handle() : nullptr,
                        oe_str{p.config_json.data(), p.config_json.size()},
                        oe_str{sent_text.data(), sent_text.size()}, &response, &error);
  Json answer;
  if (status == OE_OK) {
    answer = Json::parse(response.data, nullptr, false);
  }
  const bool ok = status == OE_OK && answer.is_object();
  giveBack(*ticket, ok ? Usage::fromJson(answer.value("usage", Json::object())).tokens() : 0);
  if (!ok) {
    ledger_.cancel(need);
    if (status == OE_OK) {
      return fail(OE_INTERNAL, nodeTag(site) + "the " + p.name +
                                   " provider plugin returned a response that is not a JSON "
                                   "object");
    }
    std::string message = error.data.empty() ? "the LLM call failed" : error.data;
    return fail(status, nodeTag(site) + message);
  }
  if (!answer.contains("model")) {
    answer["model"] = model;
  }
  account(site, p.name, model, answer, need, record);
  if (recorder_) {
    if (auto recorded = recorder_->append(key, site.node_id, p.name, request, answer);
        !recorded && site.ctx != nullptr) {
      site.ctx->log(OE_LOG_WARN, recorded.error().message);
    }
  }
  return Answer{OE_OK, answer.dump()};
}

namespace {

// The CLI request of oe.cli-replay/1-draft: an object with a string "provider".
std::optional<Json> cliRequest(std::string_view request_json) {
  Json request = Json::parse(request_json, nullptr, false);
  if (request.is_discarded() || !request.is_object() || !request.contains("provider") ||
      !request["provider"].is_string()) {
    return std::nullopt;
  }
  return request;
}

}  // namespace

Answer LlmService::beginCli(const Site& site, std::string_view request_json) {
  const std::optional<Json> request = cliRequest(request_json);
  if (!request) {
    return fail(OE_INVALID_ARGUMENT, nodeTag(site) +
                                         "oe.cli-replay/1-draft request is not a JSON object "
                                         "with a string \"provider\"");
  }
  const std::string provider = (*request)["provider"].get<std::string>();
  // A CLI cannot say beforehand what it will spend: it may start while any budget is left.
  if (auto refused = ledger_.exhausted()) {
    if (site.usage != nullptr) {
      site.usage->budget_refused = true;
    }
    return fail(OE_RESOURCE_EXHAUSTED,
                nodeTag(site) + refused->message + "; the " + provider + " CLI was not started");
  }
  if (settings_.stand_in) {
    const auto it = settings_.stand_in_cli_stdout.find(site.node_id);
    return Answer{OE_OK,
                  standInCliOutcome(it != settings_.stand_in_cli_stdout.end() ? it->second : "{}")
                      .dump()};
  }
  if (!replayer_) {
    return Answer{OE_OK, {}};
  }
  const std::string key = cliRequestKey(secrets_ ? redactedCopy(*request) : *request);
  const Json* outcome = replayer_->nextCliOutcome(key);
  if (outcome == nullptr) {
    const std::string file = replayer_->path().string();
    return fail(OE_FAILED_PRECONDITION,
                nodeTag(site) + "no recorded " + provider + " run for this command (key " +
                    key.substr(0, 12) + ") in " + file +
                    "; the prompt, model, extra_args, workdir, env or inputs changed since it "
                    "was recorded: re-record with `oe run <experience> --llm-record " +
                    file + "` with the " + provider + " CLI on PATH");
  }
  // Its usage is accounted when the plugin hands the outcome back (finishCli), at the same point
  // of the node's events as in the recorded run.
  return Answer{OE_OK, outcome->dump(-1, ' ', false, Json::error_handler_t::replace)};
}

Answer LlmService::finishCli(const Site& site, std::string_view request_json,
                             std::string_view outcome_json) {
  const std::optional<Json> request = cliRequest(request_json);
  Json outcome = Json::parse(outcome_json, nullptr, false);
  if (!request || outcome.is_discarded() || !outcome.is_object()) {
    return fail(OE_INVALID_ARGUMENT, nodeTag(site) +
                                         "oe.cli-replay/1-draft finish needs a request object "
                                         "with a string \"provider\" and an outcome object");
  }
  const std::string provider = (*request)["provider"].get<std::string>();
  if (auto usage = outcome.find("usage"); usage != outcome.end() && usage->is_object()) {
    accountCli(site, provider, *usage);
  }
  if (recorder_ && !settings_.stand_in) {
    if (auto recorded = recorder_->appendCli(
            cliRequestKey(secrets_ ? redactedCopy(*request) : *request), site.node_id, provider,
                                             *request, outcome);
        !recorded && site.ctx != nullptr) {
      site.ctx->log(OE_LOG_WARN, recorded.error().message);
    }
  }
  return Answer{OE_OK, {}};
}

void LlmService::accountCli(const Site& site, std::string_view provider, const Json& usage) {
  const auto integer = [&usage](const char* key) {
    auto it = usage.find(key);
    return it != usage.end() && it->is_number() ? it->get<int64_t>() : int64_t{0};
  };
  Usage used;
  used.input_tokens = integer("input_tokens");
  used.output_tokens = integer("output_tokens");
  used.calls = 1;
  const std::string model = usage.contains("model") && usage["model"].is_string()
                                ? usage["model"].get<std::string>()
                                : std::string();
  bool priced = false;
  if (auto cost = usage.find("cost_usd"); cost != usage.end() && cost->is_number()) {
    used.cost_usd = cost->get<double>();  // the CLI's own figure (Claude's total_cost_usd)
    priced = true;
  } else if (const Price* price = model.empty() ? nullptr : findPrice(settings_, model)) {
    used.cost_usd = (static_cast<double>(used.input_tokens) * price->input +
                     static_cast<double>(used.output_tokens) * price->output) /
                    1e6;
    priced = true;
  }
  ledger_.settle(Ledger::Reservation{}, used);
  if (site.usage != nullptr) {
    site.usage->usage += used;
  }
  if (site.ctx != nullptr) {
    // The fields of an oe.llm/1 call's node.tokens, in the same order.
    nlohmann::ordered_json fields;
    fields["input_tokens"] = used.input_tokens;
    fields["output_tokens"] = used.output_tokens;
    fields["model"] = model.empty() ? std::string(provider) : model;
    fields["provider"] = provider;
    if (priced) {
      fields["cost_usd"] = used.cost_usd;
    }
    emitOrWarn(*site.ctx, "node.tokens",
               fields.dump(-1, ' ', false, Json::error_handler_t::replace), site);
  }
}

std::optional<RateLimiter::Ticket> LlmService::waitForRoom(const Site& site, std::string_view name,
                                                           std::string_view model, int64_t tokens) {
  if (!limiter_.limits(name, model)) {
    return RateLimiter::Ticket{};
  }
  return limiter_.acquire(
      name, model, tokens, [&site] { return site.ctx != nullptr && site.ctx->isCancelled(); },
      [&site](const std::string& limit) {
        if (site.ctx != nullptr) {
          Json fields = {{"activity", "waiting for room under " + limit}};
          emitOrWarn(*site.ctx, "node.activity", fields.dump(), site);
        }
      });
}

void LlmService::giveBack(const RateLimiter::Ticket& ticket, int64_t actual_tokens) {
  if (!ticket.buckets.empty()) {
    limiter_.release(ticket, actual_tokens);
  }
}

void LlmService::account(const Site& site, std::string_view provider, const std::string& model,
                         const Json& response, const Ledger::Reservation& reserved,
                         CallRecord* record) {
  Usage used = Usage::fromJson(response.value("usage", Json::object()));
  used.calls = 1;
  const std::string& used_model = response.contains("model") && response["model"].is_string()
                                      ? response["model"].get_ref<const std::string&>()
                                      : model;
  const Price* price = findPrice(settings_, used_model);
  if (price == nullptr) {
    price = findPrice(settings_, model);
  }
  if (price != nullptr) {
    used.cost_usd = (static_cast<double>(used.input_tokens) * price->input +
                     static_cast<double>(used.output_tokens) * price->output) /
                    1e6;
  }
  ledger_.settle(reserved, used);
  if (site.usage != nullptr) {
    site.usage->usage += used;
  }
  if (record != nullptr) {
    record->usage = used;
    record->priced = price != nullptr;
    record->response_model = used_model;
    if (auto reason = response.find("stop_reason");
        reason != response.end() && reason->is_string()) {
      record->finish_reason = reason->get<std::string>();
    }
  }
  if (site.ctx != nullptr && response.contains("usage")) {
    // Upstream's fields in upstream's order, then oe's.
    nlohmann::ordered_json fields;
    fields["input_tokens"] = used.input_tokens;
    fields["output_tokens"] = used.output_tokens;
    fields["model"] = used_model;
    fields["provider"] = provider;
    if (price != nullptr) {
      fields["cost_usd"] = used.cost_usd;
    }
    const std::string text = fields.dump();
    emitOrWarn(*site.ctx, "node.tokens", text, site);
  }
}

}  // namespace oe::llm
