// The confinement oe-sandbox applies to one program: which paths it may read and write, its
// network, its environment and its resource limits, as the JSON of `oe-sandbox --confinement`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::sandbox {

// What to do with a rule the kernel cannot enforce: refuse to run (required) or say so on stderr
// and run anyway (best_effort).
enum class Enforce { kRequired, kBestEffort };

enum class NetworkMode { kFull, kNone, kLoopback, kProxy };

// The write entry that stands for a fresh per-attempt temporary directory.
inline constexpr const char* kTmpPlaceholder = "$TMP";

struct FsRules {
  std::vector<std::string> read;       // absolute paths: read files, list dirs, execute
  std::vector<std::string> write;      // absolute paths or "$TMP": every access right
  std::vector<std::string> read_only;  // absolute paths inside a write root that stay read-only
  bool operator==(const FsRules&) const = default;
};

struct NetworkRules {
  NetworkMode mode = NetworkMode::kFull;
  std::string proxy_socket;  // absolute path of the host proxy's Unix socket (mode kProxy)
  bool operator==(const NetworkRules&) const = default;
};

struct EnvRules {
  std::vector<std::string> keep;            // names taken from oe-sandbox's own environment
  std::map<std::string, std::string> set;  // names set to these values
  bool operator==(const EnvRules&) const = default;
};

struct Limits {
  std::optional<std::uint64_t> cpu_seconds;
  std::optional<std::uint64_t> memory_mb;
  std::optional<std::uint64_t> processes;
  std::optional<std::uint64_t> file_size_mb;
  std::optional<std::uint64_t> open_files;
  bool operator==(const Limits&) const = default;
};

struct Confinement {
  Enforce enforce = Enforce::kRequired;
  std::optional<FsRules> fs;    // absent: no filesystem rules
  NetworkRules network;         // absent in JSON: full
  std::optional<EnvRules> env;  // absent: the environment passes unchanged
  Limits limits;
  bool operator==(const Confinement&) const = default;
};

std::string_view networkModeName(NetworkMode mode);

// The JSON form (the keys of docs/policy.md); fromJson(toJson(c)) == c.
Json toJson(const Confinement& confinement);

// Reads a confinement; an error names the field ("confinement.fs.write[1]: ...") and says what
// is accepted. Unknown keys are errors, so a misspelt rule is never silently dropped.
Result<Confinement> fromJson(const Json& json);

}  // namespace oe::sandbox
