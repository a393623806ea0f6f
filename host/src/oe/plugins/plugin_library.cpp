// Loading and ABI negotiation of plugin libraries (docs/abi.md has the rules in prose).
#include "oe/plugins/plugin_library.hpp"

#include <dlfcn.h>

#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <system_error>

#include "oe/cache/cache_store.hpp"
#include "oe/plugins/kind_schema.hpp"

namespace oe::plugins {
namespace {
constexpr uint32_t kKnownKindFlags = OE_NODE_KIND_REENTRANT | OE_NODE_KIND_NOT_CACHEABLE;

// The libraries loaded in this process, by dlopen handle: process-wide because the dynamic loader
// is (a library's globals exist once, whoever loads it), so its init must too. The mutex also
// serialises every init and deinit; it is recursive because a library refused after its init is
// deinitialised (destroyed) while open() still holds it.
struct LoadedLibraries {
  std::recursive_mutex mutex;
  std::condition_variable_any ended;  // an entry left `by_handle`
  std::map<void*, std::weak_ptr<PluginLibrary>> by_handle;
};

LoadedLibraries& loadedLibraries() {
  static LoadedLibraries loaded;
  return loaded;
}
}  // namespace

struct PluginLibrary::Impl {
  boost::dll::shared_library library;
};

const std::string& PluginLibrary::fileSha256() const {
  std::call_once(sha256_once_, [this] {
    auto digest = cache::fileDigest(path_);
    sha256_ = digest ? std::move(*digest) : std::string("unreadable");
  });
  return sha256_;
}

void PluginLibrary::seedFileSha256(std::string digest) const {
  std::call_once(sha256_once_, [this, &digest] { sha256_ = std::move(digest); });
}

std::string abiVersionString(uint32_t version) {
  return std::to_string(OE_ABI_VERSION_GET_MAJOR(version)) + "." +
         std::to_string(OE_ABI_VERSION_GET_MINOR(version));
}

std::optional<std::string> abiRefusal(uint32_t plugin_abi, uint32_t min_host_abi) {
  const std::string host_abi = abiVersionString(OE_ABI_VERSION);
  if (oe_abi_compatible(OE_ABI_VERSION, plugin_abi, min_host_abi) == 0) {
    return "built for plugin ABI " + abiVersionString(plugin_abi) + ", but this oe speaks " +
           host_abi + "; rebuild the plugin against the SDK installed with this oe";
  }
  // oe_abi_compatible() reads min_host_abi only from 1.0; a 0.x descriptor that asks for a newer
  // host than this one is refused all the same, rather than loaded into a host it says it cannot
  // run on.
  if (min_host_abi > OE_ABI_VERSION) {
    return "needs a host of plugin ABI " + abiVersionString(min_host_abi) +
           " or newer (min_host_abi), but this oe speaks " + host_abi +
           "; upgrade oe, or rebuild the plugin against the SDK installed with this oe";
  }
  return std::nullopt;
}

PluginLibrary::PluginLibrary() : impl_(std::make_unique<Impl>()) {}

PluginLibrary::~PluginLibrary() {
  LoadedLibraries& loaded = loadedLibraries();
  std::lock_guard lock(loaded.mutex);
  int still_running = 0;
  {
    std::lock_guard abandoned_lock(abandoned_mutex_);
    for (const Abandoned& abandoned : abandoned_) {
      if (abandoned.running == 0) {
        abandoned.kind->destroy(abandoned.instance);
      } else {
        still_running += abandoned.running;
      }
    }
  }
  if (still_running > 0) {
    // deinit would free what those calls still use; the library stays mapped, so leaving it
    // initialised is safe.
    std::cerr << "oe: plugin \"" << id_ << "\" (" << path_.string() << "): " << still_running
              << " call(s) given up after their timeout are still running; its deinit is "
                 "skipped\n";
  } else if (initialised_ && entry_copy_.deinit != nullptr) {
    entry_copy_.deinit(self_);
  }
  if (loaded_key_ != nullptr) {
    if (auto it = loaded.by_handle.find(loaded_key_);
        it != loaded.by_handle.end() && it->second.expired()) {
      loaded.by_handle.erase(it);
    }
    loaded.ended.notify_all();
  }
  // Plugins are never unloaded while the process lives: C++ plugins cannot be unloaded anyway
  // (STB_GNU_UNIQUE), and a thread a plugin forgot to join would crash on unmapped code.
  // Boost.DLL's handle is released, but RTLD_NODELETE keeps the code mapped.
}

void PluginLibrary::adoptAbandoned(const oe_node_kind* kind, oe_node* instance) {
  std::lock_guard lock(abandoned_mutex_);
  for (Abandoned& abandoned : abandoned_) {
    if (abandoned.instance == instance) {  // a reentrant kind's instance, given up again
      ++abandoned.running;
      return;
    }
  }
  abandoned_.push_back(Abandoned{kind, instance, 1});
}

void PluginLibrary::abandonedReturned(oe_node* instance) {
  std::lock_guard lock(abandoned_mutex_);
  for (Abandoned& abandoned : abandoned_) {
    if (abandoned.instance == instance && abandoned.running > 0) {
      --abandoned.running;
      return;
    }
  }
}

void PluginLibrary::detachSink(LogSink* log_sink) {
  if (context_) {
    context_->detachSink(log_sink);
  }
}

const void* PluginLibrary::extension(const char* id) const {
  if (server_ != nullptr) {
    return id != nullptr && std::string_view(id) == OE_EXT_LLM_PROVIDER ? isolated_provider_
                                                                         : nullptr;
  }
  if (!initialised_ || entry_copy_.get_extension == nullptr || id == nullptr) {
    return nullptr;
  }
  return entry_copy_.get_extension(self_, id);
}

const oe_llm_provider* PluginLibrary::llmProvider() const {
  const auto* table = static_cast<const oe_llm_provider*>(extension(OE_EXT_LLM_PROVIDER));
  if (table == nullptr || table->struct_size < sizeof(oe_llm_provider) ||
      table->providers == nullptr) {
    return nullptr;
  }
  return table;
}

std::vector<std::string> PluginLibrary::llmProviders() const {
  std::vector<std::string> names;
  if (const oe_llm_provider* table = llmProvider()) {
    for (const char* const* name = table->providers; *name != nullptr; ++name) {
      names.emplace_back(*name);
    }
  }
  return names;
}

std::shared_ptr<PluginLibrary> PluginLibrary::isolated(std::filesystem::path path,
                                                      LogSink* log_sink,
                                                      const Described& described,
                                                      std::deque<KindTable> kinds,
                                                      std::unique_ptr<Server> server,
                                                      const char* static_id) {
  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());  // private constructor
  lib->path_ = std::move(path);
  lib->id_ = described.id;
  lib->version_ = described.version;
  lib->description_ = described.description;
  lib->entry_copy_.plugin_id = static_id;
  lib->entry_copy_.abi_version = described.abi_version;
  lib->entry_copy_.min_host_abi = described.min_host_abi;
  lib->kinds_ = std::move(kinds);
  lib->server_ = std::move(server);
  lib->context_ = std::make_unique<PluginContext>(lib->id_);
  lib->context_->setOwner("the plugin context", static_id, nullptr);
  lib->context_->attachSink(log_sink);
  return lib;
}

