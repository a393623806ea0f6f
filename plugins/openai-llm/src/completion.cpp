// The retry loop around one provider request. Waits are sliced so cancellation is noticed within
// kCancelPoll even during a long Retry-After.
#include "completion.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "http_port.hpp"
#include "retry.hpp"

namespace oe::llm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Millis kCancelPoll{50};

bool cancelled(const CompletionContext& ctx) {
  return ctx.call != nullptr && ctx.host.is_cancelled(ctx.call);
}

std::string seconds(Millis ms) {
  if (ms.count() % 1000 == 0) {
    return std::to_string(ms.count() / 1000) + " s";
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", static_cast<double>(ms.count()) / 1000.0);
  std::string out(text);
  while (out.ends_with('0')) {
    out.pop_back();
  }
  return out + " s";
}

// A log line, and a node.activity event so that whoever watches the run sees the wait.
void report(const CompletionContext& ctx, const std::string& text) {
  ctx.host.log(ctx.log_ctx, OE_LOG_WARN, oe_str{text.data(), text.size()});
  if (ctx.call != nullptr) {
    const std::string fields = Json{{"activity", text}}.dump();
    ctx.host.emit_event(ctx.call, oe_str{"node.activity", 13},
                        oe_str{fields.data(), fields.size()});
  }
}

// Sleeps `delay`, polling cancellation; false when cancelled.
bool waitUnlessCancelled(const CompletionContext& ctx, Millis delay) {
  const auto deadline = Clock::now() + delay;
  while (true) {
    if (cancelled(ctx)) {
      return false;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return true;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(
        deadline - now, std::chrono::duration_cast<Clock::duration>(kCancelPoll)));
  }
}

std::string endpoint(const ProviderConfig& config) {
  return config.kind == ProviderKind::kOpenAi ? config.base_url + "/chat/completions"
                                              : config.base_url + "/v1/messages";
}

const char* baseEnv(const ProviderConfig& config) {
  return config.kind == ProviderKind::kOpenAi ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL";
}

HttpPost buildPost(const ProviderConfig& config, const LlmRequest& request) {
  HttpPost out;
  out.url = endpoint(config);
  out.timeout = config.timeout;
  out.stall_timeout = config.stall_timeout;
  out.headers.emplace_back("Content-Type", "application/json");
  if (config.kind == ProviderKind::kOpenAi) {
    if (!config.api_key.empty()) {
      out.headers.emplace_back("Authorization", "Bearer " + config.api_key);
    }
    out.body = openAiBody(request);
  } else {
    out.headers.emplace_back("x-api-key", config.api_key);
    out.headers.emplace_back("anthropic-version", "2023-06-01");
    out.body = anthropicBody(request);
  }
  return out;
}

oe_status statusFor(int http_status) {
  switch (http_status) {
    case 400:
    case 413:
    case 422:
      return OE_INVALID_ARGUMENT;
    default:
      return sdk::statusForHttp(http_status, OE_UNKNOWN);
  }
}

std::string hintFor(int http_status, int attempts, const ProviderConfig& config) {
  const std::string tries = std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts");
  switch (http_status) {
    case 400:
    case 422:
      return "The provider rejected the request (its message is above); check the model name, "
             "max_tokens and the tool schemas.";
    case 401:
      return "Check the API key in " + config.key_env +
             " (or api_key in the provider configuration).";
    case 403:
      return "The API key in " + config.key_env + " may not use this model or endpoint.";
    case 404:
      return std::string("Check the model name and the base URL (base_url or ") + baseEnv(config) +
             ").";
    case 413:
      return "The request is too large for the provider; shorten the prompt.";
    case 429:
      return "Still rate limited after " + tries +
             ": lower runtime.limits for this provider or retry later.";
    default:
      if (http_status >= 500 && http_status <= 599) {
        return "The provider kept failing after " + tries + "; retry later.";
      }
      return "";
  }
}

}  // namespace

Expected<Json> complete(const CompletionContext& ctx, const ProviderConfig& config,
                        const LlmRequest& request) {
  const HttpPost http_post = buildPost(config, request);
  const std::string who = config.name + " model \"" + request.model + "\"";
  const std::string target = "POST " + http_post.url;
  const int max_attempts = config.retry.max_attempts;

  for (int attempt = 1;; ++attempt) {
    if (cancelled(ctx)) {
      return fail(OE_CANCELLED, who + ": " + target + " cancelled");
    }
    auto reply = post(ctx.http, ctx.call, http_post);
    std::optional<Millis> retry_after;
    std::string reason;  // why another attempt is worth it
    if (!reply) {
      const Failure& why = reply.failure();
      if (why.status != OE_UNAVAILABLE || attempt >= max_attempts) {
        std::string message = who + ": " + why.message;
        if (why.status == OE_UNAVAILABLE) {
          message += " (after " + std::to_string(attempt) +
                     (attempt == 1 ? " attempt" : " attempts") +
                     "). Check the base URL (base_url or " + baseEnv(config) + ") and the network.";
        } else if (why.status == OE_DEADLINE_EXCEEDED) {
          message += why.message.find("stall_timeout_ms") != std::string::npos
                         ? ". Raise stall_timeout_ms if the model needs longer to answer."
                         : ". Raise timeout_ms if the model needs longer to answer.";
        }
        return fail(why.status, std::move(message));
      }
      reason = why.message;
    } else if (reply->status >= 200 && reply->status <= 299) {
      auto result = config.kind == ProviderKind::kOpenAi ? openAiResult(reply->body, request)
                                                         : anthropicResult(reply->body, request);
      if (!result) {
        return fail(result.failure().status,
                    who + ": " + target + " answered HTTP " + std::to_string(reply->status) +
                        ", but " + result.failure().message + ". Is the base URL an " +
                        config.name + "-compatible API?");
      }
      return std::move(*result);
    } else {
      const int status = reply->status;
      const std::string answered = who + ": " + target + " answered HTTP " + std::to_string(status);
      if (!isRetryableStatus(status) || attempt >= max_attempts) {
        std::string message = answered;
        if (attempt > 1) {
          message += " after " + std::to_string(attempt) + " attempts";
        }
        message += ": " + excerpt(reply->body);
        if (std::string hint = hintFor(status, attempt, config); !hint.empty()) {
          message += ". " + hint;
        }
        return fail(statusFor(status), std::move(message));
      }
      retry_after = retryAfterFrom(reply->headers, std::chrono::system_clock::now());
      if (retry_after && *retry_after > config.retry.max_delay) {
        return fail(statusFor(status), answered + " and asked to wait " + seconds(*retry_after) +
                                           " (Retry-After), more than max_delay_ms (" +
                                           std::to_string(config.retry.max_delay.count()) +
                                           "): " + excerpt(reply->body) +
                                           ". Retry later or raise max_delay_ms.");
      }
      reason = "HTTP " + std::to_string(status);
    }

    const Millis delay = retryDelay(config.retry, attempt, retry_after, jitterUnit());
    std::string note = who + ": " + reason + " (attempt " + std::to_string(attempt) + " of " +
                       std::to_string(max_attempts) + "); retrying in " + seconds(delay);
    if (retry_after) {
      note += " (Retry-After " + seconds(*retry_after) + ")";
    }
    report(ctx, note);
    if (!waitUnlessCancelled(ctx, delay)) {
      return fail(OE_CANCELLED, who + ": " + target + " cancelled while waiting to retry");
    }
  }
}

}  // namespace oe::llm
