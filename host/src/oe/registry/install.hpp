// Where `oe install` gets an experience from: a spec (gh:owner/repo[/sub/path][@ref], a git URL,
// a path to a repository, or a registry name) resolved to what git clones, the ref, the folder
// inside the repository and the install's name; and where installs live.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace oe::registry {

// What a spec resolves to.
struct Source {
  std::string url;      // what git clones
  std::string subpath;  // inside the repository; empty: its root
  std::string ref;      // empty: the remote's default branch
  std::string name;     // the folder under .openexpertise/experiences/
};

// Letters, digits, `_`, `-` and `.`, starting with a letter, digit or `_`.
bool installableName(std::string_view name);

// `gh:owner/repo[/sub/path][@ref]` without its `gh:`; nullopt with `error` set when malformed.
std::optional<Source> githubSource(std::string text, std::string& error);

// The spec, resolved: gh:, a URL, a path to a repository, or a registry name (in that order);
// `subpath_option` (--subpath) overrides the spec's folder. nullopt with `error` set (what to
// do) when it names nothing installable.
std::optional<Source> resolveSpec(const std::string& spec, const std::string& subpath_option,
                                  std::string& error);

// A full commit id (or an abbreviation of one): `git clone --branch` does not take it.
bool looksLikeCommit(std::string_view ref);

// The folder installs of `experience` go to: .openexpertise/experiences/.
std::filesystem::path installsDir(const std::filesystem::path& experience);

}  // namespace oe::registry
