// One loaded plugin library: the only place that touches Boost.DLL. Loading checks the ABI
// before anything else runs, and every object created by the plugin pins the library.
#pragma once

#include <oe/ext/llm.h>
#include <oe/oe.h>

#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/plugins/host_context.hpp"

namespace oe::plugins {

// A node kind as the host uses it: `table` is the host's copy of the plugin's descriptor, read
// up to the plugin's struct_size with the members it lacks set to NULL (so every later read is
// plain); `descriptor` is the plugin's own pointer, handed back to create.
struct KindTable {
  oe_node_kind table{};
  const oe_node_kind* descriptor = nullptr;
};

// One loaded plugin library, initialised once for the whole process: every open() of the same
// library (the same file, however it is named) while an earlier one is alive returns that one,
// so init runs once however many registries load it (`oe mcp`'s tool calls, `oe worker`'s
// experience folders), and deinit runs when the last holder lets go. init and deinit of every
// library are serialised; a library's init runs again only after its deinit (docs/abi.md,
// "init and deinit").
class PluginLibrary {
 public:
  // Loads, negotiates the ABI and calls init, or returns the library already loaded; either way
  // `log_sink` receives the plugin's own log lines until detachSink. The error says which file
  // and why, in words a user can act on ("built for plugin ABI 9.0, this oe speaks 0.1: ...").
  static Result<std::shared_ptr<PluginLibrary>> open(const std::filesystem::path& path,
                                                      LogSink* log_sink);

  // What serves a library whose code runs in a helper process (plugin_isolation.hpp); the
  // library owns it, so it outlives every node made through the library's kinds.
  class Server {
   public:
    virtual ~Server() = default;
  };
  // The descriptor's strings and versions, as the helper read them.
  struct Described {
    std::string id;
    std::string version;
    std::string description;
    uint32_t abi_version = 0;
    uint32_t min_host_abi = 0;
  };
  // A library loaded in a helper process (docs/trust.md, "Process isolation"): nothing of it is
  // loaded here. `kinds` are the host's tables, whose functions forward to `server`; their
  // strings, and `static_id`, live as long as the process (labels of contexts point at them).
  // Its one plugin-level extension here is the oe.llm-provider/1 table setIsolatedProvider gives.
  static std::shared_ptr<PluginLibrary> isolated(std::filesystem::path path, LogSink* log_sink,
                                                 const Described& described,
                                                 std::deque<KindTable> kinds,
                                                 std::unique_ptr<Server> server,
                                                 const char* static_id);
  [[nodiscard]] bool isIsolated() const { return server_ != nullptr; }
  // An isolated library's oe.llm-provider/1 table (whose complete forwards to its helper) and
  // the `self` it is called with: what extension() and self() answer for it.
  void setIsolatedProvider(const oe_llm_provider* table, oe_plugin* self) {
    isolated_provider_ = table;
    self_ = self;
  }
  // The plugin context's handle (what init was given): where an isolated library's
  // plugin-level log lines are written.
  [[nodiscard]] oe_host_ctx* contextHandle() const {
    return context_ ? context_->handle() : nullptr;
  }
  // What open() attached, once the one who gave it no longer needs the library's lines.
  void detachSink(LogSink* log_sink);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] const std::string& id() const { return id_; }
  // The plugin's own id string (static in the plugin, which is never unloaded), for labels that
  // must outlive this object.
  [[nodiscard]] const char* staticId() const { return entry_copy_.plugin_id; }
  [[nodiscard]] const std::string& version() const { return version_; }
  [[nodiscard]] const std::string& description() const { return description_; }
  [[nodiscard]] uint32_t abiVersion() const { return entry_copy_.abi_version; }
  [[nodiscard]] uint32_t minHostAbi() const { return entry_copy_.min_host_abi; }
  // SHA-256 of the library file, read once, on first use: part of the cache key of its kinds'
  // nodes (docs/durability.md), so a rebuilt plugin does not replay its old results. Any thread.
  [[nodiscard]] const std::string& fileSha256() const;
  // The digest the loader computed before it loaded the file (the trust check), so it is not
  // read twice; ignored once fileSha256() has answered.
  void seedFileSha256(std::string digest) const;
  [[nodiscard]] const std::deque<KindTable>& kinds() const { return kinds_; }
  [[nodiscard]] oe_plugin* self() const { return self_; }
  // The plugin-level service `id` (entry->get_extension), e.g. oe.llm-provider/1; NULL if none.
  [[nodiscard]] const void* extension(const char* id) const;
  // Its oe.llm-provider/1 table when it offers one that is complete (struct_size and the
  // provider list), else NULL; and the names it lists.
  [[nodiscard]] const oe_llm_provider* llmProvider() const;
  [[nodiscard]] std::vector<std::string> llmProviders() const;

  // A run gave up a call of `kind` (one of this library's) still running on `instance`, after
  // its timeout and grace: the instance is the library's now. It is destroyed when the library
  // is let go, if its calls have returned by then (abandonedReturned); while one still runs,
  // neither it nor deinit is called (that call is still in the library).
  void adoptAbandoned(const oe_node_kind* kind, oe_node* instance);
  // From the abandoned call's own thread, when its invoke returned at last.
  void abandonedReturned(oe_node* instance);

 private:
  struct Impl;
  PluginLibrary();

  std::unique_ptr<Impl> impl_;  // holds the OS handle; destroyed last (after deinit)
  std::filesystem::path path_;
  oe_plugin* self_ = nullptr;
  bool initialised_ = false;
  std::unique_ptr<PluginContext> context_;
  std::string id_;
  std::string version_;
  std::string description_;
  std::deque<KindTable> kinds_;  // stable addresses: LoadedKind points into it
  oe_plugin_entry entry_copy_{};
  mutable std::once_flag sha256_once_;
  mutable std::string sha256_;
  void* loaded_key_ = nullptr;  // the dlopen handle it is shared under; null until it loaded
  struct Abandoned {
    const oe_node_kind* kind;
    oe_node* instance;
    int running;  // its abandoned calls still in invoke
  };
  std::mutex abandoned_mutex_;
  std::vector<Abandoned> abandoned_;
  std::unique_ptr<Server> server_;  // an isolated library's helper; destroyed first
  const oe_llm_provider* isolated_provider_ = nullptr;  // owned by server_
};

[[nodiscard]] std::string abiVersionString(uint32_t version);
// Why a plugin built for `plugin_abi` that needs a host of at least `min_host_abi` cannot run in
// this host (docs/abi.md, "Loading and negotiation", step 2), or nullopt when it can. The words
// of a refusal, without the file: loading and manifests say the same.
[[nodiscard]] std::optional<std::string> abiRefusal(uint32_t plugin_abi, uint32_t min_host_abi);

}  // namespace oe::plugins
