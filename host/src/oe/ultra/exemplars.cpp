// See exemplars.hpp.
#include "oe/ultra/exemplars.hpp"

#include <algorithm>
#include <set>

#include "oe/common/file.hpp"

namespace oe::ultra {
namespace fs = std::filesystem;

namespace {

constexpr size_t kExemplarChars = 4000;

// Lower-case words of 4 letters or more: short words ("the", "and", "id") say nothing.
std::set<std::string> words(std::string_view text) {
  std::set<std::string> out;
  std::string word;
  const auto flush = [&] {
    if (word.size() >= 4) {
      out.insert(word);
    }
    word.clear();
  };
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

std::string descriptionLine(std::string_view yaml) {
  size_t pos = 0;
  while (pos < yaml.size()) {
    const size_t end = std::min(yaml.find('\n', pos), yaml.size());
    std::string_view line = yaml.substr(pos, end - pos);
    if (line.starts_with("description:")) {
      line.remove_prefix(12);
      while (!line.empty() && (line.front() == ' ' || line.front() == '"')) {
        line.remove_prefix(1);
      }
      while (!line.empty() && (line.back() == ' ' || line.back() == '"' || line.back() == '\r')) {
        line.remove_suffix(1);
      }
      return std::string(line);
    }
    pos = end + 1;
  }
  return {};
}

}  // namespace

Json Exemplar::toJson() const {
  return Json{{"name", name}, {"description", description}, {"experience_yaml", yaml}};
}

std::vector<Exemplar> scanCorpus(const fs::path& dir) {
  std::vector<Exemplar> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (!it->is_directory(ec)) {
      continue;
    }
    const auto text = readFile(it->path() / "experience.yaml");
    if (!text) {
      continue;
    }
    Exemplar e;
    e.name = it->path().filename().string();
    e.description = descriptionLine(*text);
    e.yaml = text->substr(0, kExemplarChars);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const Exemplar& a, const Exemplar& b) { return a.name < b.name; });
  return out;
}

std::vector<Exemplar> pickExemplars(const Json& analysis, const std::vector<Exemplar>& corpus,
                                    size_t count) {
  std::string text = stringField(analysis, "name") + " " + stringField(analysis, "description") + " " +
                     stringField(analysis, "domain");
  std::set<std::string> kinds;
  const auto sketches = analysis.is_object() ? analysis.find("node_sketches") : analysis.end();
  for (const auto& sketch :
       sketches != analysis.end() && sketches->is_array() ? *sketches : Json::array()) {
    text += " " + stringField(sketch, "purpose") + " " + stringField(sketch, "id");
    kinds.insert(stringField(sketch, "kind"));
  }
  const std::set<std::string> wanted = words(text);
  std::vector<std::pair<size_t, size_t>> scored;  // (score, index)
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::set<std::string> have = words(corpus[i].name + " " + corpus[i].description);
    size_t score = 0;
    for (const auto& w : wanted) {
      score += have.contains(w) ? 2 : 0;
    }
    for (const auto& kind : kinds) {
      if (!kind.empty() && corpus[i].yaml.find("kind: " + kind + "\n") != std::string::npos) {
        ++score;
      }
    }
    if (score > 0) {
      scored.emplace_back(score, i);
    }
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Exemplar> out;
  for (size_t k = 0; k < scored.size() && k < count; ++k) {
    out.push_back(corpus[scored[k].second]);
  }
  return out;
}

}  // namespace oe::ultra
