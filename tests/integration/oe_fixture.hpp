// Shared fixture for integration tests: a temp experience folder and a way to run `oe` on it.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "oe/pg/connection.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::test {

// The environment of a reference run on the default backend (SQLite, in this process), whatever
// backend the test runs the rest on (backend_environment.cpp sets OE_STORE and OE_WORKERS for
// the PostgreSQL runs of the run-engine tests): its result is what the other backend must equal.
inline std::map<std::string, std::string> sqliteReferenceEnv() {
  return {{"OE_PLUGIN_PATH", ""}, {"OE_STORE", ""}, {"OE_WORKERS", ""}};
}

// The PostgreSQL runs of the run-engine tests (backend_environment.cpp sets OE_STORE) must run
// on PostgreSQL, not silently on SQLite: the run's row is in oe_runs with the run's status, the
// state it reports is what oe_state_snapshot holds, and no state.sqlite was written in `dir`.
// Nothing to check on SQLite, or when the test chose the store itself (`env` sets OE_STORE).
inline void expectOnTheBackend(const std::filesystem::path& dir, const nlohmann::json& summary,
                               const std::map<std::string, std::string>& env = {}) {
  const char* backend = std::getenv("OE_TEST_BACKEND");  // NOLINT(concurrency-mt-unsafe)
  const char* store = std::getenv("OE_STORE");           // NOLINT(concurrency-mt-unsafe)
  if (backend == nullptr || std::string_view(backend) != "postgresql" || store == nullptr ||
      *store == '\0' || env.count("OE_STORE") > 0 || !summary.is_object() ||
      !summary.contains("run_id")) {
    return;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / ".openexpertise" / "state.sqlite"))
      << "a PostgreSQL run wrote state.sqlite";
  auto conn = pg::Connection::open(store);
  ASSERT_TRUE(conn) << conn.error().message;
  auto run = (*conn)->exec("SELECT status, scope FROM oe_runs WHERE run_id = $1",
                           {summary["run_id"].get<std::string>()});
  ASSERT_TRUE(run) << run.error().message;
  ASSERT_EQ(run->size(), 1) << "run " << summary["run_id"] << " is not in oe_runs";
  EXPECT_EQ(std::string(run->text(0, 0)), summary.value("status", "")) << summary.dump();
  auto state = (*conn)->exec("SELECT field, value FROM oe_state_snapshot WHERE scope = $1",
                             {std::string(run->text(0, 1))});
  ASSERT_TRUE(state) << state.error().message;
  nlohmann::json stored = nlohmann::json::object();
  for (int i = 0; i < state->size(); ++i) {
    stored[std::string(state->text(i, 0))] = nlohmann::json::parse(state->text(i, 1));
  }
  // A named copy: items() of a temporary would iterate a destroyed object.
  const nlohmann::json reported = summary.value("final_state", nlohmann::json::object());
  for (const auto& [field, value] : reported.items()) {
    EXPECT_EQ(stored.value(field, nlohmann::json()), value)
        << "field " << field << " in oe_state_snapshot";
  }
}

class OeTest : public ::testing::Test {
 protected:
  // Runs `oe <args...>` with OE_PLUGIN_PATH unset, in the temp dir, with a trust store of its
  // own (OE_TRUST_FILE, outside the experience folder): a plugin that is not built in runs only
  // after trust() (docs/trust.md), and nothing is written to the user's store.
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
    env.emplace("OE_TRUST_FILE", trustFile().string());
    return runProcess(argv, env, dir_.path());
  }
  // `oe trust <path>` (a library, a folder of them, an experience folder) into this test's store.
  void trust(const std::filesystem::path& path) {
    const ProcessResult r = oe({"trust", path.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  [[nodiscard]] std::filesystem::path trustFile() const { return trust_dir_.path() / "trust.json"; }
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
    expectOnTheBackend(dir_.path(), parsed);
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
  TempDir trust_dir_;
  std::string last_stderr_;
};

}  // namespace oe::test
