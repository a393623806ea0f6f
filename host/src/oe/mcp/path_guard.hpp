// The folders `oe mcp` may touch: a path argument of a tool or resource must resolve (after `..`,
// symlinks and the working directory are applied) to one of the roots or below it. A model
// driving the server cannot make it read, run or write anything elsewhere.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"

namespace oe::mcp {

class PathGuard {
 public:
  // `roots` are resolved once, here, against `base` (the server's working directory). A root that
  // does not exist is an error naming it.
  static Result<PathGuard> create(const std::vector<std::filesystem::path>& roots,
                                  const std::filesystem::path& base);

  // `arg` (relative to the base, or absolute) resolved: symlinks of every existing part
  // followed, `..` applied. An error names the argument, what it resolved to, and the roots.
  [[nodiscard]] Result<std::filesystem::path> resolve(std::string_view arg) const;

  [[nodiscard]] const std::vector<std::filesystem::path>& roots() const { return roots_; }
  [[nodiscard]] const std::filesystem::path& base() const { return base_; }

 private:
  std::filesystem::path base_;
  std::vector<std::filesystem::path> roots_;
};

// True when `path` is `root` or below it (both absolute and normal; compared part by part, so
// /a/bc is not under /a/b).
bool isWithin(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace oe::mcp
