// Helpers for the spec tests: temp folders, loading YAML text, a hand-built kind catalog.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "oe/spec/loader.hpp"

namespace oe::spec::testing {

// A fresh folder under /tmp, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "oe-spec-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::filesystem::path p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

inline LoadResult load(const std::string& yaml) {
  return loadExperienceText(yaml, "/tmp/oe-test/experience.yaml");
}

// Loads text that must have no structural error.
inline Experience loadOk(const std::string& yaml) {
  LoadResult r = load(yaml);
  for (const auto& d : r.diagnostics) {
    ADD_FAILURE() << d.format();
  }
  if (!r.experience) {
    ADD_FAILURE() << "no experience";
    return Experience{};
  }
  return std::move(*r.experience);
}

inline KindCatalog testKinds() {
  KindCatalog kinds;
  kinds["tool"] = KindInfo{"tool", Json::parse(R"({
    "type": "object", "required": ["impl"],
    "properties": {"impl": {"type": "string", "minLength": 1}, "args": {"type": "object"}}})")};
  kinds["agent"] = KindInfo{"agent", Json::parse(R"({
    "type": "object", "required": ["prompt"],
    "properties": {"prompt": {"type": "string"}, "model": {"type": "string"},
                   "schema": {}, "args": {"type": "object"}}})")};
  kinds["cli-agent"] = KindInfo{"cli-agent", Json::parse(R"({
    "type": "object", "required": ["provider", "prompt"],
    "properties": {
      "provider": {"enum": ["claude-code", "codex", "gemini"]},
      "prompt": {"type": "string", "minLength": 1},
      "model": {"type": "string"}, "workdir": {"type": "string"},
      "output_format": {"enum": ["text", "json"]}, "schema": {"type": "object"},
      "timeout_ms": {"type": "integer", "minimum": 1000},
      "extra_args": {"type": "array", "items": {"type": "string"}}}})")};
  kinds["dataset"] = KindInfo{"dataset", Json::parse(R"({
    "type": "object", "required": ["source"],
    "properties": {"source": {"type": "object", "required": ["type"],
                              "properties": {"type": {"type": "string"},
                                             "uri": {"type": "string"},
                                             "format": {"type": "string"}}}}})")};
  kinds["bare"] = KindInfo{"bare", std::nullopt};
  return kinds;
}

// Diagnostics whose message contains `text`.
inline std::vector<Diagnostic> matching(const std::vector<Diagnostic>& all,
                                        const std::string& text) {
  std::vector<Diagnostic> out;
  for (const auto& d : all) {
    if (d.message.find(text) != std::string::npos) {
      out.push_back(d);
    }
  }
  return out;
}

inline std::string dump(const std::vector<Diagnostic>& all) {
  std::string out;
  for (const auto& d : all) {
    out += d.format() + "\n";
  }
  return out;
}

}  // namespace oe::spec::testing
