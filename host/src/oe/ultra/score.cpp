// See score.hpp.
#include "oe/ultra/score.hpp"

#include <algorithm>
#include <cstdlib>

namespace oe::ultra {
namespace {

bool listed(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string anchorText(const Json& anchor, const char* key) {
  auto it = anchor.find(key);
  return it != anchor.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Json Finding::toJson() const {
  return Json{{"dimension", dimension},
              {"severity", severity},
              {"anchor", anchor},
              {"evidence", evidence},
              {"fix", fix}};
}

Finding Finding::fromJson(const Json& json) {
  Finding f;
  f.dimension = stringField(json, "dimension");
  f.severity = stringField(json, "severity", "low");
  if (auto anchor = json.is_object() ? json.find("anchor") : json.end();
      anchor != json.end() && anchor->is_object()) {
    f.anchor = *anchor;
  } else {
    f.anchor = Json::object();
  }
  f.evidence = stringField(json, "evidence");
  f.fix = stringField(json, "fix");
  return f;
}

Json Critique::toJson() const {
  Json list = Json::array();
  for (const auto& f : findings) {
    list.push_back(f.toJson());
  }
  return Json{{"score", score}, {"findings", std::move(list)}};
}

Json DraftCheck::validationJson() const { return Json{{"valid", valid}, {"errors", errors}}; }

Json DraftCheck::toJson() const {
  Json out = validationJson();
  out["preflight"] = {{"ok", preflight_ok}, {"issues", preflight}};
  out["smoke"] = {{"ran", smoke_ran}, {"status", smoke_status}};
  return out;
}

std::vector<Finding> filterAnchors(std::vector<Finding> findings, const DraftNames& names) {
  std::vector<Finding> kept;
  for (auto& f : findings) {
    if (const std::string id = anchorText(f.anchor, "node_id"); !id.empty()) {
      if (listed(names.node_ids, id)) {
        kept.push_back(std::move(f));
      }
    } else if (const std::string field = anchorText(f.anchor, "state_field"); !field.empty()) {
      if (listed(names.state_fields, field)) {
        kept.push_back(std::move(f));
      }
    } else if (std::string path = anchorText(f.anchor, "file_path"); !path.empty()) {
      while (path.starts_with("./")) {
        path.erase(0, 2);
      }
      if (listed(names.files, path)) {
        kept.push_back(std::move(f));
      }
    }
  }
  return kept;
}

double composite(const DraftCheck& check, const Critique* critique) {
  if (!check.valid || !check.preflight_ok || critique == nullptr) {
    return 0;
  }
  double value = critique->score;
  for (const auto& f : critique->findings) {
    value -= f.severity == "high" ? 25 : f.severity == "medium" ? 5 : 0;
  }
  return std::clamp(value, 0.0, 100.0);
}

bool better(const Scored& candidate, const Scored& incumbent, bool accept_ties) {
  if (candidate.valid != incumbent.valid) {
    return candidate.valid;
  }
  return accept_ties ? candidate.composite >= incumbent.composite
                     : candidate.composite > incumbent.composite;
}

bool goodEnough(const DraftCheck& check, const Critique& critique, double composite_score,
                double bar) {
  const bool any_high = std::any_of(critique.findings.begin(), critique.findings.end(),
                                    [](const Finding& f) { return f.severity == "high"; });
  return check.valid && check.preflight_ok && !any_high && composite_score >= bar;
}

double scoreBar(const char* env_value) {
  if (env_value == nullptr || *env_value == '\0') {
    return 80;
  }
  char* end = nullptr;
  const double value = std::strtod(env_value, &end);
  if (end == env_value || *end != '\0' || !(value >= 0 && value <= 100)) {
    return 80;
  }
  return value;
}

std::vector<Finding> checkFindings(const DraftCheck& check) {
  std::vector<Finding> out;
  for (const auto& problem : check.preflight) {
    out.push_back({"validity", "high", Json::object(), problem,
                   "name every file with a relative path inside the draft folder"});
  }
  for (const auto& error : check.errors) {
    out.push_back({"validity", "high", Json::object(), error,
                   error.starts_with("smoke run:")
                       ? "make the draft run end to end: fix the node named in the error"
                       : "fix this so that `oe validate` passes"});
  }
  return out;
}

}  // namespace oe::ultra
