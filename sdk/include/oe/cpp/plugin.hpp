// Header-only C++20 glue over the oe C ABI for plugin authors: write a Plugin and Node classes,
// and the trampolines here turn them into the C tables, catching every exception at the border.
#pragma once

#include <oe/cpp/requires_cxx20.hpp>

#if OE_SDK_CXX20

#include <oe/oe.h>
#include <oe/cpp/host_buffer.hpp>
#include <oe/cpp/http.hpp>
#include <oe/cpp/llm.hpp>
#include <oe/cpp/prompt.hpp>

#include <concepts>
#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace oe::sdk {

// Thrown inside plugin code to fail a call with a status; the trampolines turn it into the
// status code and the error writer's text. Any other exception becomes OE_INTERNAL.
class Error : public std::exception {
 public:
  Error(oe_status status, std::string message) : status_(status), message_(std::move(message)) {}
  explicit Error(std::string message) : Error(OE_UNKNOWN, std::move(message)) {}
  [[nodiscard]] oe_status status() const noexcept { return status_; }
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }

 private:
  oe_status status_;
  std::string message_;
};

// The host's services as seen from a plugin (the plugin context given to init) or from a node
// being created (its node context: log lines name the node). Cheap to copy; the plugin's is
// valid until deinit, a node's until the node is destroyed.
class Host {
 public:
  Host() = default;
  Host(const oe_host_api* api, oe_host_ctx* ctx) : api_(api), ctx_(ctx) {}

  [[nodiscard]] const oe_host_api* api() const noexcept { return api_; }
  // The context host calls made outside any invocation go through.
  [[nodiscard]] oe_host_ctx* context() const noexcept { return ctx_; }
  void log(oe_log_level level, std::string_view message) const noexcept {
    if (api_ != nullptr) {
      api_->log(ctx_, level, toStr(message));
    }
  }
  [[nodiscard]] const void* extension(const char* id) const noexcept {
    return api_ == nullptr ? nullptr : api_->get_extension(ctx_, id);
  }

 private:
  const oe_host_api* api_ = nullptr;
  oe_host_ctx* ctx_ = nullptr;
};

// One invocation of a node, as handed to Node::invoke.
class Call {
 public:
  Call(const oe_host_api& api, const oe_invocation& inv) : api_(api), inv_(inv) {}

  [[nodiscard]] std::string_view request() const noexcept { return toView(inv_.request_json); }
  [[nodiscard]] uint32_t attempt() const noexcept { return inv_.attempt; }
  [[nodiscard]] oe_host_ctx* context() const noexcept { return inv_.call; }
  [[nodiscard]] bool cancelled() const noexcept { return api_.is_cancelled(inv_.call); }

  // Appends the response JSON ({"state_delta": ...}); may be called several times to stream.
  void respond(std::string_view json) const {
    if (api_.write(inv_.response, toStr(json)) != OE_OK) {
      throw Error(OE_RESOURCE_EXHAUSTED, "response exceeds the host's size limit");
    }
  }
  void emitEvent(std::string_view type, std::string_view fields_json) const noexcept {
    api_.emit_event(inv_.call, toStr(type), toStr(fields_json));
  }
  void log(oe_log_level level, std::string_view message) const noexcept {
    api_.log(inv_.call, level, toStr(message));
  }
  // The JSON of a field the node declares in `reads`. The host's buffer is released exactly
  // once, also when the copy throws.
  [[nodiscard]] std::string stateGet(std::string_view field) const {
    HostBuffer json(api_, inv_.call);
    const oe_status status = api_.state_get(inv_.call, toStr(field), json.out());
    if (status != OE_OK) {
      throw Error(status, "state_get(" + std::string(field) + ") was refused by the host");
    }
    return json.str();
  }

  // The host's optional services for this call (empty, i.e. false, when the host has none).
  // oe.llm/1: one completion through the run's provider, budget and token accounting.
  [[nodiscard]] Llm llm() const { return findLlm(api_, inv_.call); }
  // oe.prompt/1: {{placeholder}} rendering and the node's merged inputs as JSON.
  [[nodiscard]] Prompt prompt() const { return findPrompt(api_, inv_.call); }
  // oe.http/1: HTTP through the host (no TLS stack in the plugin); cancelled with the call.
  [[nodiscard]] Http http() const { return findHttp(api_, inv_.call); }

 private:
  const oe_host_api& api_;
  const oe_invocation& inv_;
};

// A node instance. invoke runs on a host worker thread; cancel may come from any thread.
class Node {
 public:
  virtual ~Node() = default;
  virtual void invoke(Call& call) = 0;
  virtual void cancel(oe_host_ctx* /*call*/) noexcept {}
};

// Describes one node kind of a plugin class P; its create function builds the node from its
// config JSON ({"node": spec, "experience_dir": dir}), and may also take the node's context
// (a Host whose log lines name the node):
//   {"kind", "description", spec_schema_json_or_nullptr, flags, &create}
// with create either of
//   std::unique_ptr<Node> create(P& plugin, std::string_view config_json);
//   std::unique_ptr<Node> create(P& plugin, std::string_view config_json, Host node);
template <class P>
struct KindSpec {
  using Create = std::unique_ptr<Node> (*)(P& plugin, std::string_view config_json);
  using CreateWithNode = std::unique_ptr<Node> (*)(P& plugin, std::string_view config_json,
                                                   Host node);

  constexpr KindSpec(const char* kind_name, const char* what, const char* schema_json,
                     uint32_t kind_flags, Create create_fn) noexcept
      : kind(kind_name),
        description(what),
        spec_schema_json(schema_json),
        flags(kind_flags),
        create(create_fn) {}
  constexpr KindSpec(const char* kind_name, const char* what, const char* schema_json,
                     uint32_t kind_flags, CreateWithNode create_fn) noexcept
      : kind(kind_name),
        description(what),
        spec_schema_json(schema_json),
        flags(kind_flags),
        create_with_node(create_fn) {}

  // Builds the node with whichever create function the kind has.
  [[nodiscard]] std::unique_ptr<Node> make(P& plugin, std::string_view config_json,
                                           Host node) const {
    return create_with_node != nullptr ? create_with_node(plugin, config_json, node)
                                       : create(plugin, config_json);
  }

  const char* kind;
  const char* description;
  const char* spec_schema_json;
  uint32_t flags;
  Create create = nullptr;
  CreateWithNode create_with_node = nullptr;
};

namespace detail {

inline void writeError(const oe_host_api* api, oe_writer* err, std::string_view text) noexcept {
  if (api != nullptr && err != nullptr) {
    api->write(err, toStr(text));
  }
}

template <class F>
oe_status guarded(const oe_host_api* api, oe_writer* err, F&& body) noexcept {
  try {
    body();
    return OE_OK;
  } catch (const Error& e) {
    writeError(api, err, e.what());
    return e.status() == OE_OK ? OE_UNKNOWN : e.status();
  } catch (const std::bad_alloc&) {
    writeError(api, err, "out of memory");
    return OE_RESOURCE_EXHAUSTED;
  } catch (const std::exception& e) {
    writeError(api, err, e.what());
    return OE_INTERNAL;
  } catch (...) {
    writeError(api, err, "unknown C++ exception in plugin");
    return OE_INTERNAL;
  }
}

// What lives behind oe_plugin*: the author's plugin object plus the host table.
template <class P>
struct PluginBox {
  const oe_host_api* api;
  std::unique_ptr<P> plugin;
};

// What lives behind oe_node*.
template <class P>
struct NodeBox {
  PluginBox<P>* owner;
  std::unique_ptr<Node> node;
};

}  // namespace detail

// True when P serves plugin-level extensions (oe_plugin_entry.get_extension).
template <class P>
concept HasPluginExtension = requires(P& plugin, const char* id) {
  { P::extension(plugin, id) } -> std::convertible_to<const void*>;
};

// True when P::kinds() is usable in a constant expression, so its size() sizes the kind table.
template <class P>
concept HasConstantKinds = requires {
  typename std::integral_constant<size_t, P::kinds().size()>;
};

// Binds a plugin class P to the C ABI. P must provide:
//   explicit P(oe::sdk::Host host);  // may throw oe::sdk::Error to refuse init
//   static constexpr std::span<const KindSpec<P>> kinds();
//       // over a constexpr array (static storage), defined before OE_SDK_PLUGIN; its size is the
//       // kind count (0 for a plugin that only offers services: `return {};`)
// and optionally, for plugin-level services such as oe.llm-provider/1:
//   static const void* extension(P& plugin, const char* id);  // [any-thread]; NULL = none
template <class P>
struct Binding {
  using Box = detail::PluginBox<P>;
  using NodeBoxT = detail::NodeBox<P>;

  static oe_status OE_ABI init(const oe_host_api* host, oe_host_ctx* ctx, oe_plugin** out,
                               oe_writer* err) noexcept {
    return detail::guarded(host, err, [&] {
      auto box = std::make_unique<Box>(Box{host, std::make_unique<P>(Host(host, ctx))});
      *out = reinterpret_cast<oe_plugin*>(box.release());
    });
  }
  static void OE_ABI deinit(oe_plugin* self) noexcept {
    delete reinterpret_cast<Box*>(self);  // NOLINT(cppcoreguidelines-owning-memory): C handle
  }
  static uint32_t OE_ABI kindCount(const oe_plugin* /*self*/) noexcept {
    return static_cast<uint32_t>(kindTotal());
  }
  static const oe_node_kind* OE_ABI kindAt(const oe_plugin* /*self*/, uint32_t index) noexcept;
  static const void* OE_ABI pluginExtension(const oe_plugin* self, const char* id) noexcept {
    if constexpr (HasPluginExtension<P>) {
      if (self == nullptr || id == nullptr) {
        return nullptr;
      }
      try {
        return P::extension(*reinterpret_cast<const Box*>(self)->plugin, id);
      } catch (...) {
        return nullptr;  // an exception must not cross the ABI; "not offered" is the safe answer
      }
    } else {
      return nullptr;
    }
  }
  // The plugin object behind `self`: extension tables get the oe_plugin* back from the host
  // (e.g. oe_llm_provider.complete) and use this to reach their P.
  static P& pluginOf(oe_plugin* self) noexcept { return *reinterpret_cast<Box*>(self)->plugin; }
  // Runs `body` the way the trampolines do: exceptions become a status plus the err text.
  template <class F>
  static oe_status guard(oe_plugin* self, oe_writer* err, F&& body) noexcept {
    return detail::guarded(reinterpret_cast<Box*>(self)->api, err, std::forward<F>(body));
  }

