// Where the ABI fixtures are built, and a dlopen'ed plugin driven directly through the C tables
// with the SDK tests' in-memory host (no oe host code involved).
#pragma once

#include <dlfcn.h>
#include <oe/oe.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "local_fake_host.hpp"

namespace oe::abi_test {

inline std::filesystem::path fixtureDir(std::string_view name) {
  return std::filesystem::path(OE_ABI_FIXTURE_DIR) / name;
}

inline std::filesystem::path fixtureFile(std::string_view dir, std::string_view file) {
  return fixtureDir(dir) / file;
}

inline std::string abiString(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// One plugin library opened with RTLD_LOCAL, as the host opens it.
class DirectPlugin {
 public:
  explicit DirectPlugin(const std::filesystem::path& path)
      : handle_(::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      const char* why = ::dlerror();
      error_ = why != nullptr ? why : "dlopen failed";
    }
  }
  ~DirectPlugin() {
    if (self_ != nullptr) {
      entry_->deinit(self_);
    }
    if (handle_ != nullptr) {
      ::dlclose(handle_);
    }
  }
  DirectPlugin(const DirectPlugin&) = delete;
  DirectPlugin& operator=(const DirectPlugin&) = delete;

  [[nodiscard]] bool loaded() const { return handle_ != nullptr; }
  [[nodiscard]] const std::string& error() const { return error_; }

  // Calls oe_plugin_entry_v1 the way the host does; nullptr if the symbol is missing too.
  const oe_plugin_entry* entry(uint32_t host_abi = OE_ABI_VERSION) {
    void* symbol = handle_ == nullptr ? nullptr : ::dlsym(handle_, OE_PLUGIN_ENTRY_SYMBOL);
    if (symbol == nullptr) {
      return nullptr;
    }
    auto* fn = reinterpret_cast<oe_plugin_entry_fn>(symbol);
    entry_ = fn(host_abi);
    return entry_;
  }

  // init with the in-memory host; the plugin is deinit'ed by the destructor.
  oe_status init(oe_writer& err) {
    return entry_->init(sdk::testing::LocalFakeHost::api(), &ctx_, &self_, &err);
  }
  [[nodiscard]] oe_plugin* self() const { return self_; }
  [[nodiscard]] const oe_node_kind* kind(uint32_t index) const {
    return entry_->node_kind_at(self_, index);
  }
  [[nodiscard]] oe_host_ctx& context() { return ctx_; }

 private:
  void* handle_;
  std::string error_;
  const oe_plugin_entry* entry_ = nullptr;
  oe_plugin* self_ = nullptr;
  oe_host_ctx ctx_;
};

struct CallResult {
  oe_status status = OE_UNKNOWN;
  std::string response;
  std::string error;
};

// create + invoke + destroy of one node of `kind`, as the host would do for one run.
inline CallResult runNode(DirectPlugin& plugin, const oe_node_kind& kind, std::string_view config,
                          std::string_view request) {
  CallResult result;
  oe_writer create_err;
  oe_node* node = nullptr;
  result.status = kind.create(plugin.self(), &kind, oe_str{config.data(), config.size()},
                              &plugin.context(), &node, &create_err);
  if (result.status != OE_OK) {
    result.error = "create: " + create_err.data;
    return result;
  }
  oe_host_ctx call;
  oe_writer response;
  oe_writer error;
  const oe_invocation invocation{sizeof(oe_invocation), 1, oe_str{request.data(), request.size()},
                                 &call, &response, &error};
  result.status = kind.invoke(node, &invocation);
  kind.destroy(node);
  result.response = response.data;
  result.error = error.data;
  return result;
}

}  // namespace oe::abi_test
