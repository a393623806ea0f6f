// Exemplars for the synthesizer (reference §8.2 pickExemplars): experiences from a corpus folder
// (`--corpus DIR`, else oe's shipped examples) that look most like the analysed task.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::ultra {

struct Exemplar {
  std::string name;         // the subfolder's name
  std::string description;  // the yaml's `description:` line
  std::string yaml;         // its first 4000 characters
  [[nodiscard]] Json toJson() const;
};

// Each direct subfolder of `dir` holding an experience.yaml, in name order.
[[nodiscard]] std::vector<Exemplar> scanCorpus(const std::filesystem::path& dir);

// The `count` exemplars whose words overlap most with the analysis (its name, description,
// domain, node purposes) plus one point per node kind of the analysis the exemplar also uses;
// ties go to the earlier name. An exemplar with no overlap at all is not picked.
[[nodiscard]] std::vector<Exemplar> pickExemplars(const Json& analysis,
                                                  const std::vector<Exemplar>& corpus,
                                                  size_t count);

}  // namespace oe::ultra
