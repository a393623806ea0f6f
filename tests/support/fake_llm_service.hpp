// Fake host services for LLM node kinds, served through a FakeHost: a scripted oe.llm/1 that
// records every request and answers from a queue, and an oe.prompt/1 that renders `{{name}}`
// from the values a test sets for each call context (the real ones live in the host).
#pragma once

#include <oe/ext/llm.h>
#include <oe/ext/prompt.h>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/fake_host.hpp"

namespace oe::test {

// One queued answer of the fake oe.llm/1.
struct ScriptedAnswer {
  oe_status status = OE_OK;
  std::string body;          // the response JSON on OE_OK, else the error message
  bool cancel_call = false;  // raise the call's is_cancelled as the answer is returned
};

// Fetches the fake registered under `self_id` from inside a C callback: the callbacks get only
// the call context, so each fake also registers itself as a private "extension" of the host.
template <class T>
T& fakeFromCall(oe_host_ctx* call, const char* self_id) {
  auto& ctx = *reinterpret_cast<FakeContext*>(call);  // NOLINT: opaque C handle
  const void* self = ctx.host->api()->get_extension(call, self_id);
  return *const_cast<T*>(static_cast<const T*>(self));  // NOLINT: registered as non-const
}

class FakeLlmService {
 public:
  explicit FakeLlmService(FakeHost& host) : host_(host) {
    table_.struct_size = sizeof(oe_llm_api);
    table_.complete = &FakeLlmService::complete;
    host_.setExtension(kSelfId, this);
    host_.setExtension(OE_EXT_LLM, &table_);
  }
  ~FakeLlmService() {
    host_.setExtension(OE_EXT_LLM, nullptr);
    host_.setExtension(kSelfId, nullptr);
  }
  FakeLlmService(const FakeLlmService&) = delete;
  FakeLlmService& operator=(const FakeLlmService&) = delete;

  // Queues a response JSON ({"text", "tool_calls"?, "usage"?, ...}).
  void answer(const nlohmann::ordered_json& response, bool cancel_call = false) {
    push(ScriptedAnswer{OE_OK, response.dump(), cancel_call});
  }
  // A text answer with usage {in, out}.
  void answerText(const std::string& text, int in = 12, int out = 7) {
    answer({{"text", text},
            {"usage", {{"input_tokens", in}, {"output_tokens", out}}},
            {"stop_reason", "end_turn"},
            {"model", "fake-model"}});
  }
  // An answer that calls tool `name` with `input`, usage {in, out}.
  void answerTool(const std::string& name, const nlohmann::ordered_json& input, int in = 12,
                  int out = 7, bool cancel_call = false) {
    answer({{"text", ""},
            {"tool_calls", nlohmann::ordered_json::array({{{"name", name}, {"input", input}}})},
            {"usage", {{"input_tokens", in}, {"output_tokens", out}}},
            {"stop_reason", "tool_use"},
            {"model", "fake-model"}},
           cancel_call);
  }
  void failWith(oe_status status, const std::string& message) {
    push(ScriptedAnswer{status, message, false});
  }
  // Runs on the plugin's thread at the start of each complete, before the answer is taken.
  void onCall(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    hook_ = std::move(hook);
  }

  // Every request received, parsed, in arrival order.
  [[nodiscard]] std::vector<nlohmann::ordered_json> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  [[nodiscard]] size_t calls() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }

 private:
  static constexpr const char* kSelfId = "oe.test.fake-llm-service";

