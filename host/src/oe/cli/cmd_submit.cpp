// `oe submit [path]`: the registry entry that would list an experience, read from its git
// checkout (origin, a tag at HEAD or the branch, the folder inside the repository). oe opens no
// browser and calls no API: it prints the entry, and without --dry-run the address of a
// pre-filled new-issue page on upstream's repository for the user to open.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/registry/registry.hpp"
#include "oe/registry/submit.hpp"
#include "oe/vcs/git.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;
using registry::githubRepo;
using registry::kUpstreamRepo;
using registry::registryEntryJson;
using registry::RegistryEntry;
using registry::splitTags;
using vcs::findGit;
using vcs::firstLineOf;
using vcs::runGit;

}  // namespace

void addSubmitCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string path = ".";
    std::string name;
    std::string tags;
    std::string ref;
    std::string subpath;
    std::string description;
    std::string output;
    bool dry_run = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("submit", "Propose an experience for the registry (prints the entry)");
  cmd->add_option("path", a->path, "The experience folder, inside a git checkout")
      ->capture_default_str();
  cmd->add_option("--name", a->name, "The entry's name (default: the experience's name)");
  cmd->add_option("--tags", a->tags, "Comma-separated tags");
  cmd->add_option("--ref", a->ref, "The ref to list (default: a tag at HEAD, else the branch)");
  cmd->add_option("--subpath", a->subpath,
                  "The folder inside the repository (default: the experience's)");
  cmd->add_option("--description", a->description,
                  "The entry's description (default: the experience's)");
  cmd->add_flag("--dry-run", a->dry_run, "Print the entry only");
  cmd->add_option("--output", a->output, "Write the entry to FILE instead of stdout");
  cmd->callback([a, &exit_code] {
    exit_code = kExitFailed;
    StderrLog sink;
    plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
    const auto experience = loadValidated(a->path, registry, false);
    if (!experience) {
      std::cerr << "oe: fix the errors above before submitting (oe validate " << a->path << ")\n";
      return;
    }
    const auto git = findGit();
    if (!git) {
      std::cerr << "oe: `git` is not on PATH; oe submit reads the remote, tag and branch with "
                   "git (install it, e.g. apt-get install git)\n";
      return;
    }
    const fs::path dir = experience->dir.empty() ? fs::path(".") : experience->dir;
    const std::chrono::milliseconds deadline(30000);
    auto top = runGit(*git, {"rev-parse", "--show-toplevel"}, dir, deadline);
    if (!top.ok) {
      std::cerr << "oe: " << dir.string() << " is not in a git checkout; submit an "
                << "experience pushed to a public repository (" << firstLineOf(top.error) << ")\n";
      return;
    }
    auto origin = runGit(*git, {"remote", "get-url", "origin"}, dir, deadline);
    if (!origin.ok) {
      std::cerr << "oe: the checkout has no `origin` remote; push the experience to GitHub "
                << "and add it (git remote add origin https://github.com/OWNER/REPO.git)\n";
      return;
    }
    const std::string origin_url = firstLineOf(origin.out);
    RegistryEntry entry;
    entry.name = a->name.empty() ? experience->name : a->name;
    entry.description = a->description.empty() ? experience->description : a->description;
    while (!entry.description.empty() &&
           (entry.description.back() == '\n' || entry.description.back() == ' ')) {
      entry.description.pop_back();
    }
    entry.tags = splitTags(a->tags);
    if (auto repo = githubRepo(origin_url)) {
      entry.owner = repo->first;
      entry.repo = repo->second;
    } else {
      // Not GitHub: the entry carries the URL (oe's `url` field; upstream reads GitHub only).
      entry.url = origin_url;
      std::cerr << "oe: warning: origin " << origin_url << " is not a GitHub repository; the "
                << "entry names it as `url`, which only oe reads\n";
    }
    entry.ref = a->ref;
    if (entry.ref.empty()) {
      auto tag = runGit(*git, {"describe", "--tags", "--exact-match", "HEAD"}, dir, deadline);
      entry.ref = tag.ok ? firstLineOf(tag.out) : "";
    }
    if (entry.ref.empty()) {
      auto branch = runGit(*git, {"rev-parse", "--abbrev-ref", "HEAD"}, dir, deadline);
      const std::string name = branch.ok ? firstLineOf(branch.out) : "";
      if (name.empty() || name == "HEAD") {
        std::cerr << "oe: HEAD is neither tagged nor on a branch; tag the commit (git tag v1 && "
                     "git push --tags) or pass --ref\n";
        return;
      }
      entry.ref = name;
    }
    if (a->subpath.empty()) {
      std::error_code ec;
      const fs::path root = fs::canonical(firstLineOf(top.out), ec);
      const fs::path here = fs::canonical(dir, ec);
      const fs::path relative = here.lexically_relative(root);
      entry.subpath = relative == "." ? "" : relative.generic_string();
    } else {
      entry.subpath = a->subpath;
    }
    const std::string text = registryEntryJson(entry).dump(2) + "\n";
    if (a->output.empty()) {
      std::cout << text;
    } else {
      std::ofstream out(a->output, std::ios::binary | std::ios::trunc);
      out << text;
      out.close();
      if (!out) {
        std::cerr << "oe: cannot write " << a->output << '\n';
        return;
      }
      std::cerr << "wrote the entry to " << a->output << '\n';
    }
    if (!a->dry_run) {
      const std::string title = "Registry submission: " + entry.name;
      const std::string body =
          "Please add this experience to the registry:\n\n```json\n" + text + "```\n";
      std::cerr << "\noe opens no browser and calls no API: to submit, open this address and "
                   "send the pre-filled issue:\n";
      std::cout << "https://github.com/" << kUpstreamRepo
                << "/issues/new?title=" << percentEncode(title) << "&body=" << percentEncode(body)
                << '\n';
    }
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli
