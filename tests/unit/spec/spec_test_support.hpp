// Helpers for the spec tests: temp folders, loading YAML text, a hand-built kind catalog.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "oe/spec/loader.hpp"
#include "support/temp_dir.hpp"

namespace oe::spec::testing {

using TempDir = oe::test::TempDir;  // write(rel, text) returns the file's path

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
