#include "oe/httpd/router.hpp"

#include <algorithm>
#include <stdexcept>

#include "oe/httpd/target.hpp"

namespace oe::httpd {

namespace {

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = path.empty() || path.front() != '/' ? 0 : 1;
  while (start <= path.size()) {
    const size_t end = path.find('/', start);
    out.push_back(path.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  return out;
}

bool isParam(std::string_view segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

// Matches and fills `params`; the score ranks literal segments above {name} ones, position by
// position, so the most specific pattern wins.
bool matchPattern(std::string_view pattern, std::string_view path,
                  std::map<std::string, std::string>& params, std::string& score) {
  const auto want = segments(pattern);
  const auto have = segments(path);
  params.clear();
  score.clear();
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string_view seg = want[i];
    if (isParam(seg) && seg[seg.size() - 2] == '*') {
      if (i >= have.size()) {
        return false;
      }
      std::string rest;
      for (size_t j = i; j < have.size(); ++j) {
        auto decoded = percentDecode(have[j], false);
        if (!decoded || decoded->find('/') != std::string::npos) {
          return false;
        }
        rest.append(j == i ? "" : "/").append(*decoded);
      }
      if (rest.empty()) {
        return false;
      }
      params[std::string(seg.substr(1, seg.size() - 3))] = std::move(rest);
      score.push_back('0');
      return true;
    }
    if (i >= have.size()) {
      return false;
    }
    if (isParam(seg)) {
      if (have[i].empty()) {
        return false;
      }
      auto decoded = percentDecode(have[i], false);
      if (!decoded) {
        return false;
      }
      params[std::string(seg.substr(1, seg.size() - 2))] = std::move(*decoded);
      score.push_back('1');
    } else if (seg == have[i]) {
      score.push_back('2');
    } else {
      return false;
    }
  }
  return want.size() == have.size();
}

}  // namespace

void Router::add(std::string method, std::string pattern, Scope scope, Handler handler) {
  for (const auto& route : routes_) {
    if (route.method == method && route.pattern == pattern) {
      throw std::logic_error("route added twice: " + method + " " + pattern);
    }
  }
  routes_.push_back(Route{std::move(method), std::move(pattern), scope, std::move(handler)});
}

Router::Match Router::match(std::string_view method, std::string_view path) const {
  Match best;
  std::string best_score;
  std::map<std::string, std::string> params;
  std::string score;
  for (const auto& route : routes_) {
    if (!matchPattern(route.pattern, path, params, score)) {
      continue;
    }
    if (route.method != method) {
      if (std::find(best.allowed_methods.begin(), best.allowed_methods.end(), route.method) ==
          best.allowed_methods.end()) {
        best.allowed_methods.push_back(route.method);
      }
      continue;
    }
    if (best.route == nullptr || score > best_score) {
      best.route = &route;
      best.params = params;
      best_score = score;
    }
  }
  if (best.route != nullptr) {
    best.allowed_methods.clear();
  }
  return best;
}

}  // namespace oe::httpd