Result<std::shared_ptr<PluginLibrary>> PluginLibrary::open(const std::filesystem::path& path,
                                                            LogSink* log_sink) {
  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());  // private constructor
  lib->path_ = path;
  const std::string where = path.string() + ": ";
  boost::dll::fs::error_code ec;
  lib->impl_->library.load(path, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now |
                                     static_cast<boost::dll::load_mode::type>(RTLD_NODELETE),
                           ec);
  if (ec) {
    // Boost.DLL reports every dlopen failure as EBADF ("Bad file descriptor"); dlerror() still
    // holds the loader's reason (not an ELF file, a missing dependency, an undefined symbol).
    const char* reason = ::dlerror();
    std::string detail = reason != nullptr ? reason : ec.message();
    if (const std::string prefix = path.string() + ": "; detail.starts_with(prefix)) {
      detail.erase(0, prefix.size());  // the message names the file already
    }
    return makeError(where + "not a loadable shared library (" + detail +
                     "); remove it from the plugin path or rebuild it with oe_add_plugin()");
  }
  // The same library loaded already (by another registry of this process): share it, once its
  // earlier instance, if it is being let go, has finished its deinit.
  LoadedLibraries& loaded = loadedLibraries();
  std::unique_lock lock(loaded.mutex);
  void* const key = lib->impl_->library.native();
  for (auto it = loaded.by_handle.find(key); it != loaded.by_handle.end();
       it = loaded.by_handle.find(key)) {
    if (std::shared_ptr<PluginLibrary> live = it->second.lock()) {
      live->context_->attachSink(log_sink);
      return live;
    }
    loaded.ended.wait(lock);
  }
  if (!lib->impl_->library.has(OE_PLUGIN_ENTRY_SYMBOL)) {
    return makeError(where + "does not export " OE_PLUGIN_ENTRY_SYMBOL
                             "; it is not an oe plugin (build plugins with oe_add_plugin() from "
                             "the OpenExpertiseSDK CMake package)");
  }
  auto* entry_fn = lib->impl_->library.get<const oe_plugin_entry*(uint32_t)>(OE_PLUGIN_ENTRY_SYMBOL);
  const oe_plugin_entry* entry = entry_fn(OE_ABI_VERSION);
  const std::string host_abi = abiVersionString(OE_ABI_VERSION);
  if (entry == nullptr) {
    return makeError(where + "the plugin refused to load into this host (plugin ABI " + host_abi +
                     "); rebuild it against the SDK installed with this oe");
  }
  // struct_size, abi_version and min_host_abi lead every version of the descriptor.
  if (entry->struct_size < offsetof(oe_plugin_entry, flags)) {
    return makeError(where + "descriptor too small (" + std::to_string(entry->struct_size) +
                     " bytes); the library is corrupt or not built with the oe SDK");
  }
  if (auto refused = abiRefusal(entry->abi_version, entry->min_host_abi)) {
    return makeError(where + *refused);
  }
  // Append-only: read what the plugin's build has, and treat the members it predates as NULL.
  // The required ones (up to node_kind_at) are in every version.
  constexpr size_t kEntryRequired = offsetof(oe_plugin_entry, get_extension);
  if (entry->struct_size < kEntryRequired) {
    return makeError(where + "descriptor too small (" + std::to_string(entry->struct_size) +
                     " bytes; every version has at least " + std::to_string(kEntryRequired) +
                     "); the library is corrupt or not built with the oe SDK");
  }
  std::memcpy(&lib->entry_copy_, entry, std::min<size_t>(entry->struct_size, sizeof(oe_plugin_entry)));
  const oe_plugin_entry& desc = lib->entry_copy_;
  if (desc.flags != 0) {
    return makeError(where + "descriptor flags are " + std::to_string(desc.flags) +
                     ", but this oe defines none (they must be 0); rebuild it against the "
                     "installed SDK");
  }
  if (desc.init == nullptr || desc.node_kind_count == nullptr || desc.node_kind_at == nullptr ||
      desc.plugin_id == nullptr) {
    return makeError(where + "descriptor lacks init/node_kind_count/node_kind_at/plugin_id");
  }
  lib->id_ = desc.plugin_id;
  lib->version_ = desc.plugin_version != nullptr ? desc.plugin_version : "";
  lib->description_ = desc.description != nullptr ? desc.description : "";
  lib->context_ = std::make_unique<PluginContext>(lib->id_);
  lib->context_->setOwner("the plugin context", desc.plugin_id, nullptr);

  oe_writer err;
  const oe_status status = desc.init(hostApi(), lib->context_->handle(), &lib->self_, &err);
  if (status != OE_OK) {
    return makeError(where + "plugin \"" + lib->id_ + "\" init failed (status " +
                     std::to_string(status) + "): " + (err.data.empty() ? "no message" : err.data));
  }
  lib->initialised_ = true;

  constexpr size_t kKindRequired = offsetof(oe_node_kind, cancel);
  const uint32_t count = desc.node_kind_count(lib->self_);
  for (uint32_t i = 0; i < count; ++i) {
    const oe_node_kind* kind = desc.node_kind_at(lib->self_, i);
    const std::string which = "node kind #" + std::to_string(i) +
                              (kind != nullptr && kind->struct_size >= kKindRequired &&
                                       kind->kind != nullptr
                                   ? " (\"" + std::string(kind->kind) + "\")"
                                   : std::string());
    if (kind == nullptr || kind->struct_size < kKindRequired) {
      return makeError(where + which + " is malformed: its descriptor is missing or smaller than "
                       "the members every version has");
    }
    KindTable& copy = lib->kinds_.emplace_back();
    copy.descriptor = kind;
    std::memcpy(&copy.table, kind, std::min<size_t>(kind->struct_size, sizeof(oe_node_kind)));
    if (copy.table.kind == nullptr || copy.table.create == nullptr ||
        copy.table.destroy == nullptr || copy.table.invoke == nullptr) {
      return makeError(where + which + " is malformed: it lacks a name, create, destroy or invoke");
    }
    if ((copy.table.flags & ~kKnownKindFlags) != 0) {
      return makeError(where + which + " sets flags " + std::to_string(copy.table.flags) +
                       " that this oe does not know (known: OE_NODE_KIND_REENTRANT, "
                       "OE_NODE_KIND_NOT_CACHEABLE); rebuild it against the installed SDK");
    }
    // Checked once here, so that nothing which reads the schema later (validation, the editor
    // schema, the cache key's x-oe-* annotations) can be taken down by it.
    if (copy.table.spec_schema_json != nullptr) {
      if (auto schema = checkKindSchema(copy.table.spec_schema_json); !schema) {
        return makeError(where + "plugin \"" + lib->id_ + "\", " + which +
                         ": its spec_schema_json " + schema.error().message +
                         "; fix the schema in the plugin, or remove the plugin from the plugin path");
      }
    }
  }
  lib->context_->attachSink(log_sink);
  lib->loaded_key_ = key;
  loaded.by_handle[key] = lib;
  return lib;
}

}  // namespace oe::plugins
