// "Did you mean" suggestions for misspelt keys and ids (D9).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace oe::spec {

// Edit distance (insertions, deletions, substitutions).
[[nodiscard]] size_t levenshtein(std::string_view a, std::string_view b);

// The closest candidate when it is plausibly what was meant (a small edit distance, or one is
// a prefix of the other); empty otherwise.
[[nodiscard]] std::string closestMatch(std::string_view word,
                                       const std::vector<std::string>& candidates);

// `; did you mean "x"?` when there is a plausible match, else `` (for appending to a message).
[[nodiscard]] std::string didYouMean(std::string_view word,
                                     const std::vector<std::string>& candidates);

}  // namespace oe::spec
