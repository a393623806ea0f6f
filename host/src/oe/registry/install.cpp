// Resolving an install spec (see install.hpp).
#include "oe/registry/install.hpp"

#include <algorithm>

#include "oe/registry/registry.hpp"

namespace oe::registry {

namespace fs = std::filesystem;

namespace {

std::string trimSlashes(std::string text) {
  while (!text.empty() && text.front() == '/') {
    text.erase(text.begin());
  }
  while (!text.empty() && text.back() == '/') {
    text.pop_back();
  }
  return text;
}

std::string lastSegment(std::string_view path) {
  std::string text = trimSlashes(std::string(path));
  const size_t slash = text.find_last_of('/');
  return slash == std::string::npos ? text : text.substr(slash + 1);
}

// A ref after the last `@`, when that `@` follows the last `/` (so `git@host:o/r` is no ref).
std::string splitRef(std::string& text) {
  const size_t at = text.find_last_of('@');
  if (at == std::string::npos || at == 0) {
    return "";
  }
  const size_t slash = text.find_last_of("/:");
  if (slash != std::string::npos && slash > at) {
    return "";
  }
  std::string ref = text.substr(at + 1);
  text.erase(at);
  return ref;
}

std::string repoName(std::string_view url) {
  std::string name = lastSegment(url);
  if (name.ends_with(".git")) {
    name.resize(name.size() - 4);
  }
  const size_t colon = name.find_last_of(':');  // git@host:repo
  return colon == std::string::npos ? name : name.substr(colon + 1);
}

}  // namespace

bool installableName(std::string_view name) {
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  return !name.empty() && word(name.front()) && std::all_of(name.begin(), name.end(), [&](char c) {
    return word(c) || c == '-' || c == '.';
  });
}

// `gh:owner/repo[/sub/path][@ref]`.
std::optional<Source> githubSource(std::string text, std::string& error) {
  Source source;
  source.ref = splitRef(text);
  text = trimSlashes(text);
  const size_t first = text.find('/');
  if (first == std::string::npos || first == 0) {
    error = "gh:" + text + " is not gh:owner/repo[/sub/path][@ref]";
    return std::nullopt;
  }
  const size_t second = text.find('/', first + 1);
  const std::string owner = text.substr(0, first);
  const std::string repo =
      text.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  if (repo.empty()) {
    error = "gh:" + text + " is not gh:owner/repo[/sub/path][@ref]";
    return std::nullopt;
  }
  source.url = "https://github.com/" + owner + "/" + repo + ".git";
  source.subpath = second == std::string::npos ? "" : trimSlashes(text.substr(second + 1));
  return source;
}

// The spec, resolved: gh:, a URL, a path to a repository, or a registry name (in that order).
std::optional<Source> resolveSpec(const std::string& spec, const std::string& subpath_option,
                                  std::string& error) {
  std::optional<Source> source;
  std::error_code ec;
  if (spec.starts_with("gh:")) {
    source = githubSource(spec.substr(3), error);
  } else if (spec.find("://") != std::string::npos || spec.starts_with("git@")) {
    source = Source{};
    std::string url = spec;
    source->ref = splitRef(url);
    source->url = url;
  } else if (spec.find('/') != std::string::npos || spec.starts_with('.') || fs::exists(spec, ec)) {
    std::string path = spec;
    std::string ref = splitRef(path);
    if (!fs::exists(path, ec) && fs::exists(spec, ec)) {
      path = spec;  // an `@` that is part of the folder's name
      ref.clear();
    }
    if (!fs::is_directory(path, ec)) {
      error = "no git repository at " + path + " (a path must be a folder that git can clone)";
      return std::nullopt;
    }
    source = Source{fs::absolute(path).lexically_normal().string(), "", ref, ""};
  } else {
    auto file = registryFile();
    if (!file) {
      error = "\"" + spec + "\" is not gh:owner/repo, a git URL or a path, and oe's registry " +
              "is missing (set OE_REGISTRY to a registry file)";
      return std::nullopt;
    }
    auto loaded = loadRegistry(*file);
    if (!loaded.registry) {
      error = loaded.error;
      return std::nullopt;
    }
    const auto& entries = loaded.registry->entries;
    const auto it = std::find_if(entries.begin(), entries.end(),
                                 [&](const RegistryEntry& e) { return e.name == spec; });
    if (it == entries.end()) {
      error = "no experience named \"" + spec + "\" in the registry " + file->string() +
              " (`oe registry` lists it; or give gh:owner/repo[/sub/path][@ref], a git URL or "
              "a path)";
      return std::nullopt;
    }
    source = Source{};
    source->url =
        it->url.empty() ? "https://github.com/" + it->owner + "/" + it->repo + ".git" : it->url;
    source->subpath = trimSlashes(it->subpath);
    source->ref = it->ref;
    source->name = it->repo;  // the repository's name, even when `url` is a mirror's
  }
  if (!source) {
    return std::nullopt;
  }
  if (!subpath_option.empty()) {
    source->subpath = trimSlashes(subpath_option);
  }
  if (!source->subpath.empty()) {
    source->name = lastSegment(source->subpath);
  } else if (source->name.empty()) {
    source->name = repoName(source->url);
  }
  if (!installableName(source->name)) {
    error = "\"" + source->name + "\" (from " + spec + ") cannot name an install folder: it " +
            "must be letters, digits, `_`, `-` and `.`";
    return std::nullopt;
  }
  return source;
}

bool looksLikeCommit(std::string_view ref) {
  return ref.size() >= 7 && ref.size() <= 40 && std::all_of(ref.begin(), ref.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

fs::path installsDir(const fs::path& experience) {
  return experience / ".openexpertise" / "experiences";
}

}  // namespace oe::registry
