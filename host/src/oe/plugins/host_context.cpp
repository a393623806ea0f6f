// The C service table: each entry forwards to the virtual methods of the context it is given,
// and never lets a C++ exception reach the plugin.
#include "oe/plugins/host_context.hpp"

#include <oe/ext/draft/cli_replay.h>
#include <oe/ext/draft/limits.h>
#include <oe/ext/draft/subrun.h>
#include <oe/ext/http.h>
#include <oe/ext/llm.h>
#include <oe/ext/prompt.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "oe/common/host_buffer.hpp"
#include "oe/net/http_service.hpp"
#include "oe/plugins/event_budget.hpp"

namespace oe::plugins {

// One context's place in the table. `generation` is odd while a handle is open; a handle carries
// the odd value it was opened with, so any later generation refuses it. `users` counts the host
// functions running with the handle: closing waits until it is 0.
struct ContextSlot {
  std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> users{0};
  std::atomic<oe_host_ctx*> target{nullptr};
  // For the log line of a refusal; static strings, left in place when the handle closes (a
  // freed slot rests a while before it is reused). The previous owner's are kept too.
  struct Owner {
    std::atomic<uint32_t> generation{0};
    std::atomic<const char*> role{nullptr};
    std::atomic<const char*> plugin_id{nullptr};
    std::atomic<const char*> kind{nullptr};

    void set(uint32_t gen, const char* r, const char* p, const char* k) noexcept {
      generation.store(gen, std::memory_order_relaxed);
      role.store(r, std::memory_order_relaxed);
      plugin_id.store(p, std::memory_order_relaxed);
      kind.store(k, std::memory_order_relaxed);
    }
    void copy(const Owner& other) noexcept {
      set(other.generation.load(std::memory_order_relaxed),
          other.role.load(std::memory_order_relaxed),
          other.plugin_id.load(std::memory_order_relaxed),
          other.kind.load(std::memory_order_relaxed));
    }
  };
  Owner owner;
  Owner previous;
};

namespace {

// The handles of every context in the process. Process-wide by nature: a handle crosses into a
// plugin and comes back through a table of plain C functions, which get nothing else to find it
// by. Slots live in chunks that are never freed, so a stale handle always lands on a slot, and a
// lookup needs no lock.
class ContextTable {
 public:
  oe_host_ctx* open(oe_host_ctx& ctx, const char* role, const char* plugin_id, const char* kind) {
    uint32_t index = 0;
    {
      std::lock_guard lock(mutex_);
      // A freed slot rests while kQuarantine others are freed after it: meanwhile it still
      // names the owner of the handle that ended there, for the log line when that handle comes
      // back (it usually does soon, if at all).
      if (free_.size() > kQuarantine) {
        index = free_.front();
        free_.pop_front();
      } else {
        index = next_++;
        if (index % kChunkSize == 0) {
          if (index / kChunkSize >= kMaxChunks) {
            --next_;
            throw std::length_error("more than " + std::to_string(kMaxChunks * kChunkSize) +
                                    " host contexts at once");
          }
          owned_.push_back(std::make_unique<ContextSlot[]>(kChunkSize));
          chunks_[index / kChunkSize].store(owned_.back().get(), std::memory_order_release);
        }
      }
    }
    ContextSlot& slot = *at(index);
    slot.target.store(&ctx, std::memory_order_relaxed);
    const uint32_t generation = slot.generation.load(std::memory_order_relaxed) + 1;  // odd
    slot.previous.copy(slot.owner);
    slot.owner.set(generation, role, plugin_id, kind);
    slot.generation.store(generation, std::memory_order_release);
    return encode(index, generation);
  }

  void label(oe_host_ctx* handle, const char* role, const char* plugin_id,
             const char* kind) noexcept {
    uint32_t index = 0;
    uint32_t generation = 0;
    if (ContextSlot* slot = decode(handle, index, generation)) {
      slot->owner.set(generation, role, plugin_id, kind);
    }
  }

