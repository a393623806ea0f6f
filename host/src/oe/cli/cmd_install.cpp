// `oe install <spec>` and `oe installed`: an experience cloned with git into
// .openexpertise/experiences/<name>/, validated as `oe validate` would before it is kept, with
// where it came from in its .oe-install.json; and the list of those installs.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/common/file.hpp"
#include "oe/registry/install.hpp"
#include "oe/registry/registry.hpp"
#include "oe/vcs/git.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;
using registry::installsDir;
using registry::looksLikeCommit;
using registry::resolveSpec;
using registry::Source;
using vcs::findGit;
using vcs::firstLineOf;
using vcs::runGit;

// Written into each install: where it came from.
constexpr std::string_view kRecordFile = ".oe-install.json";

std::string utcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// `oe validate`'s check of `dir`, with the plugins it would load, printing nothing.
std::vector<Diagnostic> quietValidation(const fs::path& dir, bool& loaded_ok) {
  StderrLog sink;
  plugins::PluginRegistry registry(&sink);
  const spec::LoadResult loaded = spec::loadExperience(spec::resolveExperiencePath(dir));
  const spec::Experience* model = loaded.experience ? &*loaded.experience
                                  : loaded.partial  ? &*loaded.partial
                                                    : nullptr;
  spec::KindCatalog catalog;
  if (model != nullptr) {
    loadPlugins(registry, model->dir);
    catalog = kindCatalog(registry);
  }
  loaded_ok = loaded.experience.has_value();
  return spec::checkLoaded(loaded, catalog, false);
}

size_t errorCount(const std::vector<Diagnostic>& diagnostics) {
  return static_cast<size_t>(
      std::count_if(diagnostics.begin(), diagnostics.end(),
                    [](const Diagnostic& d) { return d.severity == Severity::kError; }));
}

// Removes a folder tree, saying nothing: what is left over is named by the caller's message.
void removeTree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

}  // namespace

void addInstallCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string spec;
    std::string ref;
    std::string subpath;
    std::string experience = ".";
    bool force = false;
    int64_t timeout_ms = 300000;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "install", "Clone an experience into .openexpertise/experiences/<name>/ and validate it");
  cmd->add_option("spec", a->spec,
                  "A registry name, gh:owner/repo[/sub/path][@ref], a git URL[@ref] or a path "
                  "to a git repository")
      ->required();
  cmd->add_option("--ref", a->ref, "The branch, tag or commit to install (overrides @ref)");
  cmd->add_option("--subpath", a->subpath, "The experience's folder inside the repository");
  cmd->add_option("--experience", a->experience,
                  "The folder whose .openexpertise/experiences/ receives the install")
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "Replace an existing install of the same name");
  cmd->add_option("--timeout-ms", a->timeout_ms, "How long git may take to clone")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}));
  cmd->callback([a, &exit_code] {
    exit_code = kExitFailed;
    std::string error;
    auto source = resolveSpec(a->spec, a->subpath, error);
    if (!source) {
      std::cerr << "oe: " << error << '\n';
      exit_code = kExitUsage;
      return;
    }
    if (!a->ref.empty()) {
      source->ref = a->ref;
    }
    const auto git = findGit();
    if (!git) {
      std::cerr << "oe: `git` is not on PATH; oe install clones with git (install it, e.g. "
                   "apt-get install git)\n";
      return;
    }
    const fs::path installs = installsDir(a->experience);
    const fs::path target = installs / source->name;
    std::error_code ec;
    if (fs::exists(target, ec) && !a->force) {
      std::cerr << "oe: " << target.string() << " is already installed; pass --force to "
                << "replace it (`oe installed` says where it came from)\n";
      return;
    }
    fs::create_directories(installs, ec);
    if (ec) {
      std::cerr << "oe: cannot create " << installs.string() << ": " << ec.message() << '\n';
      return;
    }
    // The clone goes next to its destination (one file system: the moves below are renames),
    // under a dot-name `oe installed` skips.
    std::string pattern = (installs / ".clone-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "oe: cannot create a temporary folder in " << installs.string() << '\n';
      return;
    }
    const fs::path scratch = pattern;
    const fs::path clone = scratch / "repo";
    const std::chrono::milliseconds deadline(a->timeout_ms);
    auto fail = [&](const std::string& message) {
      removeTree(scratch);
      std::cerr << "oe: " << message << '\n';
    };
    const std::string shown = source->url + (source->ref.empty() ? "" : " at " + source->ref);
    // A commit cannot be cloned by name: the whole history, then a checkout.
    const bool commit_ref = looksLikeCommit(source->ref);
    std::vector<std::string> clone_args = {"clone", "--quiet"};
    if (!commit_ref) {
      clone_args.insert(clone_args.end(), {"--depth", "1"});
      if (!source->ref.empty()) {
        clone_args.insert(clone_args.end(), {"--branch", source->ref});
      }
    }
    clone_args.insert(clone_args.end(), {"--", source->url, clone.string()});
    if (auto cloned = runGit(*git, clone_args, "", deadline); !cloned.ok) {
      fail("cannot clone " + shown + ": " + cloned.error);
      return;
    }
    if (commit_ref) {
      auto checkout =
          runGit(*git, {"checkout", "--quiet", "--detach", source->ref}, clone, deadline);
      if (!checkout.ok) {
        fail("cannot check out " + source->ref + " in " + source->url + ": " + checkout.error);
        return;
      }
    }
    auto head = runGit(*git, {"rev-parse", "HEAD"}, clone, deadline);
    if (!head.ok) {
      fail("cannot read the commit of " + shown + ": " + head.error);
      return;
    }
    const std::string commit = firstLineOf(head.out);
    removeTree(clone / ".git");
    const fs::path from = source->subpath.empty() ? clone : clone / source->subpath;
    // The folder moved into place must be inside the clone: not `..`, not through a link the
    // repository holds (the move would take the user's folder it points at).
    if (!source->subpath.empty()) {
      const fs::path real = fs::weakly_canonical(from, ec);
      const fs::path root = fs::canonical(clone, ec);
      const std::string inside = real.lexically_relative(root).generic_string();
      if (ec || inside.empty() || inside == "." || inside.starts_with("..") ||
          fs::is_symlink(from, ec) || real != (root / source->subpath).lexically_normal()) {
        fail("the subpath " + source->subpath + " leads out of " + shown +
             " (give a folder inside the repository, without `..` or links)");
        return;
      }
    }
    if (!source->subpath.empty() && !fs::is_directory(from, ec)) {
      fail("no folder " + source->subpath + " in " + shown + " (check the subpath)");
      return;
    }
    if (!fs::is_regular_file(from / "experience.yaml", ec)) {
      fail("no experience.yaml in " +
           (source->subpath.empty() ? "the root of " : source->subpath + " of ") + shown +
           (source->subpath.empty() ? " (give the experience's folder: gh:owner/repo/sub/path, "
                                      "or --subpath)"
                                    : ""));
      return;
    }
    // A previous install waits aside until the new one validates, and comes back if it fails.
    const fs::path previous = scratch / "previous";
    const bool replacing = fs::exists(target, ec);
    if (replacing) {
      fs::rename(target, previous, ec);
      if (ec) {
        fail("cannot move the previous install " + target.string() + " aside: " + ec.message());
        return;
      }
    }
    fs::rename(from, target, ec);
    if (ec) {
      const std::string why = ec.message();
      if (replacing) {
        fs::rename(previous, target, ec);
      }
      fail("cannot move the experience to " + target.string() + ": " + why);
      return;
    }
    bool loaded_ok = false;
    const std::vector<Diagnostic> diagnostics = quietValidation(target, loaded_ok);
    if (!loaded_ok || hasErrors(diagnostics)) {
      printDiagnostics(diagnostics);
      removeTree(target);
      if (replacing) {
        fs::rename(previous, target, ec);
      }
      const size_t errors = errorCount(diagnostics);
      fail(source->name + " from " + shown + " does not validate (" + std::to_string(errors) +
           (errors == 1 ? " error" : " errors") + ", above); nothing was installed" +
           (replacing ? " and the previous install is kept" : ""));
      return;
    }
    printDiagnostics(diagnostics);  // warnings
    const Json record = {{"name", source->name},    {"spec", a->spec},
                         {"source", source->url},   {"subpath", source->subpath},
                         {"ref", source->ref},      {"commit", commit},
                         {"installed_at", utcNow()}};
    std::ofstream out(target / kRecordFile, std::ios::binary | std::ios::trunc);
    out << record.dump(2) << '\n';
    out.close();
    removeTree(scratch);
    if (!out) {
      std::cerr << "oe: installed " << target.string() << " but cannot write its " << kRecordFile
                << "; `oe installed` will not know its source\n";
      return;
    }
    std::cout << "installed " << source->name << " from " << shown << " (commit "
              << commit.substr(0, 12) << ") into " << target.string() << '\n'
              << "run it: oe run " << target.string() << '\n';
    exit_code = kExitOk;
  });
}

