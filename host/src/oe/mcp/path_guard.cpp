// Path confinement for `oe mcp`.
#include "oe/mcp/path_guard.hpp"

#include <algorithm>

namespace oe::mcp {

namespace fs = std::filesystem;

bool isWithin(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty() && std::next(r) == root.end()) {
      return true;  // a root with a trailing separator ("/a/b/") ends with an empty part
    }
    if (p == path.end() || *p != *r) {
      return false;
    }
  }
  return true;
}

Result<PathGuard> PathGuard::create(const std::vector<fs::path>& roots, const fs::path& base) {
  PathGuard guard;
  std::error_code ec;
  guard.base_ = fs::canonical(base, ec);
  if (ec) {
    return makeError("cannot resolve the working directory " + base.string() + ": " + ec.message());
  }
  for (const auto& root : roots) {
    const fs::path real = fs::canonical(root.is_absolute() ? root : guard.base_ / root, ec);
    if (ec || !fs::is_directory(real, ec)) {
      return makeError("--root " + root.string() +
                       ": not an existing folder; create it or pass another one");
    }
    if (std::find(guard.roots_.begin(), guard.roots_.end(), real) == guard.roots_.end()) {
      guard.roots_.push_back(real);
    }
  }
  return guard;
}

Result<fs::path> PathGuard::resolve(std::string_view arg) const {
  if (arg.empty()) {
    return makeError("the path is empty; pass a folder under one of the allowed roots");
  }
  const fs::path given(arg);
  std::error_code ec;
  // weakly_canonical follows the symlinks of the part that exists and normalises the rest, so a
  // symlink pointing out of a root, or a `..` climbing out of one, is seen for what it is.
  const fs::path real = fs::weakly_canonical(given.is_absolute() ? given : base_ / given, ec);
  if (ec) {
    return makeError("cannot resolve the path \"" + std::string(arg) + "\": " + ec.message());
  }
  for (const auto& root : roots_) {
    if (isWithin(real, root)) {
      return real;
    }
  }
  std::string list;
  for (const auto& root : roots_) {
    list += (list.empty() ? "" : ", ") + root.string();
  }
  return makeError("the path \"" + std::string(arg) + "\" resolves to " + real.string() +
                   ", outside the allowed roots (" + list +
                   "); start oe mcp with --root <folder> to allow another folder");
}

}  // namespace oe::mcp
