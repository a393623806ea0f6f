// oe_crash_harness: the model-based crash harness (docs/testing.md, "The crash harness").
//
//   oe_crash_harness --store sqlite|pg --ci                 CI mode: the fixed seed range and
//                                                           the regression seeds of seeds.txt
//   oe_crash_harness --store sqlite --seed 1 --cases 50     cases 1..50
//   oe_crash_harness --store pg --seconds 3600              long mode: new seeds for an hour
//   oe_crash_harness --store sqlite --replay 17             one case again, its folders kept
//
// Prints one line per case, then the counts: cases, faults injected (by kind), divergences with
// their seeds and replay commands, and the known-failing seeds it did not check. Exit 0 when no
// case diverged, 1 otherwise, 2 on a usage or set-up error.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "crash/runner.hpp"

namespace {

using oe::crash::CaseReport;
using oe::crash::Clock;
using oe::crash::FaultKind;
using oe::crash::HarnessEnv;
using oe::crash::Ms;
using oe::crash::Store;

// CI mode's fixed ranges, sized to keep both stores within about three minutes on two cores.
constexpr uint64_t kCiSqliteFirst = 1;
constexpr int kCiSqliteCases = 48;
constexpr uint64_t kCiPgFirst = 1001;
constexpr int kCiPgCases = 28;

std::atomic<bool> g_stop{false};  // SIGINT/SIGTERM: finish the case, clean up, report

void onSignal(int /*signal*/) { g_stop = true; }

struct SeedLists {
  std::vector<std::pair<uint64_t, std::string>> regression;     // seed, why
  std::vector<std::pair<uint64_t, std::string>> known_failing;  // seed, why
};

// tests/crash/seeds.txt: "[regression]" and "[known-failing]" sections of
// "<sqlite|pg> <seed> [# why]" lines.
SeedLists readSeeds(const std::string& path, Store store) {
  SeedLists lists;
  std::ifstream in(path);
  std::string line;
  std::vector<std::pair<uint64_t, std::string>>* section = nullptr;
  const std::string want = store == Store::kSqlite ? "sqlite" : "pg";
  while (std::getline(in, line)) {
    if (line.rfind("[regression]", 0) == 0) {
      section = &lists.regression;
      continue;
    }
    if (line.rfind("[known-failing]", 0) == 0) {
      section = &lists.known_failing;
      continue;
    }
    std::string why;
    if (const size_t hash = line.find('#'); hash != std::string::npos) {
      why = line.substr(hash + 1);
      line = line.substr(0, hash);
    }
    std::istringstream words(line);
    std::string store_word;
    uint64_t seed = 0;
    if (section != nullptr && words >> store_word >> seed && store_word == want) {
      const size_t start = why.find_first_not_of(' ');
      section->emplace_back(seed, start == std::string::npos ? "" : why.substr(start));
    }
  }
  return lists;
}

std::string selfPath(const char* argv0) {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(argv0) : path.string();
}

void usage() {
  std::cerr << "usage: oe_crash_harness [--store sqlite|pg] (--ci | --seed N [--cases K] | "
               "--seconds S | --replay SEED [--repeat N])\n"
               "       [--keep DIR] [--work DIR] [--max-nodes N] [--no-disk-full] "
               "[--seeds FILE] [--check-oracle]\n";
}

}  // namespace

