// `oe worker --store URL [--queue NAME...] [--concurrency N]`: runs the node attempts that
// `oe run --store URL --workers` coordinators put in the work queue (docs/scale-out.md).
#include <pthread.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/worker/worker.hpp"

namespace oe::cli {

namespace {

struct WorkerArgs {
  std::string store;
  std::vector<std::string> queues;
  int concurrency = 1;
  int64_t lease_ms = 30'000;
  bool no_listen = false;
  std::string id;
};

int runWorker(WorkerArgs& a) {
  if (!resolveStoreUrl(a.store, "oe worker")) {
    return kExitUsage;
  }
  if (a.concurrency < 1 || a.lease_ms < 1) {
    std::cerr << "oe worker: --concurrency and --lease-ms must be positive integers\n";
    return kExitUsage;
  }
  // The first SIGINT/SIGTERM stops claiming and lets the attempts in hand finish and complete;
  // a second ends at once (their leases expire and other workers run them again). Blocked
  // before any other thread exists, so only the watcher takes them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  StderrLog log_sink;
  // Lives as long as the worker: experience folders (and their plugins) load as attempts come.
  const auto gate = ops::trustGate();
  worker::WorkerOptions options;
  options.trust = gate.get();
  options.url = a.store;
  if (!a.queues.empty()) {
    options.queues = a.queues;
  }
  options.concurrency = a.concurrency;
  options.lease = std::chrono::milliseconds(a.lease_ms);
  options.id = a.id;
  options.log = &log_sink;
  options.listen = !a.no_listen;
  auto started = worker::Worker::start(std::move(options));
  if (!started) {
    std::cerr << "oe worker: " << started.error().message << '\n';
    return kExitFailed;
  }
  worker::Worker& w = **started;
  std::thread([&w, stop_signals] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    std::cerr << "oe worker: finishing the attempts in hand (again to stop at once)\n";
    w.stop();
    sigwait(&stop_signals, &signal_number);
    std::_Exit(128 + signal_number);
  }).detach();
  std::string queues;
  for (const std::string& q : a.queues.empty() ? std::vector<std::string>{"default"} : a.queues) {
    queues += (queues.empty() ? "" : ", ") + q;
  }
  std::cerr << "oe worker " << w.id() << ": serving " << queues << " with " << a.concurrency
            << (a.concurrency == 1 ? " slot" : " slots") << '\n';
  auto ran = w.run();
  std::cerr << "oe worker " << w.id() << ": stopped after " << w.completed() << " attempts ("
            << w.refused() << " results refused as stale)\n";
  if (!ran) {
    std::cerr << "oe worker: " << ran.error().message << '\n';
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

void addWorkerCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<WorkerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "worker", "Run node attempts from a PostgreSQL work queue (for `oe run --workers`)");
  cmd->add_option("--store", a->store, "postgresql://… URL (default: $OE_STORE)");
  cmd->add_option("--queue", a->queues,
                  "A queue to serve (repeatable; default: \"default\"); nodes pick one with "
                  "`queue:`");
  cmd->add_option("--concurrency", a->concurrency, "Attempts run at once")->capture_default_str();
  cmd->add_option("--id", a->id, "This worker's name in oe_workers (default: host:pid:random)");
  // For the tests and the benchmark: a short lease makes a killed worker's attempts come back
  // quickly; polling alone measures the wake-up without NOTIFY.
  cmd->add_option("--lease-ms", a->lease_ms)->group("");
  cmd->add_flag("--no-listen", a->no_listen)->group("");
  cmd->callback([a, &exit_code] { exit_code = runWorker(*a); });
}

}  // namespace oe::cli
