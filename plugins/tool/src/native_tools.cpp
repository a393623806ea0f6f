// Native tools: see native_tools.hpp.
#include "native_tools.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <utility>

namespace oe::tool {
namespace {

constexpr size_t kMaxOutput = size_t{256} << 20U;

// What a native tool's `out`/`err` writers really are. The tool only ever receives writers
// from us, so the proxy's write can rely on this type.
struct ScratchWriter {
  std::string bytes;
};

oe_status OE_ABI scratchWrite(oe_writer* writer, oe_str bytes) {
  if (writer == nullptr || (bytes.ptr == nullptr && bytes.len != 0)) {
    return OE_INVALID_ARGUMENT;
  }
  auto* scratch = reinterpret_cast<ScratchWriter*>(writer);  // NOLINT: opaque C handle
  if (scratch->bytes.size() + bytes.len > kMaxOutput) {
    return OE_RESOURCE_EXHAUSTED;
  }
  scratch->bytes.append(bytes.ptr, bytes.len);
  return OE_OK;
}

oe_writer* asWriter(ScratchWriter& scratch) {
  return reinterpret_cast<oe_writer*>(&scratch);  // NOLINT: opaque C handle
}

bool hasSharedLibraryName(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string_view name =
      std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  if (name.ends_with(".so")) {
    return true;
  }
  const size_t so = name.find(".so.");
  if (so == std::string_view::npos) {
    return false;
  }
  const std::string_view suffix = name.substr(so + 4);
  return !suffix.empty() && std::all_of(suffix.begin(), suffix.end(),
                                        [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

}  // namespace

bool isSharedLibrary(const std::string& path) {
  if (!hasSharedLibraryName(path)) {
    return false;
  }
  std::ifstream file(path, std::ios::binary);
  std::array<char, 4> magic{};
  return file.read(magic.data(), magic.size()) && std::memcmp(magic.data(),
                                                              "\x7f"
                                                              "ELF",
                                                              magic.size()) == 0;
}

NativeTools::NativeTools(const oe_host_api* host) {
  if (host != nullptr) {
    std::memcpy(&proxy_, host, std::min<size_t>(host->struct_size, sizeof(proxy_)));
    proxy_.struct_size = std::min<uint32_t>(host->struct_size, sizeof(proxy_));
  } else {
    proxy_.struct_size = sizeof(proxy_);
  }
  proxy_.write = &scratchWrite;
}

NativeTools::~NativeTools() {
  for (auto& [path, handle] : handles_) {
    ::dlclose(handle);
  }
}

Expected<oe_tool_invoke_fn> NativeTools::load(const ToolIdentity& who) {
  std::lock_guard lock(mutex_);
  void* handle = nullptr;
  if (auto it = handles_.find(who.path); it != handles_.end()) {
    handle = it->second;
  } else {
    handle = ::dlopen(who.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* reason = ::dlerror();
      return fail(OE_FAILED_PRECONDITION,
                  "Tool \"" + who.id + "\": " + who.path + " could not be loaded: " +
                      (reason != nullptr ? reason : "unknown dlopen error"));
    }
    handles_.emplace(who.path, handle);
  }
  void* symbol = ::dlsym(handle, OE_TOOL_ENTRY_SYMBOL);
  if (symbol == nullptr && ::dlsym(handle, "oe_tool_invoke_v1") != nullptr) {
    return fail(OE_FAILED_PRECONDITION,
                "Tool \"" + who.id + "\": " + who.path +
                    " was built against plugin ABI 0.1 (it exports oe_tool_invoke_v1, without "
                    "a call context); rebuild it against the SDK installed with this oe");
  }
  if (symbol == nullptr) {
    return fail(OE_FAILED_PRECONDITION,
                "Tool \"" + who.id + "\": " + who.path + " does not export " +
                    OE_TOOL_ENTRY_SYMBOL +
                    "; build it with OE_DECLARE_TOOL from <oe/kinds/tool.h>");
  }
  return reinterpret_cast<oe_tool_invoke_fn>(symbol);  // NOLINT: dlsym returns void*
}

Expected<std::string> NativeTools::call(oe_tool_invoke_fn entry, const ToolIdentity& who,
                                        oe_host_ctx* call_ctx, std::string_view input) const {
  ScratchWriter out;
  ScratchWriter err;
  const oe_status status =
      entry(&proxy_, call_ctx, oe_str{input.data(), input.size()}, asWriter(out), asWriter(err));
  if (status != OE_OK) {
    std::string message = "Tool \"" + who.id + "\" (" + who.impl + ") failed";
    message += err.bytes.empty() ? " with status " + std::to_string(status) + " and no message"
                                 : ": " + err.bytes;
    return fail(status, std::move(message));
  }
  auto parsed = parseToolOutput(out.bytes, who, Flavour::kNative);
  if (!parsed) {
    return std::move(parsed).failure();
  }
  return toResponse(std::move(*parsed), who, Flavour::kNative);
}

}  // namespace oe::tool
