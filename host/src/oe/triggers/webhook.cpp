// Webhook signatures, replay protection and args; see webhook.hpp.
#include "oe/triggers/webhook.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <cctype>

#include "oe/common/hex.hpp"
#include "oe/expr/state_path.hpp"
#include "oe/expr/state_reader.hpp"
#include "oe/secrets/resolve.hpp"

namespace oe::triggers {

namespace {

constexpr size_t kDigestSize = 32;
// A delivery id is an opaque token (GitHub's are UUIDs); anything longer is not one.
constexpr size_t kMaxDeliveryId = 200;

std::array<unsigned char, kDigestSize> hmacSha256(std::string_view key, std::string_view body) {
  std::array<unsigned char, kDigestSize> out{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), out.data(), &size);
  return out;
}

const std::string* header(const Headers& headers, std::string_view name) {
  const std::string* found = nullptr;
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() &&
        std::equal(key.begin(), key.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        })) {
      found = &value;
    }
  }
  return found;
}

}  // namespace

int WebhookOutcome::status() const {
  switch (verdict) {
    case WebhookVerdict::kAccepted:
      return 202;
    case WebhookVerdict::kReplayed:
      return 200;
    case WebhookVerdict::kBadRequest:
      return 400;
    case WebhookVerdict::kUnavailable:
      return 503;
    case WebhookVerdict::kRefused:
    default:
      return 401;
  }
}

std::string webhookSignature(std::string_view secret, std::string_view body) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256=";
  for (const unsigned char byte : hmacSha256(secret, body)) {
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
  return out;
}

Json deliveryRoot(std::string_view body, const Headers& headers) {
  Json parsed = Json::parse(body, nullptr, false);
  Json root = Json::object();
  root["body"] = parsed.is_discarded() ? Json(std::string(body)) : std::move(parsed);
  Json names = Json::object();
  for (const auto& [key, value] : headers) {
    std::string name;
    name.reserve(key.size());
    for (const char c : key) {
      name += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    names[name] = value;
  }
  root["headers"] = std::move(names);
  return root;
}

Json webhookArgs(const spec::TriggerSpec& trigger, const Json& root) {
  Json args = trigger.args.is_object() ? trigger.args : Json::object();
  const expr::JsonStateReader reader(root);
  for (const auto& [name, path] : trigger.args_from) {
    const auto parsed = expr::StatePath::parse(path);
    if (!parsed) {
      continue;  // `oe validate` refuses it; a server never loads such a file
    }
    if (auto value = parsed->resolve(reader)) {
      args[name] = std::move(*value);
    }
  }
  return args;
}

WebhookOutcome receiveWebhook(std::string_view experience, const spec::TriggerSpec& trigger,
                              const std::filesystem::path& dir, std::string_view body,
                              const Headers& headers, TriggerStore& store, int64_t now_ms) {
  WebhookOutcome out;
  if (!trigger.webhook) {
    out.verdict = WebhookVerdict::kRefused;
    out.message = "not a webhook trigger";
    return out;
  }
  const std::string who = "webhook \"" + trigger.webhook->name + "\" of " + std::string(experience);
  auto secret = secrets::readValue(trigger.webhook->secret, dir);
  if (!secret) {
    out.verdict = WebhookVerdict::kUnavailable;
    out.message = who + ": its secret cannot be read (" + secret.error().message +
                  "); set it and restart oe serve. The delivery was not accepted";
    return out;
  }
  const std::string* signature = header(headers, "x-oe-signature");
  if (signature == nullptr) {
    signature = header(headers, "x-hub-signature-256");
  }
  if (signature == nullptr) {
    out.verdict = WebhookVerdict::kRefused;
    out.message = who +
                  ": no signature; sign the raw body with HMAC-SHA256 under the "
                  "webhook's secret and send X-Oe-Signature: sha256=<hex>";
    return out;
  }
  std::array<unsigned char, kDigestSize> sent{};
  bool well_formed = signature->size() == 7 + 2 * kDigestSize && signature->starts_with("sha256=");
  for (size_t i = 0; well_formed && i < kDigestSize; ++i) {
    const int high = hexDigitValue((*signature)[7 + 2 * i]);
    const int low = hexDigitValue((*signature)[8 + 2 * i]);
    well_formed = high >= 0 && low >= 0;
    sent[i] = static_cast<unsigned char>(high << 4 | low);
  }
  const std::array<unsigned char, kDigestSize> expected = hmacSha256(*secret, body);
  // Constant time: how much of a forged signature matches must not show in the answer's time.
  if (!well_formed || CRYPTO_memcmp(sent.data(), expected.data(), kDigestSize) != 0) {
    out.verdict = WebhookVerdict::kRefused;
    out.message = who + (well_formed ? ": the signature does not match the body; sign the raw "
                                       "body, byte for byte, with the webhook's secret"
                                     : ": the signature is not of the form sha256=<64 hex "
                                       "digits>");
    return out;
  }
  const std::string* delivery = header(headers, "x-oe-delivery");
  if (delivery == nullptr) {
    delivery = header(headers, "x-github-delivery");
  }
  if (delivery != nullptr) {
    if (delivery->empty() || delivery->size() > kMaxDeliveryId) {
      out.verdict = WebhookVerdict::kBadRequest;
      out.message = who + ": the delivery id is empty or longer than " +
                    std::to_string(kMaxDeliveryId) +
                    " characters; send a short unique token "
                    "(a UUID) or none";
      return out;
    }
    out.delivery_id = *delivery;
    auto fresh = store.claimDelivery(experience, trigger.webhook->name, *delivery, now_ms);
    if (!fresh) {
      out.verdict = WebhookVerdict::kUnavailable;
      out.message = who + ": " + fresh.error().message;
      return out;
    }
    if (!*fresh) {
      out.verdict = WebhookVerdict::kReplayed;
      out.message = who + ": delivery " + *delivery + " was received before; ignored";
      return out;
    }
  }
  out.verdict = WebhookVerdict::kAccepted;
  out.args = webhookArgs(trigger, deliveryRoot(body, headers));
  out.message =
      who + ": accepted" + (delivery != nullptr ? " delivery " + *delivery : std::string());
  return out;
}

}  // namespace oe::triggers