int main(int argc, char** argv) {
  Store store = Store::kSqlite;
  bool ci = false;
  bool disk_full = true;
  uint64_t first_seed = 1;
  int cases = 10;
  int64_t seconds = 0;
  int repeat = 1;
  std::optional<uint64_t> replay;
  std::string keep = "/tmp/oe-crash-kept";
  std::string work;
  std::string seeds_file = OE_CRASH_SEEDS;
  HarnessEnv env;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (arg == "--store") {
        const std::string s = value();
        if (s != "sqlite" && s != "pg") {
          usage();
          return 2;
        }
        store = s == "pg" ? Store::kPostgres : Store::kSqlite;
      } else if (arg == "--ci") {
        ci = true;
      } else if (arg == "--seed") {
        first_seed = std::stoull(value());
      } else if (arg == "--cases") {
        cases = std::stoi(value());
      } else if (arg == "--seconds") {
        seconds = std::stoll(value());
      } else if (arg == "--replay") {
        replay = std::stoull(value());
      } else if (arg == "--repeat") {
        repeat = std::stoi(value());
      } else if (arg == "--keep") {
        keep = value();
      } else if (arg == "--work") {
        work = value();
      } else if (arg == "--max-nodes") {
        env.gen.max_nodes = std::max(env.gen.min_nodes, std::stoi(value()));
      } else if (arg == "--no-disk-full") {
        disk_full = false;
      } else if (arg == "--seeds") {
        seeds_file = value();
      } else if (arg == "--check-oracle") {
        env.check_oracle = true;
      } else {
        usage();
        return 2;
      }
    } catch (const std::exception&) {
      usage();
      return 2;
    }
  }

  // The seeds to run, in order; known-failing ones are counted, not run (except on --replay).
  const SeedLists lists = readSeeds(seeds_file, store);
  std::set<uint64_t> known;
  for (const auto& [seed, why] : lists.known_failing) {
    known.insert(seed);
  }
  std::vector<uint64_t> seeds;
  if (replay) {
    for (int r = 0; r < repeat; ++r) {
      seeds.push_back(*replay);
    }
  } else if (ci) {
    const uint64_t first = store == Store::kSqlite ? kCiSqliteFirst : kCiPgFirst;
    const int count = store == Store::kSqlite ? kCiSqliteCases : kCiPgCases;
    for (int k = 0; k < count; ++k) {
      seeds.push_back(first + static_cast<uint64_t>(k));
    }
    for (const auto& [seed, why] : lists.regression) {
      if (std::find(seeds.begin(), seeds.end(), seed) == seeds.end()) {
        seeds.push_back(seed);
      }
    }
  } else if (seconds <= 0) {
    for (int k = 0; k < cases; ++k) {
      seeds.push_back(first_seed + static_cast<uint64_t>(k));
    }
  }
  std::vector<uint64_t> not_checked;
  if (!replay) {
    std::vector<uint64_t> kept_seeds;
    for (uint64_t seed : seeds) {
      (known.count(seed) != 0 ? not_checked : kept_seeds).push_back(seed);
    }
    seeds = std::move(kept_seeds);
  }

  // Scratch space, and the tmpfs of the full-disk fault before any thread starts.
  const bool own_work = work.empty();
  if (own_work) {
    std::string pattern = "/tmp/oe-crash-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "oe_crash_harness: mkdtemp failed\n";
      return 2;
    }
    work = pattern;
  }
  std::filesystem::create_directories(work);
  std::filesystem::create_directories(keep);
  std::unique_ptr<oe::crash::DiskFull> disk;
  std::string disk_note = "off (--no-disk-full)";
  if (store == Store::kPostgres) {
    disk_note = "not on PostgreSQL (the store is the server's; its local files are only logs)";
  } else if (disk_full) {
    std::string why;
    disk = oe::crash::DiskFull::setUp(std::filesystem::path(work) / "disk", 48, &why);
    disk_note = disk ? "a 48 MiB tmpfs in a private mount namespace, filled for a moment"
                     : "UNAVAILABLE: " + why;
  }
  std::unique_ptr<oe::crash::PgServer> pg;
  if (store == Store::kPostgres) {
    std::string pattern = "/tmp/oe-crash-pg-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "oe_crash_harness: mkdtemp failed\n";
      return 2;
    }
    std::string error;
    pg = oe::crash::PgServer::start(pattern, &error);
    if (!pg) {
      std::cerr << "oe_crash_harness: " << error << '\n';
      return 2;
    }
  }

  struct sigaction action {};
  action.sa_handler = onSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);

  env.store = store;
  env.oe_exe = OE_EXE;
  env.tool = OE_CRASH_TOOL;
  env.work = work;
  env.keep = std::filesystem::absolute(keep);
  env.harness_command = selfPath(argv[0]);
  env.disk = disk.get();
  env.pg = pg.get();
  env.keep_all = replay.has_value();

  const char* store_name = store == Store::kSqlite ? "sqlite" : "pg";
  std::cout << "oe crash harness: store " << store_name << ", work " << work << ", keep "
            << env.keep.string() << "\n  disk-full faults: " << disk_note
            << (store == Store::kPostgres
                    ? "\n  connection-cut faults: every oe process reaches the server through a "
                      "TCP proxy that cuts the next statement mid-message or loses its reply\n"
                    : "\n");
  if (!not_checked.empty()) {
    std::cout << "  NOT CHECKED: " << not_checked.size()
              << " known-failing seed(s) listed in " << seeds_file << " [known-failing]:";
    for (uint64_t seed : not_checked) {
      std::cout << ' ' << seed;
    }
    std::cout << '\n';
  }
  std::cout.flush();

  const auto started = Clock::now();
  std::map<std::string, int> by_kind;
  int delivered = 0;
  int missed = 0;
  int processes = 0;
  int re_executions = 0;
  int ran = 0;
  std::vector<CaseReport> diverged;
  size_t next = 0;
  uint64_t long_seed = first_seed;
  while (!g_stop) {
    uint64_t seed = 0;
    if (seconds > 0 && !replay && !ci) {
      if (Clock::now() - started >= std::chrono::seconds(seconds)) {
        break;
      }
      while (known.count(long_seed) != 0) {
        not_checked.push_back(long_seed++);
      }
      seed = long_seed++;
    } else {
      if (next >= seeds.size()) {
        break;
      }
      seed = seeds[next++];
    }
    CaseReport report = oe::crash::runCase(seed, env);
    ++ran;
    processes += report.processes;
    re_executions += report.re_executions;
    std::ostringstream faults;
    for (const auto& f : report.faults) {
      if (f.delivered) {
        ++delivered;
        ++by_kind[oe::crash::faultName(f.kind)];
      } else {
        ++missed;
      }
      faults << (faults.tellp() > 0 ? ", " : "") << oe::crash::faultName(f.kind);
      if (f.after_finishes > 0) {
        faults << "@finish#" << f.after_finishes << "+" << f.at.count() << "ms";
      } else if (f.kind != FaultKind::kBudget) {
        faults << "@" << f.at.count() << "ms";
      }
      faults << (f.delivered ? "" : "(missed: " + oe::crash::missedReason(f.kind) + ")");
    }
    const bool ok = report.divergences.empty();
    std::cout << (ok ? "[ok]       " : "[DIVERGED] ") << store_name << " seed " << seed << ": "
              << report.summary << "; faults: " << (faults.str().empty() ? "none" : faults.str())
              << "; " << report.processes << " processes, " << report.re_executions
              << " re-executions; oracle " << report.oracle_took.count() << " ms, case "
              << report.took.count() << " ms\n";
    for (const auto& d : report.divergences) {
      std::cout << "    " << d << '\n';
    }
    if (!ok) {
      std::cout << "    replay: " << oe::crash::replayCommand(seed, env) << '\n';
    }
    if (!report.kept.empty()) {
      std::cout << "    kept: " << report.kept.string() << '\n';
    }
    std::cout.flush();
    if (!ok) {
      diverged.push_back(std::move(report));
    }
  }

  const double minutes =
      std::chrono::duration<double>(Clock::now() - started).count() / 60.0;
  std::cout << "\noe crash harness (" << store_name << "): " << ran << " cases in "
            << static_cast<int>(minutes * 60) << " s; faults injected " << delivered << " (";
  bool first = true;
  for (const auto& [kind, n] : by_kind) {
    std::cout << (first ? "" : ", ") << kind << " " << n;
    first = false;
  }
  std::cout << "), " << missed
            << " planned faults missed (the process had ended, or no statement came to cut); "
            << processes << " oe run/resume processes; " << re_executions << " re-executions\n";
  if (minutes > 0) {
    std::cout << "  rate: " << static_cast<int>(ran / minutes) << " cases/min, "
              << static_cast<int>(delivered / minutes) << " faults/min\n";
  }
  std::cout << "  divergences: " << diverged.size() << " case(s)";
  for (const auto& d : diverged) {
    std::cout << " " << d.seed;
  }
  std::cout << '\n';
  for (const auto& d : diverged) {
    std::cout << "    seed " << d.seed << ": " << d.divergences.front() << "\n      replay: "
              << oe::crash::replayCommand(d.seed, env) << '\n';
  }
  std::cout << "  known-failing seeds not checked: " << not_checked.size();
  for (uint64_t seed : not_checked) {
    std::cout << ' ' << seed;
  }
  std::cout << (not_checked.empty() ? "" : " (tests/crash/seeds.txt [known-failing])") << '\n';
  if (g_stop) {
    std::cout << "  stopped by a signal before the last case\n";
  }
  std::error_code ec;
  disk.reset();
  pg.reset();
  if (own_work) {
    std::filesystem::remove_all(work, ec);
  }
  return diverged.empty() && !g_stop ? 0 : 1;
}
