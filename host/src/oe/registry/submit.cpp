// `oe submit`'s helpers (see submit.hpp).
#include "oe/registry/submit.hpp"

#include <sstream>

namespace oe::registry {

std::optional<std::pair<std::string, std::string>> githubRepo(std::string url) {
  for (const std::string_view prefix :
       {"https://github.com/", "http://github.com/", "git@github.com:", "ssh://git@github.com/",
        "git://github.com/", "https://www.github.com/"}) {
    if (url.starts_with(prefix)) {
      url.erase(0, prefix.size());
      while (!url.empty() && url.back() == '/') {
        url.pop_back();
      }
      if (url.ends_with(".git")) {
        url.resize(url.size() - 4);
      }
      const size_t slash = url.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == url.size() ||
          url.find('/', slash + 1) != std::string::npos) {
        return std::nullopt;
      }
      return std::make_pair(url.substr(0, slash), url.substr(slash + 1));
    }
  }
  return std::nullopt;
}

std::vector<std::string> splitTags(const std::string& text) {
  std::vector<std::string> tags;
  std::stringstream in(text);
  std::string tag;
  while (std::getline(in, tag, ',')) {
    const size_t start = tag.find_first_not_of(' ');
    const size_t end = tag.find_last_not_of(' ');
    if (start != std::string::npos) {
      tags.push_back(tag.substr(start, end - start + 1));
    }
  }
  return tags;
}

}  // namespace oe::registry
