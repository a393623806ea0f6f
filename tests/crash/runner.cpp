// runCase (runner.hpp). Every wait has a deadline; a process that outlives it is reported as a
// hang with the case's seed and killed.
#include "crash/runner.hpp"

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "crash/compare.hpp"
#include "crash/fake_agent.hpp"
#include "oe/pg/connection.hpp"

namespace oe::crash {
namespace {

using Json = nlohmann::json;

constexpr Ms kSigintLimit{30000};   // Ctrl-C: the run must have ended by then
constexpr Ms kSigkillLimit{10000};
constexpr Ms kWorkerStopLimit{20000};
constexpr int kLeaseMs = 2000;      // the workers' lease: a stopped worker loses it quickly

// The environment of every oe process of a case: no stray store, plugin path or provider, the
// fake model, and where the tools log their executions (`log_dir`).
std::map<std::string, std::string> oeEnv(const test::FakeLlmServer& llm,
                                         const std::filesystem::path& log_dir) {
  return {{"OE_PLUGIN_PATH", ""},      {"OE_STORE", ""},
          {"OE_WORKERS", ""},          {"OE_STORE_SCOPE", ""},
          {"OPENAI_API_KEY", ""},      {"ANTHROPIC_API_KEY", ""},
          {"ANTHROPIC_BASE_URL", ""},  {"OE_OPENAI_MODEL", ""},
          {"OE_ANTHROPIC_MODEL", ""},  {"OPENAI_BASE_URL", llm.baseUrl() + "/v1"},
          {"OE_CRASH_LOG_DIR", log_dir.string()}};
}

std::set<std::string> runLogs(const std::filesystem::path& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir / ".openexpertise" / "runs", ec)) {
    if (entry.path().extension() == ".jsonl") {
      out.insert(entry.path().string());
    }
  }
  return out;
}

std::string excerpt(const std::string& text, size_t limit = 600) {
  std::string out = text.size() > limit ? "..." + text.substr(text.size() - limit) : text;
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

// The nodes a run's log says finished by executing (not replayed from the cache).
std::set<std::string> executedInLog(const std::filesystem::path& log) {
  std::set<std::string> out;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    const Json e = Json::parse(line, nullptr, false);
    if (e.is_object() && e.value("type", "") == "node.finished" && !e.value("cached", false)) {
      out.insert(e.value("node_id", ""));
    }
  }
  return out;
}

// How many node.finished lines the logs in `dir` that are not in `before` hold.
int finishedLines(const std::filesystem::path& dir, const std::set<std::string>& before) {
  int n = 0;
  for (const auto& log : runLogs(dir)) {
    if (before.count(log) != 0) {
      continue;
    }
    const std::string text = readText(log);
    for (size_t at = text.find("\"type\":\"node.finished\""); at != std::string::npos;
         at = text.find("\"type\":\"node.finished\"", at + 1)) {
      ++n;
    }
  }
  return n;
}

// PRAGMA quick_check on a read-only connection (no checkpoint, nothing changed for the resume).
std::string stateCheck(const std::filesystem::path& db) {
  if (!std::filesystem::exists(db)) {
    return "ok";
  }
  sqlite3* conn = nullptr;
  std::string result = "cannot open";
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(conn, 5000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(conn, "PRAGMA quick_check", -1, &stmt, nullptr) == SQLITE_OK) {
      result.clear();
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
        result += (result.empty() ? "" : "; ") + std::string(text == nullptr ? "" : text);
      }
      sqlite3_finalize(stmt);
    } else {
      result = sqlite3_errmsg(conn);
    }
  }
  sqlite3_close(conn);
  return result;
}