  // The kind is known from I (one trampoline per kind), so the kind pointer is not needed.
  template <size_t I>
  static oe_status OE_ABI create(oe_plugin* self, const oe_node_kind* /*kind*/, oe_str config,
                                 oe_host_ctx* node_ctx, oe_node** out, oe_writer* err) noexcept {
    auto* box = reinterpret_cast<Box*>(self);
    return detail::guarded(box->api, err, [&] {
      std::unique_ptr<Node> node =
          P::kinds()[I].make(*box->plugin, toView(config), Host(box->api, node_ctx));
      if (!node) {
        throw Error(OE_INTERNAL, "plugin returned no node");
      }
      auto holder = std::make_unique<NodeBoxT>(NodeBoxT{box, std::move(node)});
      *out = reinterpret_cast<oe_node*>(holder.release());
    });
  }
  static void OE_ABI destroy(oe_node* node) noexcept {
    delete reinterpret_cast<NodeBoxT*>(node);  // NOLINT(cppcoreguidelines-owning-memory)
  }
  static oe_status OE_ABI invoke(oe_node* node, const oe_invocation* inv) noexcept {
    auto* holder = reinterpret_cast<NodeBoxT*>(node);
    const oe_host_api* api = holder->owner->api;
    return detail::guarded(api, inv->error, [&] {
      Call call(*api, *inv);
      holder->node->invoke(call);
    });
  }
  static void OE_ABI cancel(oe_node* node, oe_host_ctx* call) noexcept {
    reinterpret_cast<NodeBoxT*>(node)->node->cancel(call);
  }
  template <size_t... I>
  static const oe_node_kind* table(uint32_t index, std::index_sequence<I...> /*unused*/) noexcept {
    static const oe_node_kind kTable[] = {oe_node_kind{
        sizeof(oe_node_kind), P::kinds()[I].flags, P::kinds()[I].kind, P::kinds()[I].description,
        P::kinds()[I].spec_schema_json, &create<I>, &destroy, &invoke, &cancel}...};
    return index < sizeof...(I) ? &kTable[index] : nullptr;
  }

  // The kind count, derived from P::kinds() at compile time.
  static constexpr size_t kindTotal() noexcept {
    static_assert(HasConstantKinds<P>,
                  "oe::sdk::Binding<P>: declare `static constexpr std::span<const KindSpec<P>> "
                  "kinds();` returning a constexpr array, and define it before OE_SDK_PLUGIN");
    return P::kinds().size();
  }

  static const oe_plugin_entry* entry(uint32_t host_abi, const char* id, const char* version,
                                      const char* description) noexcept {
    // 0.x: exact major.minor match (docs/abi.md); the host refuses us anyway otherwise, but
    // returning NULL lets an older host report "plugin refused this host" clearly.
    if (OE_ABI_VERSION_GET_MAJOR(host_abi) != OE_ABI_VERSION_MAJOR) {
      return nullptr;
    }
    static const oe_plugin_entry kEntry{sizeof(oe_plugin_entry),
                                        OE_ABI_VERSION,
                                        OE_ABI_VERSION,
                                        0,
                                        id,
                                        version,
                                        description,
                                        &init,
                                        &deinit,
                                        &kindCount,
                                        &kindAt,
                                        &pluginExtension};
    return &kEntry;
  }
};

template <class P>
const oe_node_kind* OE_ABI Binding<P>::kindAt(const oe_plugin* /*self*/, uint32_t index) noexcept {
  constexpr size_t kCount = kindTotal();
  if constexpr (kCount == 0) {
    (void)index;  // a service-only plugin: a zero-length C array would be ill-formed
    return nullptr;
  } else {
    return table(index, std::make_index_sequence<kCount>{});
  }
}

}  // namespace oe::sdk

// Defines the plugin's entry symbol for plugin class P (one per library).
#define OE_SDK_PLUGIN(P, ID, VERSION, DESCRIPTION)                                      \
  OE_DECLARE_PLUGIN_ENTRY {                                                              \
    return ::oe::sdk::Binding<P>::entry(host_abi_version, ID, VERSION, DESCRIPTION);     \
  }

#endif  // OE_SDK_CXX20
