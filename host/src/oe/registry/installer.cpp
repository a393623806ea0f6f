// Installing an experience from a git repository (see installer.hpp).
#include "oe/registry/installer.hpp"

#include <stdlib.h>

#include <algorithm>
#include <ctime>
#include <fstream>

#include "oe/common/file.hpp"
#include "oe/vcs/git.hpp"

namespace oe::registry {
namespace {

namespace fs = std::filesystem;

std::string utcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Removes a folder tree, saying nothing: what is left over is named by the caller's message.
void removeTree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

// The clone's folder that becomes the install, or why there is none. The folder moved into
// place must be inside the clone: not `..`, not through a link the repository holds (the move
// would take the user's folder it points at).
std::string checkFolder(const Source& source, const fs::path& clone, const fs::path& from,
                        const std::string& shown) {
  std::error_code ec;
  if (!source.subpath.empty()) {
    const fs::path real = fs::weakly_canonical(from, ec);
    const fs::path root = fs::canonical(clone, ec);
    const std::string inside = real.lexically_relative(root).generic_string();
    if (ec || inside.empty() || inside == "." || inside.starts_with("..") ||
        fs::is_symlink(from, ec) || real != (root / source.subpath).lexically_normal()) {
      return "the subpath " + source.subpath + " leads out of " + shown +
             " (give a folder inside the repository, without `..` or links)";
    }
    if (!fs::is_directory(from, ec)) {
      return "no folder " + source.subpath + " in " + shown + " (check the subpath)";
    }
  }
  if (!fs::is_regular_file(from / "experience.yaml", ec)) {
    return "no experience.yaml in " +
           (source.subpath.empty() ? "the root of " : source.subpath + " of ") + shown +
           (source.subpath.empty() ? " (give the experience's folder: gh:owner/repo/sub/path, "
                                     "or --subpath)"
                                   : "");
  }
  return "";
}

// Clones into `clone` and says which commit it holds; the error is the message.
std::string cloneSource(const std::string& git, const Source& source, const fs::path& clone,
                        const std::string& shown, std::chrono::milliseconds deadline,
                        std::string& commit) {
  // A commit cannot be cloned by name: the whole history, then a checkout.
  const bool commit_ref = looksLikeCommit(source.ref);
  std::vector<std::string> clone_args = {"clone", "--quiet"};
  if (!commit_ref) {
    clone_args.insert(clone_args.end(), {"--depth", "1"});
    if (!source.ref.empty()) {
      clone_args.insert(clone_args.end(), {"--branch", source.ref});
    }
  }
  clone_args.insert(clone_args.end(), {"--", source.url, clone.string()});
  if (auto cloned = vcs::runGit(git, clone_args, "", deadline); !cloned.ok) {
    return "cannot clone " + shown + ": " + cloned.error;
  }
  if (commit_ref) {
    auto checkout =
        vcs::runGit(git, {"checkout", "--quiet", "--detach", source.ref}, clone, deadline);
    if (!checkout.ok) {
      return "cannot check out " + source.ref + " in " + source.url + ": " + checkout.error;
    }
  }
  auto head = vcs::runGit(git, {"rev-parse", "HEAD"}, clone, deadline);
  if (!head.ok) {
    return "cannot read the commit of " + shown + ": " + head.error;
  }
  commit = vcs::firstLineOf(head.out);
  return "";
}

}  // namespace

size_t Validation::errors() const {
  return static_cast<size_t>(
      std::count_if(diagnostics.begin(), diagnostics.end(),
                    [](const Diagnostic& d) { return d.severity == Severity::kError; }));
}

InstallOutcome installExperience(const InstallRequest& request, const Validator& validate) {
  InstallOutcome out;
  const Source& source = request.source;
  const auto git = vcs::findGit();
  if (!git) {
    out.error =
        "`git` is not on PATH; oe install clones with git (install it, e.g. "
        "apt-get install git)";
    return out;
  }
  const fs::path installs = installsDir(request.experience);
  out.target = installs / source.name;
  std::error_code ec;
  if (fs::exists(out.target, ec) && !request.force) {
    out.error = out.target.string() + " is already installed; pass --force to replace it " +
                "(`oe installed` says where it came from)";
    return out;
  }
  fs::create_directories(installs, ec);
  if (ec) {
    out.error = "cannot create " + installs.string() + ": " + ec.message();
    return out;
  }
  // The clone goes next to its destination (one file system: the moves below are renames),
  // under a dot-name `oe installed` skips.
  std::string pattern = (installs / ".clone-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    out.error = "cannot create a temporary folder in " + installs.string();
    return out;
  }
  const fs::path scratch = pattern;
  const fs::path clone = scratch / "repo";
  auto fail = [&](std::string message) {
    removeTree(scratch);
    out.error = std::move(message);
    return out;
  };
  out.shown = source.url + (source.ref.empty() ? "" : " at " + source.ref);
  if (std::string error = cloneSource(*git, source, clone, out.shown, request.deadline, out.commit);
      !error.empty()) {
    return fail(error);
  }
  removeTree(clone / ".git");
  const fs::path from = source.subpath.empty() ? clone : clone / source.subpath;
  if (std::string error = checkFolder(source, clone, from, out.shown); !error.empty()) {
    return fail(error);
  }
  // A previous install waits aside until the new one validates, and comes back if it fails.
  const fs::path previous = scratch / "previous";
  const bool replacing = fs::exists(out.target, ec);
  if (replacing) {
    fs::rename(out.target, previous, ec);
    if (ec) {
      return fail("cannot move the previous install " + out.target.string() +
                  " aside: " + ec.message());
    }
  }
  fs::rename(from, out.target, ec);
  if (ec) {
    const std::string why = ec.message();
    if (replacing) {
      fs::rename(previous, out.target, ec);
    }
    return fail("cannot move the experience to " + out.target.string() + ": " + why);
  }
  Validation validation = validate(out.target);
  out.diagnostics = std::move(validation.diagnostics);
  if (!validation.loaded || hasErrors(out.diagnostics)) {
    removeTree(out.target);
    if (replacing) {
      fs::rename(previous, out.target, ec);
    }
    const size_t errors = Validation{false, out.diagnostics}.errors();
    return fail(source.name + " from " + out.shown + " does not validate (" +
                std::to_string(errors) + (errors == 1 ? " error" : " errors") +
                ", above); nothing was installed" +
                (replacing ? " and the previous install is kept" : ""));
  }
  const Json record = {{"name", source.name},       {"spec", request.spec}, {"source", source.url},
                       {"subpath", source.subpath}, {"ref", source.ref},    {"commit", out.commit},
                       {"installed_at", utcNow()}};
  std::ofstream file(out.target / kInstallRecordFile, std::ios::binary | std::ios::trunc);
  file << record.dump(2) << '\n';
  file.close();
  removeTree(scratch);
  if (!file) {
    out.error = "installed " + out.target.string() + " but cannot write its " +
                std::string(kInstallRecordFile) + "; `oe installed` will not know its source";
  }
  return out;
}

Json listInstalls(const std::filesystem::path& experience, const Validator& validate) {
  const fs::path installs = installsDir(experience);
  std::vector<fs::path> folders;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(installs, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.starts_with('.')) {
      folders.push_back(entry.path());
    }
  }
  std::sort(folders.begin(), folders.end());
  Json list = Json::array();
  for (const fs::path& folder : folders) {
    Json item = {{"name", folder.filename().string()}, {"path", folder.string()}};
    const auto text = readFile(folder / kInstallRecordFile);
    const Json record = text ? Json::parse(*text, nullptr, false) : Json();
    for (const char* key : {"spec", "source", "subpath", "ref", "commit", "installed_at"}) {
      item[key] = record.is_object() && record.contains(key) && record[key].is_string()
                      ? record[key]
                      : Json("");
    }
    const Validation validation = validate(folder);
    item["valid"] = validation.valid();
    item["errors"] = validation.errors();
    list.push_back(std::move(item));
  }
  return list;
}

}  // namespace oe::registry
