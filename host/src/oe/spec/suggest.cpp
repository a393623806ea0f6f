// Edit-distance suggestions; see suggest.hpp.
#include "oe/spec/suggest.hpp"

#include <algorithm>

namespace oe::spec {

size_t levenshtein(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_distance = 0;
  for (const auto& c : candidates) {
    size_t d = levenshtein(word, c);
    if (best == nullptr || d < best_distance) {
      best = &c;
      best_distance = d;
    }
  }
  if (best == nullptr || best_distance == 0) {
    return {};
  }
  // Plausible: at most a third of the word changed (at least 2 edits for short words), and
  // never the whole word ("c" is not a typo of "a").
  if (best_distance <= std::max<size_t>(2, word.size() / 3) && best_distance < word.size()) {
    return *best;
  }
  // Or a prefix relation, such as `impl_path` written for `impl`: the longest one wins.
  const std::string* prefix = nullptr;
  for (const auto& c : candidates) {
    std::string_view shorter = c.size() < word.size() ? std::string_view(c) : word;
    std::string_view longer = c.size() < word.size() ? word : std::string_view(c);
    if (shorter.size() >= 3 && longer.substr(0, shorter.size()) == shorter &&
        (prefix == nullptr || c.size() > prefix->size())) {
      prefix = &c;
    }
  }
  return prefix != nullptr ? *prefix : std::string();
}

std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best = closestMatch(word, candidates);
  return best.empty() ? std::string() : "; did you mean \"" + best + "\"?";
}

}  // namespace oe::spec
