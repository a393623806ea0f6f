// Webhook deliveries (docs/serve.md, "Triggers"): POST /hooks/<experience>/<name> with a body
// signed by HMAC-SHA256 under the webhook's secret, in `X-Oe-Signature: sha256=<hex>` or
// GitHub's `X-Hub-Signature-256` (same form). A bad or missing signature is refused; a delivery
// id (`X-Oe-Delivery`, GitHub's `X-GitHub-Delivery`) seen before is ignored; an accepted one
// gives the run's args: the trigger's `args:`, then `args_from:` read from {body, headers}.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/spec/trigger.hpp"
#include "oe/triggers/trigger_store.hpp"

namespace oe::triggers {

// Header names as httpd::Request holds them: lower case.
using Headers = std::vector<std::pair<std::string, std::string>>;

enum class WebhookVerdict : uint8_t {
  kAccepted,     // 202: queue a run with `args`
  kReplayed,     // 200: a delivery id seen before; nothing to do
  kRefused,      // 401: no signature, or a wrong one (log it)
  kBadRequest,   // 400: a malformed delivery id
  kUnavailable,  // 503: the secret cannot be read, or the store failed; the sender retries
};

struct WebhookOutcome {
  WebhookVerdict verdict = WebhookVerdict::kRefused;
  [[nodiscard]] int status() const;
  // Why, for the log and the problem's detail; never holds the secret or the signature.
  std::string message;
  Json args = Json::object();  // kAccepted: the run's args
  std::string delivery_id;     // as sent, or empty
};

// "sha256=<64 lower-case hex>": the signature header of `body` under `secret`.
[[nodiscard]] std::string webhookSignature(std::string_view secret, std::string_view body);

// The root `args_from` paths read: {"body": the body as JSON (its text when it is not JSON),
// "headers": {name: value}} with header names in lower case and `-` as `_`
// ($.headers.x_github_event), the last value of a repeated header winning.
[[nodiscard]] Json deliveryRoot(std::string_view body, const Headers& headers);

// The trigger's `args:` with each `args_from:` entry that resolves against `root` on top (an
// entry that does not resolve is left out: the run's own checks say what is missing).
[[nodiscard]] Json webhookArgs(const spec::TriggerSpec& trigger, const Json& root);

// Judges one delivery to `trigger` (a webhook trigger of `experience`, whose folder `dir`
// resolves a secret file): the signature, then the delivery id against `store` (remembered for
// kDeliveryRetentionMs), then the args.
WebhookOutcome receiveWebhook(std::string_view experience, const spec::TriggerSpec& trigger,
                              const std::filesystem::path& dir, std::string_view body,
                              const Headers& headers, TriggerStore& store, int64_t now_ms);

}  // namespace oe::triggers
