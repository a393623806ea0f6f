// One case of the crash harness: generate the experience from its seed into two folders, run one
// copy uninterrupted (the oracle, on SQLite), run the other as a chain of `oe run` and
// `oe resume --last` processes with the case's faults injected (on SQLite, or on PostgreSQL
// with two `oe worker`s), then compare final states and executions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "crash/case_gen.hpp"
#include "crash/faults.hpp"

namespace oe::crash {

struct HarnessEnv {
  Store store = Store::kSqlite;
  std::filesystem::path oe_exe;
  std::filesystem::path tool;          // oe_crash_tool
  std::filesystem::path work;          // scratch folders of the cases (on disk)
  std::filesystem::path keep;          // where a failing case's folders are kept
  std::string harness_command;         // the replay command's program
  DiskFull* disk = nullptr;            // when set, faulted folders live on its tmpfs
  PgServer* pg = nullptr;              // Store::kPostgres
  GenOptions gen;
  bool keep_all = false;               // keep every case (--replay)
  bool check_oracle = false;           // run the oracle twice (a generator check)
  Ms step_limit{0};                    // 0: from the oracle's duration
};

struct InjectedFault {
  FaultKind kind = FaultKind::kSigkill;
  int step = 0;
  Ms at{0};
  bool delivered = false;  // false: the process ended before the fault's time
  int after_finishes = 0;  // triggered by the k-th node.finished line (0: by time)
};

struct CaseReport {
  uint64_t seed = 0;
  std::string summary;
  std::vector<InjectedFault> faults;
  std::vector<std::string> divergences;
  int processes = 0;        // oe run / oe resume processes of the faulted chain
  int re_executions = 0;    // executions beyond the oracle's
  bool hang = false;
  Ms took{0};
  Ms oracle_took{0};
  std::filesystem::path kept;  // the case's folders, when kept

  [[nodiscard]] int delivered() const;
};

CaseReport runCase(uint64_t seed, const HarnessEnv& env);

// The command that runs this one case again (same experience, same fault schedule).
std::string replayCommand(uint64_t seed, const HarnessEnv& env);

}  // namespace oe::crash