class Workers {
 public:
  Workers(const HarnessEnv& env, std::string url, std::map<std::string, std::string> oe_env,
          std::filesystem::path dir, std::filesystem::path logs)
      : env_(env),
        url_(std::move(url)),
        oe_env_(std::move(oe_env)),
        dir_(std::move(dir)),
        logs_(std::move(logs)) {}
  void start(size_t slot) {
    const std::string id = "w" + std::to_string(next_++);
    auto proc = std::make_unique<Proc>(
        std::vector<std::string>{env_.oe_exe.string(), "worker", "--store", url_, "--id", id,
                                 "--concurrency", "4", "--lease-ms", std::to_string(kLeaseMs)},
        oe_env_, dir_, logs_ / ("worker-" + id));
    if (procs_.size() <= slot) {
      procs_.resize(slot + 1);
    }
    procs_[slot] = std::move(proc);
  }
  Proc& at(size_t slot) { return *procs_[slot]; }
  // Waits until `count` workers registered in oe_workers (so a fault cannot hit their start-up,
  // which oe_worker does not retry: see docs/testing.md); false after `limit`.
  bool waitRegistered(int count, Ms limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (auto conn = pg::Connection::open(url_)) {
        auto rows = (*conn)->exec("SELECT count(*) FROM oe_workers WHERE stopped_at IS NULL");
        if (rows && rows->int64(0, 0) >= count) {
          return true;
        }
      }
      for (auto& proc : procs_) {
        if (proc->poll()) {
          return false;
        }
      }
      sleepFor(Ms(20));
    }
    return false;
  }
  // Workers that exited on their own (the harness's kills restart them at once): one line
  // each, and a new worker in each one's place so the run can go on.
  std::vector<std::string> replaceExited() {
    std::vector<std::string> problems;
    for (size_t slot = 0; slot < procs_.size(); ++slot) {
      if (auto code = procs_[slot]->poll()) {
        problems.push_back("an oe worker exited on its own (exit " + std::to_string(*code) +
                           "): " + excerpt(procs_[slot]->err(), 300));
        start(slot);
      }
    }
    return problems;
  }
  // SIGTERM: each finishes what it holds and exits 0; the problems, one line each.
  std::vector<std::string> stop() {
    std::vector<std::string> problems;
    for (auto& proc : procs_) {
      proc->signal(SIGCONT);
      proc->signal(SIGTERM);
    }
    for (auto& proc : procs_) {
      auto code = proc->waitFor(kWorkerStopLimit);
      if (!code) {
        problems.push_back("hang: an oe worker did not stop within " +
                           std::to_string(kWorkerStopLimit.count() / 1000) +
                           " s of SIGTERM (" + excerpt(proc->err(), 300) + ")");
        (void)proc->killNow();
      }
    }
    procs_.clear();
    return problems;
  }

 private:
  const HarnessEnv& env_;
  std::string url_;
  std::map<std::string, std::string> oe_env_;
  std::filesystem::path dir_;
  std::filesystem::path logs_;
  std::vector<std::unique_ptr<Proc>> procs_;
  int next_ = 0;
};

std::string storeName(Store store) { return store == Store::kSqlite ? "sqlite" : "pg"; }

void copyTree(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ec;
  std::filesystem::create_directories(to, ec);
  std::filesystem::copy(from, to,
                        std::filesystem::copy_options::recursive |
                            std::filesystem::copy_options::overwrite_existing |
                            std::filesystem::copy_options::copy_symlinks,
                        ec);
}

}  // namespace

int CaseReport::delivered() const {
  return static_cast<int>(
      std::count_if(faults.begin(), faults.end(), [](const InjectedFault& f) { return f.delivered; }));
}

std::string replayCommand(uint64_t seed, const HarnessEnv& env) {
  const GenOptions defaults;
  std::string command = env.harness_command + " --store " + storeName(env.store) + " --replay " +
                        std::to_string(seed);
  if (env.gen.max_nodes != defaults.max_nodes) {
    command += " --max-nodes " + std::to_string(env.gen.max_nodes);  // part of the case's shape
  }
  return command + " --keep " + env.keep.string();
}

