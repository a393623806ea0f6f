// The native flavour: a shared library exporting oe_tool_invoke_v2 (<oe/kinds/tool.h>), loaded
// once per path for the plugin's life and called in-process on the invoking thread.
#pragma once

#include <oe/host.h>
#include <oe/kinds/tool.h>

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "expected.hpp"
#include "tool_io.hpp"

namespace oe::tool {

class NativeTools {
 public:
  // host: the real host table; the tools get a copy whose `write` fills plugin-owned buffers,
  // so their output is checked and shaped exactly like the other flavours' output.
  explicit NativeTools(const oe_host_api* host);
  ~NativeTools();  // dlclose of every library
  NativeTools(const NativeTools&) = delete;
  NativeTools& operator=(const NativeTools&) = delete;

  // [thread-safe] dlopen(RTLD_NOW | RTLD_LOCAL) of who.path (once) and its entry point.
  Expected<oe_tool_invoke_fn> load(const ToolIdentity& who);

  // Calls the tool with `input`; returns the normalised response JSON.
  // call_ctx: the invocation's call context, handed to the tool (log, is_cancelled, ...).
  Expected<std::string> call(oe_tool_invoke_fn entry, const ToolIdentity& who,
                             oe_host_ctx* call_ctx, std::string_view input) const;

 private:
  oe_host_api proxy_{};
  std::mutex mutex_;
  std::unordered_map<std::string, void*> handles_;  // path -> dlopen handle
};

// True when `path` names an ELF shared library by its name (".so", ".so.1", ...) and content.
bool isSharedLibrary(const std::string& path);

}  // namespace oe::tool