void addInstalledCommand(CLI::App& app, int& exit_code) {
  struct Args {
    bool json = false;
    std::string experience = ".";
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("installed", "List what oe install put here");
  cmd->add_flag("--json", a->json, "Print the installs as a JSON array");
  cmd->add_option("--experience", a->experience,
                  "The folder whose .openexpertise/experiences/ is listed")
      ->capture_default_str();
  cmd->callback([a, &exit_code] {
    const fs::path installs = installsDir(a->experience);
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
      const auto text = readFile(folder / kRecordFile);
      const Json record = text ? Json::parse(*text, nullptr, false) : Json();
      for (const char* key : {"spec", "source", "subpath", "ref", "commit", "installed_at"}) {
        item[key] = record.is_object() && record.contains(key) && record[key].is_string()
                        ? record[key]
                        : Json("");
      }
      bool loaded_ok = false;
      const auto diagnostics = quietValidation(folder, loaded_ok);
      item["valid"] = loaded_ok && !hasErrors(diagnostics);
      item["errors"] = errorCount(diagnostics);
      list.push_back(std::move(item));
    }
    if (a->json) {
      std::cout << list.dump(2) << '\n';
      exit_code = kExitOk;
      return;
    }
    if (list.empty()) {
      std::cout << "nothing installed in " << installs.string()
                << " (oe install <spec> installs an experience)\n";
      exit_code = kExitOk;
      return;
    }
    for (const Json& item : list) {
      const std::string source = item["source"].get<std::string>();
      const std::string subpath = item["subpath"].get<std::string>();
      const std::string ref = item["ref"].get<std::string>();
      std::cout << item["name"].get<std::string>() << "  "
                << (source.empty() ? "(no " + std::string(kRecordFile) + ")"
                                   : source + (subpath.empty() ? "" : "//" + subpath) +
                                         (ref.empty() ? "" : "@" + ref))
                << "  " << item["commit"].get<std::string>().substr(0, 12) << "  "
                << item["installed_at"].get<std::string>() << "  "
                << (item["valid"].get<bool>()
                        ? std::string("valid")
                        : "INVALID (" + std::to_string(item["errors"].get<size_t>()) +
                              " errors: oe validate " + item["path"].get<std::string>() + ")")
                << '\n';
    }
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli
