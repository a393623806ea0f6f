// Loading and ABI negotiation of plugin libraries (docs/abi.md has the rules in prose).
#include "oe/plugins/plugin_library.hpp"

#include <dlfcn.h>

#include <boost/dll/shared_library.hpp>

#include <cstddef>
#include <system_error>

namespace oe::plugins {

struct PluginLibrary::Impl {
  boost::dll::shared_library library;
};

std::string abiVersionString(uint32_t version) {
  return std::to_string(OE_ABI_VERSION_GET_MAJOR(version)) + "." +
         std::to_string(OE_ABI_VERSION_GET_MINOR(version));
}

PluginLibrary::PluginLibrary() : impl_(std::make_unique<Impl>()) {}

PluginLibrary::~PluginLibrary() {
  if (initialised_ && entry_->deinit != nullptr) {
    entry_->deinit(self_);
  }
  // Plugins are never unloaded while the process lives: C++ plugins cannot be unloaded anyway
  // (STB_GNU_UNIQUE), and a thread a plugin forgot to join would crash on unmapped code.
  // Boost.DLL's handle is released, but RTLD_NODELETE keeps the code mapped.
}

const void* PluginLibrary::extension(const char* id) const {
  if (!initialised_ || entry_->get_extension == nullptr || id == nullptr) {
    return nullptr;
  }
  return entry_->get_extension(self_, id);
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
  // Read the three leading members first: they are the same in every ABI version.
  if (entry->struct_size < offsetof(oe_plugin_entry, plugin_id)) {
    return makeError(where + "descriptor too small (" + std::to_string(entry->struct_size) +
                     " bytes); the library is corrupt or not built with the oe SDK");
  }
  const uint32_t plugin_abi = entry->abi_version;
  // 0.x is unstable: major and minor must match exactly. From 1.0: same major, and the plugin's
  // min_host_abi must not be newer than this host.
  const bool compatible =
      OE_ABI_VERSION_GET_MAJOR(plugin_abi) == OE_ABI_VERSION_MAJOR &&
      (OE_ABI_VERSION_MAJOR == 0 ? OE_ABI_VERSION_GET_MINOR(plugin_abi) == OE_ABI_VERSION_MINOR
                                 : entry->min_host_abi <= OE_ABI_VERSION);
  if (!compatible) {
    return makeError(where + "built for plugin ABI " + abiVersionString(plugin_abi) +
                     ", but this oe speaks " + host_abi +
                     "; rebuild the plugin against the SDK installed with this oe");
  }
  if (entry->struct_size < sizeof(oe_plugin_entry)) {
    return makeError(where + "descriptor too small (" + std::to_string(entry->struct_size) +
                     " bytes, ABI " + host_abi + " needs " + std::to_string(sizeof(oe_plugin_entry)) +
                     "); rebuild it against the installed SDK");
  }
  if (entry->init == nullptr || entry->node_kind_count == nullptr || entry->node_kind_at == nullptr ||
      entry->plugin_id == nullptr) {
    return makeError(where + "descriptor lacks init/node_kind_count/node_kind_at/plugin_id");
  }
  lib->entry_ = entry;
  lib->id_ = entry->plugin_id;
  lib->version_ = entry->plugin_version != nullptr ? entry->plugin_version : "";
  lib->description_ = entry->description != nullptr ? entry->description : "";
  lib->context_ = std::make_unique<PluginContext>(lib->id_, log_sink);

  oe_writer err;
  const oe_status status = entry->init(hostApi(), lib->context_.get(), &lib->self_, &err);
  if (status != OE_OK) {
    return makeError(where + "plugin \"" + lib->id_ + "\" init failed (status " +
                     std::to_string(status) + "): " + (err.data.empty() ? "no message" : err.data));
  }
  lib->initialised_ = true;

  const uint32_t count = entry->node_kind_count(lib->self_);
  for (uint32_t i = 0; i < count; ++i) {
    const oe_node_kind* kind = entry->node_kind_at(lib->self_, i);
    if (kind == nullptr || kind->struct_size < sizeof(oe_node_kind) || kind->kind == nullptr ||
        kind->create == nullptr || kind->destroy == nullptr || kind->invoke == nullptr) {
      return makeError(where + "node kind #" + std::to_string(i) +
                       " is malformed (missing name/create/destroy/invoke or struct too small)");
    }
    lib->kinds_.push_back(kind);
  }
  return lib;
}

}  // namespace oe::plugins
