// A fake host for plugin tests: an oe_host_api whose writers are std::strings, which records
// emitted events and log lines, serves state_get from a JSON object, lets a test raise
// is_cancelled and serves the extensions a test registers (e.g. oe.http/1); plus LoadedPlugin,
// which loads a BUILT plugin through the real ABI (dlopen + oe_plugin_entry_v1 + init) so tests
// exercise exactly what the host will.
#pragma once

#include <dlfcn.h>
#include <oe/oe.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/common/host_buffer.hpp"

namespace oe::test {

class FakeHost;

// Appended to by the plugin through oe_host_api.write.
struct FakeWriter {
  std::string bytes;
  size_t limit = std::numeric_limits<size_t>::max();
};

// A plugin, node or call context. The plugin context has an empty node_id.
struct FakeContext {
  FakeHost* host = nullptr;
  std::string node_id;
  std::atomic<bool> cancelled{false};
  nlohmann::json state = nlohmann::json::object();  // what state_get serves
  std::vector<std::string> reads;                   // fields state_get allows; empty: all
};

struct RecordedEvent {
  std::string node_id;
  std::string type;
  nlohmann::json fields;
};

struct RecordedLog {
  std::string node_id;
  oe_log_level level;
  std::string message;
};

class FakeHost {
 public:
  FakeHost() {
    api_.struct_size = sizeof(oe_host_api);
    api_.abi_version = OE_ABI_VERSION;
    api_.log = &FakeHost::log;
    api_.write = &FakeHost::write;
    api_.release = &FakeHost::release;
    api_.emit_event = &FakeHost::emitEvent;
    api_.state_get = &FakeHost::stateGet;
    api_.is_cancelled = &FakeHost::isCancelled;
    api_.get_extension = &FakeHost::getExtension;
    plugin_context_.host = this;
  }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  [[nodiscard]] const oe_host_api* api() const noexcept { return &api_; }
  [[nodiscard]] oe_host_ctx* pluginContext() noexcept { return context(plugin_context_); }

  // A context for one node or one call, owned by the test.
  std::unique_ptr<FakeContext> makeContext(std::string node_id) {
    auto ctx = std::make_unique<FakeContext>();
    ctx->host = this;
    ctx->node_id = std::move(node_id);
    return ctx;
  }

  static oe_host_ctx* context(FakeContext& ctx) noexcept {
    return reinterpret_cast<oe_host_ctx*>(&ctx);  // NOLINT: opaque C handle
  }
  static oe_writer* writer(FakeWriter& w) noexcept {
    return reinterpret_cast<oe_writer*>(&w);  // NOLINT: opaque C handle
  }

  [[nodiscard]] std::vector<RecordedEvent> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  [[nodiscard]] std::vector<RecordedLog> logs() const {
    std::lock_guard lock(mutex_);
    return logs_;
  }
  // Makes get_extension(ctx, id) return `table` for every context of this host (nullptr removes
  // it). Register before the plugin looks it up.
  void setExtension(const std::string& id, const void* table) {
    std::lock_guard lock(mutex_);
    if (table == nullptr) {
      extensions_.erase(id);
    } else {
      extensions_[id] = table;
    }
  }

  // state_get buffers handed out and not yet released.
  [[nodiscard]] int outstandingBuffers() const noexcept { return outstanding_.load(); }

  // A host-owned buffer holding `text`, as a fake host service hands one out (released through
  // api()->release and counted in outstandingBuffers() until then).
  oe_host_buf makeBuffer(std::string text) {
    oe_host_buf buf{};
    oe::giveBuffer(std::move(text), &buf);  // the host's own kind: the real services' buffers
    outstanding_.fetch_add(1);             // (oe.http/1 in these tests) are freed alike
    return buf;
  }

 private:
  static FakeContext& ctxOf(oe_host_ctx* ctx) {
    return *reinterpret_cast<FakeContext*>(ctx);  // NOLINT: opaque C handle
  }
  static std::string_view view(oe_str s) {
    return s.ptr == nullptr ? std::string_view{} : std::string_view(s.ptr, s.len);
  }

