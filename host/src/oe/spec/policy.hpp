// `policy:` of an experience and of a node (an oe addition, docs/policy.md): what the processes a
// node starts may read, write, reach and use. The model, the rule that a node's policy may only
// narrow the experience's, and the policy in force for a node. Enforced by src/oe/sandbox.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::spec {

// Ordered from the widest to the narrowest: a node may move down this list, never up.
enum class NetworkRule : uint8_t { kFull, kAllow, kLoopback, kNone };

// A section left out imposes nothing (a node inherits the experience's section).
struct PolicySpec {
  std::optional<bool> required;  // enforce: required (true) | best_effort (false)
  std::optional<std::vector<std::string>> fs_read;
  std::optional<std::vector<std::string>> fs_write;
  std::optional<NetworkRule> network;
  std::vector<std::string> allow;  // with NetworkRule::kAllow: "host[:port]" / "*.suffix[:port]"
  std::optional<std::vector<std::string>> env;
  std::map<std::string, int64_t, std::less<>> limits;  // the keys of kPolicyLimits
};

// The limits a policy may set, in the order docs and summaries list them.
inline constexpr const char* kPolicyLimits[] = {"cpu_seconds", "memory_mb", "processes",
                                                "file_size_mb", "open_files"};

// The model of a `policy:` mapping that passed the structure check (wrong types are skipped).
[[nodiscard]] PolicySpec policyFrom(const Json& raw);

// The policy as JSON, in the shape it is written (for events, inspect and the report).
[[nodiscard]] Json policyJson(const PolicySpec& policy);

// The policy in force for a node: the experience's, with what the node's own policy says
// instead. Either may be null; nullopt when neither has a policy (the node runs as it always did).
[[nodiscard]] std::optional<PolicySpec> effectivePolicy(const PolicySpec* experience,
                                                        const PolicySpec* node);

// A way `node` is wider than `experience`: `where` is the key below the node's policy
// ("fs/write/1", "network", "limits/memory_mb") and `message` says what to change.
struct PolicyWidening {
  std::string where;
  std::string message;
};
[[nodiscard]] std::vector<PolicyWidening> widerThan(const PolicySpec& node,
                                                    const PolicySpec& experience,
                                                    const std::filesystem::path& dir);

// A path of fs.read / fs.write made absolute: "$TMP" stays as it is, a relative path is
// relative to the experience folder; the result is lexically normal (no "." or "..").
[[nodiscard]] std::string policyPath(const std::string& written, const std::filesystem::path& dir);

// Why an entry of network.allow is malformed, or "" when it is well formed.
[[nodiscard]] std::string allowEntryProblem(const std::string& entry);
// Whether the allow rule `outer` admits everything `inner` admits.
[[nodiscard]] bool allowCovers(const std::string& outer, const std::string& inner);

}  // namespace oe::spec
