// The user's trust store (docs/trust.md): which plugin libraries that are not built in oe may
// load into a process that runs something, each trusted by path and SHA-256, so a rebuilt or
// replaced library is untrusted again. And the gate a registry asks before it loads one.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/plugins/manifest.hpp"

namespace oe::plugins {

struct TrustRecord {
  std::string path;        // the library's canonical path
  std::string sha256;      // of the library when it was trusted
  std::string plugin_id;   // from its manifest; empty when it had no current one
  std::string trusted_at;  // UTC, RFC 3339
  // Where it runs (`oe trust --isolation`; docs/trust.md, "Process isolation"): "process",
  // "in-process", or empty for the default.
  std::string isolation;
};

// $OE_TRUST_FILE, else $XDG_CONFIG_HOME/oe/trust.json, else $HOME/.config/oe/trust.json;
// nullopt when none of them is set.
[[nodiscard]] std::optional<std::filesystem::path> trustStorePath();

// The records of `file` (a file that does not exist holds none). The error names the file: one
// that is not a trust store is never taken for an empty one, nor overwritten.
[[nodiscard]] Result<std::vector<TrustRecord>> readTrustStore(const std::filesystem::path& file);

// Reads, changes and writes `file` under an exclusive lock (flock on <file>.lock), so that
// concurrent writers each see the other's records; the new file is written beside it and
// renamed over it, so a reader sees the old store or the new one, never half. Creates the
// folder (mode 0700) when it is missing. Returns the records written.
[[nodiscard]] Result<std::vector<TrustRecord>> updateTrustStore(
    const std::filesystem::path& file,
    const std::function<void(std::vector<TrustRecord>&)>& change);

// The record of `library` (canonical path), whatever its hash; null when there is none.
[[nodiscard]] const TrustRecord* findTrust(const std::vector<TrustRecord>& records,
                                           const std::filesystem::path& library);

enum class TrustState { kTrusted, kChanged, kUntrusted };
// What `records` say of `library` (canonical path) as it is now (`sha256`): trusted, trusted
// once but changed since (rebuilt, replaced), or never trusted.
[[nodiscard]] TrustState trustState(const std::vector<TrustRecord>& records,
                                    const std::filesystem::path& library, std::string_view sha256);
// "trusted", "changed since it was trusted", "not trusted".
[[nodiscard]] std::string_view toString(TrustState state);

// A record for now, UTC.
[[nodiscard]] TrustRecord trustRecordNow(const std::filesystem::path& library, std::string sha256,
                                         std::string plugin_id);

// What the registry asks before it loads a library that is not built in, in a process that runs
// plugins (`oe run`, `oe resume`, `oe worker`, `oe evolve`, `oe ultra`): trusted when the store
// holds its canonical path with its current SHA-256. Otherwise `ask` (a terminal's question;
// empty without a terminal) decides once per library and process, and a yes is recorded in the
// store. Thread-safe: `oe worker` loads folders from several threads.
class TrustGate {
 public:
  struct Question {
    const std::filesystem::path& library;
    const std::string& sha256;
    const PluginManifest* manifest;  // its current manifest, null when it has none
    const TrustRecord* previous;     // its record for another hash (rebuilt since), or null
  };
  using Ask = std::function<bool(const Question&)>;

  TrustGate(std::optional<std::filesystem::path> store, Ask ask)
      : store_(std::move(store)), ask_(std::move(ask)) {}

  // OK: load it. The error is one line that starts with the library's path and ends with the
  // `oe trust` command that trusts it.
  [[nodiscard]] Result<void> admit(const std::filesystem::path& library, const std::string& sha256,
                                   const PluginManifest* manifest);

  // The isolation its record asks for ("process", "in-process", or empty), for a library admit()
  // just admitted with these bytes.
  [[nodiscard]] std::string isolationOf(const std::filesystem::path& library,
                                        const std::string& sha256);

  [[nodiscard]] const std::optional<std::filesystem::path>& store() const { return store_; }

 private:
  std::mutex mutex_;
  std::optional<std::filesystem::path> store_;
  Ask ask_;
  std::optional<Result<std::vector<TrustRecord>>> records_;       // read on first use
  std::map<std::pair<std::string, std::string>, bool> answered_;  // (path, sha256) -> yes
};

// "oe trust '<path>'" with the path quoted for a POSIX shell when it needs it.
[[nodiscard]] std::string trustCommand(const std::filesystem::path& library);

}  // namespace oe::plugins
