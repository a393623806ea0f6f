// Shared fixture for integration tests: a temp experience folder and a way to run `oe` on it.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::test {

// The environment of a reference run on the default backend (SQLite, in this process), whatever
// backend the test runs the rest on (backend_environment.cpp sets OE_STORE and OE_WORKERS for
// the PostgreSQL runs of the run-engine tests): its result is what the other backend must equal.
inline std::map<std::string, std::string> sqliteReferenceEnv() {
  return {{"OE_PLUGIN_PATH", ""}, {"OE_STORE", ""}, {"OE_WORKERS", ""}};
}

class OeTest : public ::testing::Test {
 protected:
  // Runs `oe <args...>` with OE_PLUGIN_PATH unset, in the temp dir.
  ProcessResult oe(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    // A new vector rather than insert() at the front: GCC 12 at -O2 reports a false
    // -Warray-bounds on moving the strings up inside the old one.
    std::vector<std::string> argv;
    argv.reserve(args.size() + 1);
    argv.emplace_back(OE_EXE);
    for (std::string& arg : args) {
      argv.push_back(std::move(arg));
    }
    env.emplace("OE_PLUGIN_PATH", "");
    return runProcess(argv, env, dir_.path());
  }
  // `oe run <dir> --json ...` parsed.
  nlohmann::json runJson(std::vector<std::string> extra = {}, int* exit_code = nullptr) {
    std::vector<std::string> args = {"run", dir_.path().string(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = oe(args);
    if (exit_code != nullptr) {
      *exit_code = r.exit_code;
    }
    auto parsed = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "stdout: " << r.out << "\nstderr: " << r.err;
    last_stderr_ = r.err;
    return parsed;
  }
  void writeExperience(std::string_view yaml) { dir_.write("experience.yaml", yaml); }
  std::filesystem::path writeTool(std::string_view name, std::string_view js) {
    return dir_.write(std::string("tools/") + std::string(name), js);
  }
  std::filesystem::path writeExecutable(std::string_view rel, std::string_view content) {
    auto p = dir_.write(rel, content);
    std::filesystem::permissions(p, std::filesystem::perms::owner_all, std::filesystem::perm_options::add);
    return p;
  }
  // Events of a run's JSONL log.
  std::vector<nlohmann::json> events(const std::string& run_id) {
    std::ifstream in(dir_.path() / ".openexpertise" / "runs" / (run_id + ".jsonl"));
    std::vector<nlohmann::json> out;
    std::string line;
    while (std::getline(in, line)) {
      out.push_back(nlohmann::json::parse(line));
    }
    return out;
  }
  static size_t count(const std::vector<nlohmann::json>& evs, std::string_view type,
                      std::string_view node = {}) {
    size_t n = 0;
    for (const auto& e : evs) {
      if (e.value("type", "") == type && (node.empty() || e.value("node_id", "") == node)) {
        ++n;
      }
    }
    return n;
  }

  TempDir dir_;
  std::string last_stderr_;
};

}  // namespace oe::test
