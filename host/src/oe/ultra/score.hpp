// How `oe ultra` judges a draft (reference §8.2): the critic's findings and the anchor filter,
// the composite score, which of two drafts is better (keep-best), and when the loop may stop.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::ultra {

struct Finding {
  std::string dimension;
  std::string severity;          // high | medium | low
  Json anchor = Json::object();  // {node_id?, state_field?, file_path?}
  std::string evidence;
  std::string fix;
  [[nodiscard]] Json toJson() const;
  [[nodiscard]] static Finding fromJson(const Json& json);
};

struct Critique {
  double score = 0;
  std::vector<Finding> findings;
  [[nodiscard]] Json toJson() const;
};

// What oe knows about a draft without an LLM: `oe validate` and the smoke run.
struct DraftCheck {
  bool valid = false;                  // validation passed and the smoke run (if any) did
  std::vector<std::string> errors;     // validation errors, then "smoke run: ..." lines
  bool preflight_ok = true;            // the file paths are safe to write
  std::vector<std::string> preflight;  // what is unsafe about them
  bool smoke_ran = false;
  std::string smoke_status;                   // the smoke run's status (success, failed, ...)
  [[nodiscard]] Json validationJson() const;  // {valid, errors}
  [[nodiscard]] Json toJson() const;          // validation plus preflight and smoke
};

// The names a finding's anchor may point at in a draft.
struct DraftNames {
  std::vector<std::string> node_ids;
  std::vector<std::string> state_fields;
  std::vector<std::string> files;  // experience.yaml and files[] paths, without "./"
};

// Keeps the findings whose most specific anchor exists in the draft: the first of node_id,
// state_field, file_path that is set decides ("./" stripped from a file path). Findings with no
// anchor are dropped (upstream's post-filter).
[[nodiscard]] std::vector<Finding> filterAnchors(std::vector<Finding> findings,
                                                 const DraftNames& names);

// clamp(0..100, score - 25 * #high - 5 * #medium) for a valid draft with a safe preflight and a
// critique; 0 otherwise.
[[nodiscard]] double composite(const DraftCheck& check, const Critique* critique);

struct Scored {
  bool valid = false;
  double composite = 0;
};
// Keep-best: valid beats invalid, then the higher composite; a tie keeps the incumbent unless
// `accept_ties` (ultra-revise accepts a valid revision that ties).
[[nodiscard]] bool better(const Scored& candidate, const Scored& incumbent,
                          bool accept_ties = false);

// The early stop: valid, preflight ok, no high finding and composite >= bar.
[[nodiscard]] bool goodEnough(const DraftCheck& check, const Critique& critique, double composite,
                              double bar);

// OE_ULTRA_SCORE_BAR as a number in 0..100; 80 when unset or not a number.
[[nodiscard]] double scoreBar(const char* env_value);

// The findings oe adds itself: each validation or smoke error as a high finding (dimension
// "validity", no anchor), so the reviser sees why the draft is invalid.
[[nodiscard]] std::vector<Finding> checkFindings(const DraftCheck& check);

}  // namespace oe::ultra