  static void OE_ABI log(oe_host_ctx* ctx, oe_log_level level, oe_str message) {
    if (ctx == nullptr) {
      return;
    }
    FakeContext& c = ctxOf(ctx);
    std::lock_guard lock(c.host->mutex_);
    c.host->logs_.push_back(RecordedLog{c.node_id, level, std::string(view(message))});
  }
  static oe_status OE_ABI write(oe_writer* writer, oe_str bytes) {
    auto* w = reinterpret_cast<FakeWriter*>(writer);  // NOLINT: opaque C handle
    if (w->bytes.size() + bytes.len > w->limit) {
      return OE_RESOURCE_EXHAUSTED;
    }
    w->bytes.append(view(bytes));
    return OE_OK;
  }
  static void OE_ABI release(oe_host_ctx* ctx, oe_host_buf* buf) {
    if (buf == nullptr || buf->opaque == nullptr) {
      return;
    }
    oe::releaseBuffer(buf);
    if (ctx != nullptr) {
      ctxOf(ctx).host->outstanding_.fetch_sub(1);
    }
  }
  static oe_status OE_ABI emitEvent(oe_host_ctx* call, oe_str type, oe_str fields_json) {
    FakeContext& c = ctxOf(call);
    auto fields = nlohmann::json::parse(view(fields_json), nullptr, false);
    if (fields.is_discarded() || !fields.is_object()) {
      return OE_INVALID_ARGUMENT;
    }
    std::lock_guard lock(c.host->mutex_);
    c.host->events_.push_back(RecordedEvent{c.node_id, std::string(view(type)), fields});
    return OE_OK;
  }
  static oe_status OE_ABI stateGet(oe_host_ctx* call, oe_str field, oe_host_buf* out_json) {
    FakeContext& c = ctxOf(call);
    const std::string name(view(field));
    if (!c.reads.empty() && std::find(c.reads.begin(), c.reads.end(), name) == c.reads.end()) {
      return OE_PERMISSION_DENIED;
    }
    auto it = c.state.find(name);
    if (it == c.state.end()) {
      return OE_NOT_FOUND;
    }
    oe::giveBuffer(it->dump(), out_json);
    c.host->outstanding_.fetch_add(1);
    return OE_OK;
  }
  static bool OE_ABI isCancelled(oe_host_ctx* call) {
    return call != nullptr && ctxOf(call).cancelled.load();
  }
  static const void* OE_ABI getExtension(oe_host_ctx* ctx, const char* id) {
    if (ctx == nullptr || id == nullptr) {
      return nullptr;
    }
    FakeHost& host = *ctxOf(ctx).host;
    std::lock_guard lock(host.mutex_);
    auto it = host.extensions_.find(id);
    return it == host.extensions_.end() ? nullptr : it->second;
  }

  oe_host_api api_{};
  FakeContext plugin_context_;
  mutable std::mutex mutex_;
  std::vector<RecordedEvent> events_;
  std::vector<RecordedLog> logs_;
  std::map<std::string, const void*, std::less<>> extensions_;
  std::atomic<int> outstanding_{0};
};

struct CallResult {
  oe_status status = OE_UNKNOWN;
  std::string response;
  std::string error;
};

struct CreateResult {
  oe_status status = OE_UNKNOWN;
  oe_node* node = nullptr;
  std::string error;
};

// A plugin library loaded and initialised through the real ABI; deinit + dlclose on destruction.
class LoadedPlugin {
 public:
  LoadedPlugin(const std::string& path, FakeHost& host) {
    handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      throw std::runtime_error("dlopen " + path + ": " + ::dlerror());
    }
    auto entry_fn = reinterpret_cast<oe_plugin_entry_fn>(  // NOLINT: dlsym returns void*
        ::dlsym(handle_, OE_PLUGIN_ENTRY_SYMBOL));
    if (entry_fn == nullptr) {
      throw std::runtime_error(path + " does not export " OE_PLUGIN_ENTRY_SYMBOL);
    }
    entry_ = entry_fn(OE_ABI_VERSION);
    if (entry_ == nullptr) {
      throw std::runtime_error(path + " refused host ABI");
    }
    FakeWriter err;
    if (entry_->init(host.api(), host.pluginContext(), &self_, FakeHost::writer(err)) != OE_OK) {
      throw std::runtime_error("init of " + path + " failed: " + err.bytes);
    }
  }
  ~LoadedPlugin() {
    if (entry_ != nullptr) {
      entry_->deinit(self_);
    }
    if (handle_ != nullptr) {
      ::dlclose(handle_);
    }
  }
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  [[nodiscard]] const oe_plugin_entry& entry() const { return *entry_; }
  [[nodiscard]] oe_plugin* self() const { return self_; }

  // The kind named `name`, or nullptr.
  [[nodiscard]] const oe_node_kind* kind(std::string_view name) const {
    const uint32_t count = entry_->node_kind_count(self_);
    for (uint32_t i = 0; i < count; ++i) {
      const oe_node_kind* k = entry_->node_kind_at(self_, i);
      if (k != nullptr && name == k->kind) {
        return k;
      }
    }
    return nullptr;
  }

  CreateResult create(const oe_node_kind& kind, std::string_view config_json,
                      FakeContext* node_ctx = nullptr) const {
    CreateResult result;
    FakeWriter err;
    result.status = kind.create(self_, &kind, oe_str{config_json.data(), config_json.size()},
                                node_ctx == nullptr ? nullptr : FakeHost::context(*node_ctx),
                                &result.node, FakeHost::writer(err));
    result.error = std::move(err.bytes);
    return result;
  }

  static CallResult invoke(const oe_node_kind& kind, oe_node* node, std::string_view request_json,
                           FakeContext& call_ctx, uint32_t attempt = 1) {
    FakeWriter response;
    FakeWriter error;
    oe_invocation inv{};
    inv.struct_size = sizeof(oe_invocation);
    inv.attempt = attempt;
    inv.request_json = oe_str{request_json.data(), request_json.size()};
    inv.call = FakeHost::context(call_ctx);
    inv.response = FakeHost::writer(response);
    inv.error = FakeHost::writer(error);
    CallResult result;
    result.status = kind.invoke(node, &inv);
    result.response = std::move(response.bytes);
    result.error = std::move(error.bytes);
    return result;
  }

 private:
  void* handle_ = nullptr;
  const oe_plugin_entry* entry_ = nullptr;
  oe_plugin* self_ = nullptr;
};

}  // namespace oe::test