  void close(oe_host_ctx* handle) noexcept {
    uint32_t index = 0;
    uint32_t generation = 0;
    ContextSlot* slot = decode(handle, index, generation);
    if (slot == nullptr) {
      return;
    }
    uint32_t expected = generation;
    if (!slot->generation.compare_exchange_strong(expected, generation + 1)) {
      return;  // closed already
    }
    // A host function that pinned the handle before the generation moved finishes first; one
    // that pins it now sees the new generation and is refused.
    while (slot->users.load() != 0) {
      std::this_thread::yield();
    }
    slot->target.store(nullptr, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    free_.push_back(index);
  }

  ContextPin pin(oe_host_ctx* handle, const char* function) noexcept {
    uint32_t index = 0;
    uint32_t generation = 0;
    ContextSlot* slot = decode(handle, index, generation);
    if (slot != nullptr) {
      slot->users.fetch_add(1);
      if (slot->generation.load() == generation) {
        return ContextPin(slot, slot->target.load(std::memory_order_acquire));
      }
      slot->users.fetch_sub(1, std::memory_order_release);
    }
    refuse(slot, generation, function);
    return ContextPin();
  }

 private:
  // A handle is (generation << 32) | (index + 1): never NULL, and never a valid address (the
  // index sits in the low bits, the generation, odd, above).
  static_assert(sizeof(uintptr_t) == 8, "host context handles need 64-bit pointers");
  static constexpr uint32_t kChunkSize = 1024;
  static constexpr uint32_t kMaxChunks = 16384;  // 16 million contexts alive at once
  static constexpr size_t kQuarantine = 256;

  static oe_host_ctx* encode(uint32_t index, uint32_t generation) {
    return reinterpret_cast<oe_host_ctx*>((uintptr_t{generation} << 32) | (uintptr_t{index} + 1));
  }

  ContextSlot* at(uint32_t index) const noexcept {
    if (index / kChunkSize >= kMaxChunks) {
      return nullptr;
    }
    ContextSlot* chunk = chunks_[index / kChunkSize].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk[index % kChunkSize];
  }

  ContextSlot* decode(oe_host_ctx* handle, uint32_t& index, uint32_t& generation) const noexcept {
    const auto value = reinterpret_cast<uintptr_t>(handle);
    const auto low = static_cast<uint32_t>(value & 0xffffffffu);
    generation = static_cast<uint32_t>(value >> 32);
    if (low == 0 || (generation & 1u) == 0) {
      return nullptr;
    }
    index = low - 1;
    return at(index);
  }

  // The log line of a refused use, at most one a second (a plugin polling is_cancelled with a
  // dead context would otherwise flood stderr), with the count of those it held back.
  void refuse(const ContextSlot* slot, uint32_t generation, const char* function) noexcept {
    try {
      std::string owner;
      // The slot names the handle's owner while it, or the one after it, holds the slot.
      const ContextSlot::Owner* named = nullptr;
      if (slot != nullptr) {
        for (const ContextSlot::Owner* candidate : {&slot->owner, &slot->previous}) {
          if (candidate->generation.load(std::memory_order_relaxed) == generation) {
            named = candidate;
          }
        }
      }
      if (named != nullptr) {
        const char* role = named->role.load(std::memory_order_relaxed);
        const char* plugin_id = named->plugin_id.load(std::memory_order_relaxed);
        const char* kind = named->kind.load(std::memory_order_relaxed);
        owner = std::string(" (") + (role != nullptr ? role : "a context");
        if (kind != nullptr) {
          owner += std::string(" of kind \"") + kind + "\"";
        }
        if (plugin_id != nullptr) {
          owner += std::string(", plugin \"") + plugin_id + "\"";
        }
        owner += ")";
      }
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard lock(report_mutex_);
      if (reported_ && now - last_report_ < std::chrono::seconds(1)) {
        ++held_back_;
        return;
      }
      std::cerr << "oe: plugin misbehaving: " << function
                << " was given a host context that is no longer valid" << owner
                << "; the call is refused. A call context ends when its invoke returns, a node "
                   "context when its node is destroyed, a plugin context at deinit (docs/abi.md, "
                   "\"Host functions\")";
      if (held_back_ > 0) {
        std::cerr << " [" << held_back_ << " more such calls since the last report]";
      }
      std::cerr << '\n';
      reported_ = true;
      last_report_ = now;
      held_back_ = 0;
    } catch (...) {  // reporting must never take the host down
    }
  }

  std::array<std::atomic<ContextSlot*>, kMaxChunks> chunks_{};
  std::mutex mutex_;  // growth and the free list
  std::vector<std::unique_ptr<ContextSlot[]>> owned_;
  std::deque<uint32_t> free_;  // oldest first
  uint32_t next_ = 0;
  std::mutex report_mutex_;
  bool reported_ = false;
  std::chrono::steady_clock::time_point last_report_;
  uint64_t held_back_ = 0;
};

ContextTable& contexts() {
  static ContextTable table;
  return table;
}

}  // namespace

ContextPin::~ContextPin() {
  if (slot_ != nullptr) {
    slot_->users.fetch_sub(1, std::memory_order_release);
  }
}

ContextPin pinContext(oe_host_ctx* handle, const char* function) noexcept {
  if (handle == nullptr) {
    return ContextPin();
  }
  return contexts().pin(handle, function);
}

}  // namespace oe::plugins

oe_host_ctx::oe_host_ctx() {
  handle_.store(oe::plugins::contexts().open(*this, nullptr, nullptr, nullptr),
                std::memory_order_release);
}

oe_host_ctx::~oe_host_ctx() { closeHandle(); }

void oe_host_ctx::renewHandle() {
  closeHandle();
  handle_.store(oe::plugins::contexts().open(*this, role_, plugin_id_, kind_),
                std::memory_order_release);
}

void oe_host_ctx::closeHandle() noexcept {
  if (oe_host_ctx* handle = handle_.exchange(nullptr)) {
    oe::plugins::contexts().close(handle);
  }
}

void oe_host_ctx::setOwner(const char* role, const char* plugin_id, const char* kind) noexcept {
  role_ = role;
  plugin_id_ = plugin_id;
  kind_ = kind;
  oe::plugins::contexts().label(handle(), role, plugin_id, kind);
}

namespace oe::plugins {
namespace {

std::string_view view(oe_str s) noexcept {
  return s.ptr == nullptr ? std::string_view{} : std::string_view{s.ptr, s.len};
}

// Says once per call why the caps refused a write (the log is what they protect, so not once per
// refusal); the count of the rest comes when the call ends (its context's business).
void reportCap(oe_host_ctx& ctx, EventBudget& budget, EventBudget::Verdict verdict,
               const char* function, size_t bytes) {
  if (!budget.firstRefusal()) {
    return;
  }
  const EventBudget::Limits& limits = budget.limits();
  std::string why;
  if (verdict == EventBudget::Verdict::kTooLarge) {
    why = std::string(function) + " refused an event of " + std::to_string(bytes) +
          " bytes: an event carries at most " + std::to_string(limits.max_event_bytes >> 10) +
          " KiB of fields";
  } else {
    why = std::string(function) + " refused a write: a call writes at most " +
          std::to_string(static_cast<long>(limits.burst_events)) + " events and log lines (" +
          std::to_string(static_cast<long>(limits.burst_bytes) >> 10) + " KiB) at once, then " +
          std::to_string(static_cast<long>(limits.events_per_second)) + " (" +
          std::to_string(static_cast<long>(limits.bytes_per_second) >> 10) +
          " KiB) a second on average";
  }
  ctx.log(OE_LOG_WARN, why + " to the run's log (docs/abi.md, \"Caps on what one call "
                       "writes\"); further refusals in this call are counted, not logged");
}

void OE_ABI apiLog(oe_host_ctx* handle, oe_log_level level, oe_str message) {
  ContextPin ctx = pinContext(handle, "log");
  if (!ctx) {
    return;
  }
  try {
    std::string_view text = view(message);
    std::string cut;
    if (EventBudget* budget = ctx->eventBudget()) {
      const size_t max = budget->limits().max_event_bytes;
      if (text.size() > max) {
        cut = std::string(text.substr(0, max)) + " [cut: the line had " +
              std::to_string(text.size()) + " bytes; a log line keeps at most " +
              std::to_string(max >> 10) + " KiB]";
        text = cut;
      }
      const auto verdict = budget->admit(std::min(text.size(), max));
      if (verdict != EventBudget::Verdict::kAdmitted) {
        reportCap(*ctx, *budget, verdict, "log", text.size());
        return;
      }
    }
    ctx->log(level, text);
  } catch (...) {  // logging must never take the host down
  }
}

oe_status OE_ABI apiWrite(oe_writer* writer, oe_str bytes) {
  if (writer == nullptr || (bytes.ptr == nullptr && bytes.len != 0)) {
    return OE_INVALID_ARGUMENT;
  }
  if (writer->data.size() + bytes.len > writer->limit) {
    return OE_RESOURCE_EXHAUSTED;
  }
  try {
    writer->data.append(bytes.ptr, bytes.len);
    return OE_OK;
  } catch (const std::bad_alloc&) {
    return OE_RESOURCE_EXHAUSTED;
  }
}

void OE_ABI apiRelease(oe_host_ctx* /*ctx*/, oe_host_buf* buf) { releaseBuffer(buf); }

oe_status OE_ABI apiEmitEvent(oe_host_ctx* handle, oe_str type, oe_str fields_json) {
  if (handle == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  ContextPin ctx = pinContext(handle, "emit_event");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    if (EventBudget* budget = ctx->eventBudget()) {
      const size_t bytes = type.len + fields_json.len;
      const auto verdict = budget->admit(bytes);
      if (verdict != EventBudget::Verdict::kAdmitted) {
        reportCap(*ctx, *budget, verdict, "emit_event", bytes);
        return OE_RESOURCE_EXHAUSTED;
      }
    }
    return ctx->emitEvent(view(type), view(fields_json));
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI apiStateGet(oe_host_ctx* handle, oe_str field, oe_host_buf* out) {
  if (handle == nullptr || out == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  ContextPin ctx = pinContext(handle, "state_get");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    std::string value;
    const oe_status status = ctx->stateGet(view(field), value);
    if (status != OE_OK) {
      return status;
    }
    giveBuffer(std::move(value), out);
    return OE_OK;
  } catch (...) {
    return OE_INTERNAL;
  }
}

// A context that has ended answers true: whatever used it should stop.
bool OE_ABI apiIsCancelled(oe_host_ctx* handle) {
  if (handle == nullptr) {
    return false;
  }
  ContextPin ctx = pinContext(handle, "is_cancelled");
  return !ctx || ctx->isCancelled();
}

oe_status OE_ABI llmComplete(oe_host_ctx* handle, oe_str request_json, oe_host_buf* out_response,
                             oe_host_buf* out_error) {
  if (out_response != nullptr) {
    *out_response = oe_host_buf{nullptr, 0, nullptr};
  }
  if (out_error != nullptr) {
    *out_error = oe_host_buf{nullptr, 0, nullptr};
  }
  if (handle == nullptr || out_response == nullptr || out_error == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  ContextPin ctx = pinContext(handle, OE_EXT_LLM " complete");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    std::string out;
    const oe_status status = ctx->llmComplete(view(request_json), out);
    giveBuffer(std::move(out), status == OE_OK ? out_response : out_error);
    return status;
  } catch (const std::exception& e) {
    giveBuffer(std::string("oe.llm/1: ") + e.what(), out_error);
    return OE_INTERNAL;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI promptRender(oe_host_ctx* handle, oe_str template_text, oe_host_buf* out_text) {
  if (handle == nullptr || out_text == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  *out_text = oe_host_buf{nullptr, 0, nullptr};
  ContextPin ctx = pinContext(handle, OE_EXT_PROMPT " render");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    std::string out;
    const oe_status status = ctx->renderPrompt(view(template_text), out);
    if (status == OE_OK) {
      giveBuffer(std::move(out), out_text);
    }
    return status;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI promptValues(oe_host_ctx* handle, uint32_t indent, oe_host_buf* out_json) {
  if (handle == nullptr || out_json == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  *out_json = oe_host_buf{nullptr, 0, nullptr};
  ContextPin ctx = pinContext(handle, OE_EXT_PROMPT " values_json");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    std::string out;
    const oe_status status = ctx->promptValues(indent, out);
    if (status == OE_OK) {
      giveBuffer(std::move(out), out_json);
    }
    return status;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI limitsAcquire(oe_host_ctx* handle, oe_str name, oe_host_buf* out_slot) {
  if (out_slot != nullptr) {
    *out_slot = oe_host_buf{nullptr, 0, nullptr};
  }
  if (handle == nullptr || out_slot == nullptr || name.len == 0 || name.ptr == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  ContextPin ctx = pinContext(handle, OE_EXT_LIMITS " acquire");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    return ctx->acquireLimit(view(name), out_slot);
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI cliReplayBegin(oe_host_ctx* handle, oe_str request_json,
                                oe_host_buf* out_recorded, oe_host_buf* out_error) {
  for (oe_host_buf* out : {out_recorded, out_error}) {
    if (out != nullptr) {
      *out = oe_host_buf{nullptr, 0, nullptr};
    }
  }
  if (handle == nullptr || out_recorded == nullptr || out_error == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  ContextPin ctx = pinContext(handle, OE_EXT_CLI_REPLAY " begin");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    std::string out;
    const oe_status status = ctx->cliReplayBegin(view(request_json), out);
    if (status != OE_OK) {
      giveBuffer(std::move(out), out_error);
    } else if (!out.empty()) {
      giveBuffer(std::move(out), out_recorded);
    }
    return status;
  } catch (const std::exception& e) {
    giveBuffer(std::string(OE_EXT_CLI_REPLAY ": ") + e.what(), out_error);
    return OE_INTERNAL;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI cliReplayFinish(oe_host_ctx* handle, oe_str request_json, oe_str outcome_json,
                                 oe_host_buf* out_error) {
  if (out_error != nullptr) {
    *out_error = oe_host_buf{nullptr, 0, nullptr};
  }
  if (handle == nullptr || out_error == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  ContextPin ctx = pinContext(handle, OE_EXT_CLI_REPLAY " finish");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    std::string message;
    const oe_status status = ctx->cliReplayFinish(view(request_json), view(outcome_json), message);
    if (status != OE_OK) {
      giveBuffer(std::move(message), out_error);
    }
    return status;
  } catch (const std::exception& e) {
    giveBuffer(std::string(OE_EXT_CLI_REPLAY ": ") + e.what(), out_error);
    return OE_INTERNAL;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI subrunRun(oe_host_ctx* handle, oe_str request, oe_host_buf* out_result) {
  if (out_result != nullptr) {
    *out_result = oe_host_buf{nullptr, 0, nullptr};
  }
  if (handle == nullptr || out_result == nullptr || request.ptr == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  ContextPin ctx = pinContext(handle, OE_EXT_SUBRUN " run");
  if (!ctx) {
    return OE_FAILED_PRECONDITION;
  }
  try {
    std::string out;
    const oe_status status = ctx->runSubExperience(view(request), out);
    giveBuffer(std::move(out), out_result);
    return status;
  } catch (...) {
    return OE_INTERNAL;
  }
}

constexpr oe_llm_api kLlmApi{sizeof(oe_llm_api), &llmComplete};
constexpr oe_prompt_api kPromptApi{sizeof(oe_prompt_api), &promptRender, &promptValues};
constexpr oe_limits_api kLimitsApi{sizeof(oe_limits_api), &limitsAcquire};
constexpr oe_subrun_api kSubrunApi{sizeof(oe_subrun_api), &subrunRun};
constexpr oe_cli_replay_api kCliReplayApi{sizeof(oe_cli_replay_api), &cliReplayBegin,
                                          &cliReplayFinish};

const void* OE_ABI apiGetExtension(oe_host_ctx* handle, const char* id) {
  if (handle == nullptr || id == nullptr) {
    return nullptr;
  }
  ContextPin ctx = pinContext(handle, "get_extension");
  if (!ctx) {
    return nullptr;
  }
  // Services every context offers; the rest is up to the context.
  if (std::strcmp(id, OE_EXT_HTTP) == 0) {
    return net::httpApi();
  }
  if (std::strcmp(id, OE_EXT_LLM) == 0) {
    return &kLlmApi;
  }
  if (std::strcmp(id, OE_EXT_PROMPT) == 0) {
    return &kPromptApi;
  }
  if (std::strcmp(id, OE_EXT_LIMITS) == 0) {
    return &kLimitsApi;
  }
  if (std::strcmp(id, OE_EXT_SUBRUN) == 0) {
    return &kSubrunApi;
  }
  if (std::strcmp(id, OE_EXT_CLI_REPLAY) == 0) {
    return &kCliReplayApi;
  }
  try {
    return ctx->extension(id);
  } catch (...) {
    return nullptr;
  }
}

constexpr oe_host_api kHostApi{sizeof(oe_host_api), OE_ABI_VERSION,  &apiLog,
                               &apiWrite,           &apiRelease,     &apiEmitEvent,
                               &apiStateGet,        &apiIsCancelled, &apiGetExtension};

}  // namespace

const oe_host_api* hostApi() noexcept { return &kHostApi; }

void initHostServices() {
  net::initNet();
  net::setHostApi(&kHostApi);
}

void PluginContext::log(oe_log_level level, std::string_view message) {
  std::lock_guard lock(sinks_mutex_);  // a sink detaches only between lines
  if (!sinks_.empty()) {
    sinks_.front()->write(level, id_, message);
  }
}

void PluginContext::attachSink(LogSink* sink) {
  if (sink != nullptr) {
    std::lock_guard lock(sinks_mutex_);
    sinks_.push_back(sink);
  }
}

void PluginContext::detachSink(LogSink* sink) {
  std::lock_guard lock(sinks_mutex_);
  if (auto it = std::find(sinks_.begin(), sinks_.end(), sink); it != sinks_.end()) {
    sinks_.erase(it);
  }
}

}  // namespace oe::plugins
