// The parsed and validated experience kept next to it, so that a run of an unchanged
// experience.yaml skips the YAML parse (yaml-cpp alone costs 30-45 µs per node) and the checks.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "oe/common/result.hpp"
#include "oe/spec/experience.hpp"
#include "oe/spec/validate.hpp"

namespace oe::spec {

// <experience dir>/.openexpertise/<yaml file name>.spec-snapshot
[[nodiscard]] std::filesystem::path snapshotPath(const std::filesystem::path& yaml_path);

// What validation depended on besides the YAML: the loaded kinds with their schemas, and
// `strict`. A snapshot is used only under the same context.
[[nodiscard]] std::string snapshotContext(const KindCatalog& kinds, bool strict);

// The experience saved by writeSnapshot when the YAML file's text has the digest `yaml_digest`
// (the caller's SHA-256 of it, so that the text itself need not be held while the snapshot
// loads), oe is the same version and `context` is the same; nullopt otherwise, or when the file
// is missing, torn or unreadable (the caller then loads the YAML). The result has no source positions (a snapshot
// is written only for a file without any diagnostic, so there is none to point at) except the
// state fields' (their order is the declaration order).
[[nodiscard]] std::optional<Experience> readSnapshot(const std::filesystem::path& yaml_path,
                                                     std::string_view yaml_digest,
                                                     std::string_view context);

// Saves `experience` (loaded from the YAML text whose digest is `yaml_digest`, validated under
// `context` WITHOUT any diagnostic) atomically: a temporary file renamed over the old snapshot,
// so a reader sees the old one or the new one. Creates .openexpertise/.
Result<void> writeSnapshot(const Experience& experience, std::string_view yaml_digest,
                           std::string_view context);

}  // namespace oe::spec
