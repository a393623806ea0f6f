// globMatches: a walk of the pattern's segments, listing only the folders a wildcard needs.
#include "oe/common/glob.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <system_error>

namespace oe {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> segmentsOf(std::string_view pattern) {
  while (pattern.starts_with("./")) {
    pattern.remove_prefix(2);
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= pattern.size()) {
    const size_t slash = pattern.find('/', start);
    const std::string_view seg = pattern.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (!seg.empty() && seg != ".") {
      out.emplace_back(seg);
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return out;
}

bool wild(std::string_view seg) { return seg.find_first_of("*?[") != std::string_view::npos; }

class Walk {
 public:
  Walk(const std::vector<std::string>& segs, size_t max, std::vector<fs::path>& out)
      : segs_(segs), max_(max), out_(out) {}

  void from(const fs::path& dir, size_t i) {
    if (truncated_) {
      return;  // one match past the bound is all it takes to know
    }
    if (i == segs_.size()) {
      add(dir);
      return;
    }
    const std::string& seg = segs_[i];
    std::error_code ec;
    if (seg == "**" && i + 1 == segs_.size()) {
      add(dir);  // everything below: the folder's digest covers it
      return;
    }
    if (seg == "**") {
      from(dir, i + 1);  // zero folders
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end && !truncated_;
           it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!name.starts_with('.') && it->is_directory(ec) && !it->is_symlink(ec)) {
          from(it->path(), i);
        }
      }
      return;
    }
    if (!wild(seg)) {
      const fs::path next = dir / seg;
      if (seg != ".openexpertise" && fs::exists(next, ec)) {
        from(next, i + 1);
      }
      return;
    }
    std::vector<fs::path> names;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name != ".openexpertise" && ::fnmatch(seg.c_str(), name.c_str(), FNM_PERIOD) == 0) {
        names.push_back(it->path());
      }
    }
    std::sort(names.begin(), names.end());
    for (const fs::path& p : names) {
      if (i + 1 < segs_.size() && !fs::is_directory(p, ec)) {
        continue;
      }
      from(p, i + 1);
    }
  }

  [[nodiscard]] bool truncated() const { return truncated_; }

 private:
  bool full() const { return out_.size() >= max_; }
  void add(const fs::path& p) {
    if (std::find(out_.begin(), out_.end(), p) != out_.end()) {
      return;  // `**` can reach a path twice (a/**/b over a/b)
    }
    if (full()) {
      truncated_ = true;
      return;
    }
    out_.push_back(p);
  }

  const std::vector<std::string>& segs_;
  size_t max_;
  std::vector<fs::path>& out_;
  bool truncated_ = false;
};

}  // namespace

std::string globProblem(std::string_view pattern) {
  if (pattern.empty()) {
    return "an empty pattern matches nothing";
  }
  if (pattern.front() == '/') {
    return "\"" + std::string(pattern) +
           "\" is absolute; write it relative to the experience folder";
  }
  int brackets = 0;
  for (char c : pattern) {
    if (c == '[') {
      ++brackets;
    } else if (c == ']' && brackets > 0) {
      --brackets;
    }
  }
  if (brackets > 0) {
    return "\"" + std::string(pattern) + "\" has a \"[\" without its \"]\"";
  }
  const auto segs = segmentsOf(pattern);
  if (segs.empty()) {
    return "\"" + std::string(pattern) + "\" names the experience folder itself; name files";
  }
  for (const std::string& seg : segs) {
    if (seg == "..") {
      return "\"" + std::string(pattern) +
             "\" leaves the experience folder (..); only its own files can be inputs";
    }
  }
  if (segs.front() == ".openexpertise") {
    return "\"" + std::string(pattern) + "\" is inside .openexpertise/, which oe owns";
  }
  return {};
}

std::vector<fs::path> globMatches(const fs::path& root, std::string_view pattern,
                                  size_t max_matches, bool* truncated) {
  std::vector<fs::path> out;
  const auto segs = segmentsOf(pattern);
  Walk walk(segs, max_matches, out);
  if (globProblem(pattern).empty()) {
    walk.from(root, 0);
  }
  if (truncated != nullptr) {
    *truncated = walk.truncated();
  }
  return out;
}

}  // namespace oe
