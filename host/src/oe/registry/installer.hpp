// `oe install` and `oe installed` without the CLI: an experience cloned with git into
// .openexpertise/experiences/<name>/ next to its destination, checked by a validator before it
// is kept (a previous install waits aside and comes back when the new one is refused), with
// where it came from in its .oe-install.json; and the list of those installs.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "oe/common/diagnostic.hpp"
#include "oe/common/json.hpp"
#include "oe/registry/install.hpp"

namespace oe::registry {

// Written into each install: where it came from.
inline constexpr std::string_view kInstallRecordFile = ".oe-install.json";

// What `oe validate` says of an installed folder.
struct Validation {
  bool loaded = false;  // the yaml loaded into a model (not only a partial one)
  std::vector<Diagnostic> diagnostics;
  [[nodiscard]] bool valid() const { return loaded && !hasErrors(diagnostics); }
  [[nodiscard]] size_t errors() const;
};
// Validates the experience folder it is given (the front end loads the plugins it would run
// with): registry itself knows no plugins.
using Validator = std::function<Validation(const std::filesystem::path& dir)>;

struct InstallRequest {
  std::string spec;                  // as the user gave it, for the record
  Source source;                     // resolveSpec's, with --ref applied
  std::filesystem::path experience;  // the folder whose .openexpertise/experiences/ receives it
  bool force = false;                // replace an existing install of the same name
  std::chrono::milliseconds deadline{300000};  // for each git command
};

struct InstallOutcome {
  std::string error;  // empty: installed; else what went wrong and what to do
  // The validation's findings: the errors of a refused install, the warnings of a kept one.
  std::vector<Diagnostic> diagnostics;
  std::filesystem::path target;  // .openexpertise/experiences/<name>
  std::string shown;             // "<url>[ at <ref>]", as messages name the source
  std::string commit;            // the commit installed
  [[nodiscard]] bool ok() const { return error.empty(); }
};

// Clones `request.source` (a commit ref: the whole history, then a checkout; else a shallow
// clone of the branch or tag), drops its .git/, moves the experience's folder (inside the
// clone: no `..`, no link) into place and validates it there. Refused (nothing installed, a
// previous install kept): no git, an install of that name without `force`, a failed git
// command, no experience.yaml, or a validation with errors.
[[nodiscard]] InstallOutcome installExperience(const InstallRequest& request,
                                               const Validator& validate);

// The installs under `experience`'s .openexpertise/experiences/, by name: [{name, path, spec,
// source, subpath, ref, commit, installed_at (from .oe-install.json, "" when absent), valid,
// errors}].
[[nodiscard]] Json listInstalls(const std::filesystem::path& experience, const Validator& validate);

}  // namespace oe::registry
