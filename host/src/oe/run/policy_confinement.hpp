// From a node's policy in force (spec/policy.hpp) to what oe-sandbox enforces for each process
// the node starts: absolute paths, the system files every program needs to start, the folders
// that stay read-only inside a writable root, and where oe-sandbox is (docs/policy.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "oe/sandbox/confinement.hpp"
#include "oe/spec/policy.hpp"

namespace oe::run {

// oe-sandbox next to the running executable (a build tree), in ../libexec/oe (an install), or
// where this build put it; nullopt when none of them is an executable file.
[[nodiscard]] std::optional<std::string> sandboxExecutable();

// What every confined program may read whatever fs.read says: the loader, the libraries, the
// interpreters under /usr, and the few files of /etc that name resolution, time zones and TLS
// read. Secrets of /etc (shadow, ssh keys) are not among them.
[[nodiscard]] const std::vector<std::string>& baselineReadPaths();
[[nodiscard]] const std::vector<std::string>& baselineWritePaths();  // /dev/null and kin

// The confinement oe-sandbox takes (`--confinement`): `policy` resolved against
// `experience_dir`. A relative fs.write folder that does not exist yet is created (Landlock can
// only allow what exists). `.git` and `.openexpertise` inside a writable root stay read-only.
// `proxy_socket`: the run's filtering proxy for network.allow (empty otherwise).
[[nodiscard]] sandbox::Confinement confinementFor(const spec::PolicySpec& policy,
                                                  const std::filesystem::path& experience_dir,
                                                  const std::string& proxy_socket);

}  // namespace oe::run