  void push(ScriptedAnswer answer) {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(answer));
  }

  static oe_status OE_ABI complete(oe_host_ctx* call, oe_str request_json,
                                   oe_host_buf* out_response, oe_host_buf* out_error) {
    auto& self = fakeFromCall<FakeLlmService>(call, kSelfId);
    std::function<void()> hook;
    {
      std::lock_guard lock(self.mutex_);
      hook = self.hook_;
    }
    if (hook) {
      hook();
    }
    ScriptedAnswer next{OE_FAILED_PRECONDITION, "fake oe.llm/1: no scripted answer left", false};
    {
      std::lock_guard lock(self.mutex_);
      self.requests_.push_back(
          nlohmann::ordered_json::parse(std::string_view(request_json.ptr, request_json.len)));
      if (!self.queue_.empty()) {
        next = std::move(self.queue_.front());
        self.queue_.pop_front();
      }
    }
    if (next.cancel_call) {
      reinterpret_cast<FakeContext*>(call)->cancelled = true;  // NOLINT: opaque C handle
    }
    if (next.status == OE_OK) {
      *out_response = self.host_.makeBuffer(std::move(next.body));
    } else {
      *out_error = self.host_.makeBuffer(std::move(next.body));
    }
    return next.status;
  }

  FakeHost& host_;
  oe_llm_api table_{};
  mutable std::mutex mutex_;
  std::deque<ScriptedAnswer> queue_;
  std::vector<nlohmann::ordered_json> requests_;
  std::function<void()> hook_;
};

// oe.prompt/1 over per-call values ({...state_view, ...edge_inputs, ...args} as the test builds
// it). render replaces bare `{{ name }}` placeholders only: the host's full semantics (dotted
// paths, $item) are the host's tests' business.
class FakePromptService {
 public:
  explicit FakePromptService(FakeHost& host) : host_(host) {
    table_.struct_size = sizeof(oe_prompt_api);
    table_.render = &FakePromptService::render;
    table_.values_json = &FakePromptService::valuesJson;
    host_.setExtension(kSelfId, this);
    host_.setExtension(OE_EXT_PROMPT, &table_);
  }
  ~FakePromptService() {
    host_.setExtension(OE_EXT_PROMPT, nullptr);
    host_.setExtension(kSelfId, nullptr);
  }
  FakePromptService(const FakePromptService&) = delete;
  FakePromptService& operator=(const FakePromptService&) = delete;

  void setValues(const FakeContext& ctx, nlohmann::ordered_json values) {
    std::lock_guard lock(mutex_);
    values_[&ctx] = std::move(values);
  }

  static std::string renderText(const std::string& text, const nlohmann::ordered_json& values) {
    static const std::regex kPlaceholder(R"(\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\})");
    std::string out;
    auto last = text.cbegin();
    for (std::sregex_iterator it(text.begin(), text.end(), kPlaceholder), end; it != end; ++it) {
      const std::smatch& m = *it;
      out.append(last, m[0].first);
      auto value = values.find(m[1].str());
      if (value == values.end()) {
        out += m[0].str();
      } else {
        out += value->is_string() ? value->get<std::string>() : value->dump();
      }
      last = m[0].second;
    }
    out.append(last, text.cend());
    return out;
  }

 private:
  static constexpr const char* kSelfId = "oe.test.fake-prompt-service";

  nlohmann::ordered_json valuesOf(oe_host_ctx* call) const {
    std::lock_guard lock(mutex_);
    auto it = values_.find(reinterpret_cast<const FakeContext*>(call));  // NOLINT: C handle
    return it == values_.end() ? nlohmann::ordered_json::object() : it->second;
  }

  static oe_status OE_ABI render(oe_host_ctx* call, oe_str template_text, oe_host_buf* out) {
    auto& self = fakeFromCall<FakePromptService>(call, kSelfId);
    *out = self.host_.makeBuffer(
        renderText(std::string(template_text.ptr, template_text.len), self.valuesOf(call)));
    return OE_OK;
  }
  static oe_status OE_ABI valuesJson(oe_host_ctx* call, uint32_t indent, oe_host_buf* out) {
    auto& self = fakeFromCall<FakePromptService>(call, kSelfId);
    const nlohmann::ordered_json values = self.valuesOf(call);
    *out = self.host_.makeBuffer(values.dump(indent == 0 ? -1 : static_cast<int>(indent)));
    return OE_OK;
  }

  FakeHost& host_;
  oe_prompt_api table_{};
  mutable std::mutex mutex_;
  std::map<const FakeContext*, nlohmann::ordered_json> values_;
};

}  // namespace oe::test