CaseReport runCase(uint64_t seed, const HarnessEnv& env) {
  static std::atomic<int> counter{0};
  const auto case_started = Clock::now();
  CaseReport report;
  report.seed = seed;
  const Case c = generateCase(seed, env.gen);
  report.summary = c.summary();
  const std::string name = storeName(env.store) + "-seed-" + std::to_string(seed);
  const auto case_dir = env.work / name;
  const auto oracle_dir = case_dir / "oracle";
  const auto faulted_dir = env.disk != nullptr ? env.disk->root() / name : case_dir / "faulted";
  std::error_code ec;
  std::filesystem::remove_all(case_dir, ec);
  std::filesystem::remove_all(faulted_dir, ec);
  writeCase(c, oracle_dir, env.tool);
  writeCase(c, faulted_dir, env.tool);
  for (const char* log : {"oracle-log", "oracle-again-log", "faulted-log"}) {
    std::filesystem::create_directories(case_dir / log);
  }
  auto diverge = [&](std::string line) { report.divergences.push_back(std::move(line)); };

  // ---- the oracle: one uninterrupted run on SQLite ----
  Json oracle_state;
  std::map<std::string, int> oracle_exec;
  int oracle_finishes = 0;
  {
    auto llm = startAgentServer();
    const auto env_vars = oeEnv(*llm, case_dir / "oracle-log");
    auto run = runFor({env.oe_exe.string(), "run", ".", "--json", "-q"}, env_vars, oracle_dir,
                      case_dir / "oracle-run", Ms(120000));
    report.oracle_took = run.took;
    oracle_finishes = finishedLines(oracle_dir, {});
    const Json summary = Json::parse(run.out, nullptr, false);
    if (!run.exit_code) {
      diverge("hang: the uninterrupted run did not finish within 120 s");
    } else if (!summary.is_object() || summary.value("status", "") != "success") {
      diverge("the uninterrupted run did not succeed (exit " + std::to_string(*run.exit_code) +
              "): " + excerpt(run.out) + " " + excerpt(run.err));
    }
    if (report.divergences.empty()) {
      auto state = runFor({env.oe_exe.string(), "state", "--json"}, env_vars, oracle_dir,
                          case_dir / "oracle-state", Ms(60000));
      oracle_state = Json::parse(state.out, nullptr, false);
      if (!oracle_state.is_object()) {
        diverge("oe state of the uninterrupted run printed no JSON object: " + excerpt(state.err));
      }
    }
    llm->stop();
    oracle_exec = readExecutions(case_dir / "oracle-log", agentCalls(*llm));
  }
  if (env.check_oracle && report.divergences.empty()) {
    // The generator's promise, checked: a second clean run in a third folder agrees.
    const auto again_dir = case_dir / "oracle-again";
    writeCase(c, again_dir, env.tool);
    auto llm = startAgentServer();
    auto run = runFor({env.oe_exe.string(), "run", ".", "--json", "-q"},
                      oeEnv(*llm, case_dir / "oracle-again-log"), again_dir,
                      case_dir / "oracle-again-run", Ms(120000));
    llm->stop();
    const Json summary = Json::parse(run.out, nullptr, false);
    if (!summary.is_object() || summary.value("status", "") != "success") {
      diverge("generator: a second uninterrupted run did not succeed: " + excerpt(run.out));
    } else {
      for (auto& line : compareStates(c, oracle_state, summary["final_state"])) {
        diverge("generator: two uninterrupted runs differ: " + line);
      }
      if (readExecutions(case_dir / "oracle-again-log", agentCalls(*llm)) != oracle_exec) {
        diverge("generator: two uninterrupted runs executed different calls");
      }
    }
  }

  // ---- the faulted chain ----
  if (report.divergences.empty()) {
    FaultOptions fault_options;
    fault_options.store = env.store;
    fault_options.disk_full = env.disk != nullptr;
    fault_options.runs_on_partial_state =
        !c.pipelines.empty() || !c.loops.empty() ||
        std::any_of(c.nodes.begin(), c.nodes.end(),
                    [](const Node& n) { return n.child.has_value(); });
    fault_options.agent_nodes = c.agentNodes();
    fault_options.scale = std::max(Ms(200), report.oracle_took);
    fault_options.finishes = oracle_finishes;
    std::vector<Step> steps = planFaults(seed, fault_options);
    const Ms limit = env.step_limit.count() > 0
                         ? env.step_limit
                         : std::max(Ms(30000), report.oracle_took * 10);

    auto llm = startAgentServer();
    const auto exec_dir = case_dir / "faulted-log";
    const auto env_vars = oeEnv(*llm, exec_dir);
    std::string database;
    std::string url;
    std::unique_ptr<Workers> workers;
    bool set_up = true;
    if (env.store == Store::kPostgres) {
      database = "crash_" + std::to_string(seed) + "_" + std::to_string(getpid()) + "_" +
                 std::to_string(counter++);
      std::string error;
      if (!env.pg->createDatabase(database, &error)) {
        diverge("harness: cannot create the case's database: " + error);
        set_up = false;
      } else {
        url = env.pg->clientUrl(database);
        workers = std::make_unique<Workers>(env, url, env_vars, faulted_dir, case_dir);
        workers->start(0);
        workers->start(1);
        if (!workers->waitRegistered(2, Ms(60000))) {
          diverge("harness: the two oe workers did not register within 60 s: " +
                  excerpt(workers->at(0).err(), 300) + " " + excerpt(workers->at(1).err(), 300));
        }
      }
    }

    bool budget_given = false;
    bool finished = false;
    bool disk_was_full = false;
    std::map<std::string, size_t> finished_before_a_kill;  // node -> the step it finished in
    std::vector<long> step_pids;
    for (size_t s = 0; set_up && s <= steps.size() && !finished && !report.hang; ++s) {
      const bool final_step = s == steps.size();
      const Step step = final_step ? Step{} : steps[s];
      const bool have_log = !runLogs(faulted_dir).empty();
      std::vector<std::string> argv = {env.oe_exe.string()};
      if (s == 0 || !have_log) {
        // Killed before its log existed: nothing ran, and a new run is where a user starts.
        argv.insert(argv.end(), {"run", ".", "--json", "-q"});
        if (s == 0 && c.first_run_no_cache) {
          argv.emplace_back("--no-cache");
        }
      } else {
        argv.insert(argv.end(), {"resume", "--last", "--json", "-q"});
      }
      if (step.max_tokens >= 0) {
        argv.insert(argv.end(), {"--max-tokens", std::to_string(step.max_tokens)});
        budget_given = true;
        report.faults.push_back({FaultKind::kBudget, static_cast<int>(s), Ms(0), true});
      } else if (budget_given) {
        argv.insert(argv.end(), {"--max-tokens", "1000000000"});
      }
      if (env.store == Store::kPostgres) {
        argv.insert(argv.end(), {"--store", url, "--workers"});
      }
      const auto logs_before = runLogs(faulted_dir);
      ++report.processes;
      Proc proc(argv, env_vars, faulted_dir, case_dir / ("step-" + std::to_string(s)));
      step_pids.push_back(proc.pid());
      int terminal_signal = 0;
      bool hung = false;
      // A worker that exited on its own is reported and replaced while the step is waited for.
      auto watch = [&] {
        if (workers) {
          for (auto& problem : workers->replaceExited()) {
            diverge(std::move(problem));
          }
        }
      };
      // True when `proc` still runs at `until`.
      auto runsUntil = [&](Clock::time_point until) {
        while (true) {
          watch();
          const auto slice = std::min(until, Clock::now() + Ms(200));
          if (!proc.runningUntil(slice)) {
            return false;
          }
          if (slice >= until) {
            return true;
          }
        }
      };
      for (const auto& event : step.events) {
        bool running = true;
        auto from = proc.started();
        if (event.after_finishes > 0) {
          // Polls the run's own log (a few ms apart) until the k-th node.finished line.
          const auto deadline = Clock::now() + limit;
          while ((running = !proc.poll().has_value()) &&
                 finishedLines(faulted_dir, logs_before) < event.after_finishes &&
                 Clock::now() < deadline) {
            watch();
            sleepFor(Ms(2));
          }
          from = Clock::now();
        }
        if (!running || !runsUntil(from + event.at)) {
          report.faults.push_back({event.kind, static_cast<int>(s), event.at, false,
                                   event.after_finishes});
          break;  // it ended first: the later faults of the step have nothing to hit
        }
        report.faults.push_back(
            {event.kind, static_cast<int>(s), event.at, true, event.after_finishes});
        switch (event.kind) {
          case FaultKind::kSigkill:
            terminal_signal = SIGKILL;
            proc.signal(SIGKILL);
            break;
          case FaultKind::kSigint:
            terminal_signal = SIGINT;
            proc.signal(SIGINT);
            if (runsUntil(Clock::now() + kSigintLimit)) {
              diverge("hang: step " + std::to_string(s) + " (" + proc.command() +
                      ") did not end within " + std::to_string(kSigintLimit.count() / 1000) +
                      " s of SIGINT");
              report.hang = hung = true;
              (void)proc.killNow();
            }
            break;
          case FaultKind::kDiskFull:
            disk_was_full = true;
            if (env.disk != nullptr && env.disk->fill()) {
              (void)runsUntil(Clock::now() + event.hold);
              env.disk->release();
            }
            break;
          case FaultKind::kWorkerKill: {
            Proc& worker = workers->at(static_cast<size_t>(event.worker));
            (void)worker.killNow();
            workers->start(static_cast<size_t>(event.worker));
            break;
          }
          case FaultKind::kWorkerStop: {
            Proc& worker = workers->at(static_cast<size_t>(event.worker));
            worker.signal(SIGSTOP);
            (void)runsUntil(Clock::now() + Ms(kLeaseMs + 700));
            worker.signal(SIGCONT);
            break;
          }
          case FaultKind::kServerRestart: {
            std::string error;
            if (!env.pg->restartImmediate(&error)) {
              diverge("harness: " + error);
            }
            break;
          }
          case FaultKind::kConnectionCut:
            env.pg->armCut(event.lose_reply);
            (void)runsUntil(Clock::now() + event.hold);
            // Counted only when a statement was cut: the run may have sent none meanwhile.
            report.faults.back().delivered = env.pg->disarmCut();
            break;
          default:
            break;  // kBudget is given at the start
        }
        if (terminal_signal != 0) {
          break;
        }
      }
      if (!hung) {
        const Ms wait = terminal_signal == SIGKILL ? kSigkillLimit : limit;
        if (runsUntil(Clock::now() + wait)) {
          diverge("hang: step " + std::to_string(s) + " (" + proc.command() +
                  ") did not finish within " + std::to_string(wait.count() / 1000) + " s");
          report.hang = hung = true;
          (void)proc.killNow();
        }
      }
      const int exit_code = proc.poll().value_or(-1);
      const Json summary = Json::parse(proc.out(), nullptr, false);
      const std::string status = summary.is_object() ? summary.value("status", "") : "";
      std::string new_log;
      for (const auto& log : runLogs(faulted_dir)) {
        if (logs_before.count(log) == 0) {
          new_log = log;
        }
      }
      const std::string reason = summary.is_object() ? summary.value("reason", "") : "";
      // A budget stop that came first is the run's own end (exit 1), not a SIGINT mishandled.
      if (terminal_signal == SIGINT && !hung && exit_code != 130 && exit_code != 0 &&
          reason != "budget_exhausted") {
        diverge("step " + std::to_string(s) + ": after SIGINT it exited " +
                std::to_string(exit_code) + " with status \"" + status +
                "\"; an interrupted run exits 130 with status \"interrupted\" (" +
                excerpt(proc.err(), 300) + ")");
      }
      if (terminal_signal != 0 && exit_code != 0) {
        if (env.store == Store::kSqlite) {
          const std::string check = stateCheck(faulted_dir / ".openexpertise" / "state.sqlite");
          if (check != "ok") {
            diverge("step " + std::to_string(s) + ": state.sqlite after the kill: " + check);
          }
        }
        if (!new_log.empty()) {
          for (const auto& node : executedInLog(new_log)) {
            finished_before_a_kill.emplace(node, s);
          }
        }
      }
      finished = exit_code == 0 && status == "success";
      if (final_step && !finished && !hung) {
        std::string why;
        if (summary.is_object()) {
          for (const auto& f : summary.value("failures", Json::array())) {
            why += (why.empty() ? "" : "; ") + f.value("node_id", "") + ": " +
                   excerpt(f.value("error", ""), 200);
          }
        }
        diverge("the fault-free resume ended \"" + status + "\" (exit " +
                std::to_string(exit_code) + "): " +
                (why.empty() ? excerpt(proc.err()) : why));
      }
    }

    Json state;
    if (set_up && !report.hang) {
      std::vector<std::string> argv = {env.oe_exe.string(), "state", "--json"};
      if (env.store == Store::kPostgres) {
        argv.insert(argv.end(), {"--store", url});
      }
      auto read = runFor(argv, env_vars, faulted_dir, case_dir / "faulted-state", Ms(60000));
      state = Json::parse(read.out, nullptr, false);
      if (!state.is_object()) {
        diverge("oe state printed no JSON object: " + excerpt(read.err));
      } else {
        for (auto& line : compareStates(c, oracle_state, state)) {
          diverge(std::move(line));
        }
      }
    }
    if (workers) {
      for (auto& problem : workers->stop()) {
        diverge(std::move(problem));
      }
    }
    llm->stop();
    const auto faulted_exec = readExecutions(exec_dir, agentCalls(*llm));
    if (set_up && !report.hang) {
      // A full disk can fail a node's state write after its tool ran: each retry (3 attempts at
      // most) runs it again, so such a fault allows up to three more executions.
      int allowance = report.delivered();
      for (const auto& f : report.faults) {
        allowance += f.delivered && f.kind == FaultKind::kDiskFull ? 2 : 0;
      }
      auto check = checkExecutions(oracle_exec, faulted_exec, allowance);
      report.re_executions = check.re_executions;
      for (auto& problem : check.problems) {
        diverge(std::move(problem));
      }
      // docs/durability.md: a node the log calls finished is never executed again (on SQLite,
      // with the cache on in every run and no failed cache write, as a full disk may cause).
      // Each execution names the oe process it ran under, so one that outlived a killed run
      // (its tool process is not killed with oe) is not mistaken for a later run's.
      if (env.store == Store::kSqlite && !c.first_run_no_cache && !disk_was_full) {
        const auto by_process = executionsByProcess(exec_dir);
        std::vector<std::string> again;
        for (const auto& [node, step] : finished_before_a_kill) {
          const Node* spec = c.node(node);
          if (spec == nullptr || spec->for_each || spec->role != Role::kMain ||
              spec->flavour == Flavour::kExperience || spec->flavour == Flavour::kAgent ||
              by_process.count(node) == 0) {
            continue;
          }
          for (long pid : by_process.at(node)) {
            for (size_t later = step + 1; later < step_pids.size(); ++later) {
              if (pid == step_pids[later]) {
                again.push_back(node + " (finished in step " + std::to_string(step) +
                                ", executed in step " + std::to_string(later) + ")");
              }
            }
          }
        }
        if (!again.empty()) {
          std::string list;
          for (const auto& a : again) {
            list += (list.empty() ? "" : ", ") + a;
          }
          diverge("executions: finished (node.finished) before a kill, yet executed again: " +
                  list);
        }
      }
    }
    if (env.store == Store::kPostgres && !database.empty()) {
      env.pg->dropDatabase(database);
    }
  }

  report.took = std::chrono::duration_cast<Ms>(Clock::now() - case_started);
  if (!report.divergences.empty() || env.keep_all) {
    report.kept = env.keep / name;
    std::filesystem::remove_all(report.kept, ec);
    copyTree(case_dir, report.kept);
    if (env.disk != nullptr) {
      copyTree(faulted_dir, report.kept / "faulted");
    }
    std::ofstream readme(report.kept / "README.txt");
    readme << "oe crash harness, store " << storeName(env.store) << ", seed " << seed << "\n"
           << report.summary << "\n\noracle/   one uninterrupted run (SQLite)\n"
           << "faulted/  the chain of runs with faults; step-N.out/.err: each process's output\n"
           << "oracle-log/, faulted-log/  exec.log: one line per tool execution (identity, the pid\n"
           << "          of the oe process it ran under); markers/ of the fail-first tools\n"
           << "\nfaults:\n";
    for (const auto& f : report.faults) {
      readme << "  step " << f.step << ": " << faultName(f.kind) << " at " << f.at.count()
             << " ms";
      if (f.after_finishes > 0) {
        readme << " after its log's node.finished #" << f.after_finishes;
      }
      readme << (f.delivered ? "" : " (not delivered: " + missedReason(f.kind) + ")") << "\n";
    }
    readme << "\ndivergences:\n";
    for (const auto& d : report.divergences) {
      readme << "  " << d << "\n";
    }
    readme << "\nreplay: " << replayCommand(seed, env) << "\n";
  }
  std::filesystem::remove_all(case_dir, ec);
  std::filesystem::remove_all(faulted_dir, ec);
  return report;
}

}  // namespace oe::crash
