// Process isolation of plugins (docs/trust.md, "Process isolation"): a plugin that is not built
// in may run in a helper process, `oe plugin-host`, which loads it with the same loader and
// speaks the same C ABI across a socket. Here is the host's side: it starts the helper and
// presents the plugin as an ordinary PluginLibrary whose kinds forward create, invoke, cancel
// and destroy, serving the plugin's calls back to the host (log, emit_event, state_get,
// oe.llm/1, ...) on the thread that waits for the invoke. A helper that dies fails the calls it
// had ("plugin `<id>` crashed in invoke (SIGSEGV)"); the next call starts a new one.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "oe/common/result.hpp"
#include "oe/plugins/plugin_library.hpp"

namespace oe::plugins {

enum class Isolation {
  kInProcess,  // dlopen'd into oe (the default)
  kProcess,    // in a helper process of its own
};

// "process" or "in-process"; anything else is an error naming both.
[[nodiscard]] Result<Isolation> parseIsolation(std::string_view text, std::string_view where);
// $OE_PLUGIN_ISOLATION (set by `--plugin-isolation` too), for every plugin that is not built in;
// nullopt when unset.
[[nodiscard]] Result<std::optional<Isolation>> isolationFromEnvironment();

// The program that serves as the helper: this process's own executable unless set (a program
// that embeds the runtime and is not `oe`, such as a benchmark, names the `oe` binary).
void setPluginHostExecutable(std::filesystem::path oe_binary);

// Starts a helper for the library at `path` (already admitted by the trust gate, with the
// SHA-256 `sha256` it was admitted with: a helper started again after a crash loads the file
// only while it still has those bytes; empty = not checked), waits for it to load the library,
// and returns the library as the registry keeps it. The error says why the helper could not
// load it (the loader's own words) or could not start.
[[nodiscard]] Result<std::shared_ptr<PluginLibrary>> openIsolated(const std::filesystem::path& path,
                                                                  LogSink* log_sink,
                                                                  std::string sha256);

// `oe plugin-host --fd N LIBRARY`: the helper's side, until the host closes the socket.
int runPluginHost(int fd, const std::filesystem::path& library);

}  // namespace oe::plugins
