// `oe serve`: oe as an HTTP service (docs/serve.md). The flags are here; the routes, the run
// queue and its launcher are service/, the server httpd/. Runs until SIGINT or SIGTERM, then
// stops taking requests and stops its runs so the next `oe serve` resumes them.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/httpd/server.hpp"
#include "oe/pg/connection.hpp"
#include "oe/service/launcher.hpp"
#include "oe/service/parts.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/service/service.hpp"
#include "oe/service/trigger_service.hpp"

namespace oe::cli {
namespace {

struct ServeArgs {
  std::string listen = "127.0.0.1:8420";
  std::string root = ".";
  std::string store;
  bool workers = false;
  std::string token_file;
  std::string tls_cert;
  std::string tls_key;
  bool insecure_http = false;
  std::string cors_origin;
  int max_concurrent_runs = 4;
  bool access_log = false;
};

int serve(const ServeArgs& a) {
  std::error_code ec;
  const auto root = std::filesystem::canonical(a.root, ec);
  if (ec || !std::filesystem::is_directory(root, ec)) {
    std::cerr << "oe: --root " << a.root
              << " is not a folder; give the folder that holds the experiences to serve\n";
    return kExitUsage;
  }
  if (a.max_concurrent_runs < 1) {
    std::cerr << "oe: --max-concurrent-runs must be at least 1\n";
    return kExitUsage;
  }
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::cerr << "oe: cannot find oe's own binary (/proc/self/exe): " << ec.message() << '\n';
    return kExitFailed;
  }
  const std::string store = resolveStore(a.store, nullptr);
  if (!store.empty() && !pg::isUrl(store)) {
    std::cerr << "oe: --store takes a PostgreSQL URL (postgresql://...); without it each "
                 "experience keeps its runs in its .openexpertise/ folder\n";
    return kExitUsage;
  }
  if (a.workers && store.empty()) {
    std::cerr << "oe: --workers hands node attempts over a PostgreSQL store's queue: give "
                 "--store postgresql://... too (docs/scale-out.md)\n";
    return kExitUsage;
  }
  // Every thread started from here on inherits the blocked signals: only sigwait below sees
  // them, so a stop is handled in order (server, then runs) and never inside a handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto queue = service::RunQueue::open(store.empty() ? service::RunQueue::defaultPath(root).string()
                                                     : store);
  if (!queue) {
    std::cerr << "oe: " << queue.error().message << '\n';
    return kExitFailed;
  }
  service::LauncherOptions launch;
  launch.oe_exe = exe;
  launch.root = root;
  launch.store = store;
  launch.workers = a.workers;
  launch.limits = {a.max_concurrent_runs, a.max_concurrent_runs};
  auto launcher = service::Launcher::start(**queue, launch);
  if (!launcher) {
    std::cerr << "oe: " << launcher.error().message << '\n';
    return kExitFailed;
  }
  service::ServiceContext context;
  context.root = root;
  context.store = store;
  context.workers = a.workers;
  context.max_concurrent_runs = a.max_concurrent_runs;
  context.queue = queue->get();
  context.launcher = launcher->get();
  auto triggers = service::TriggerService::start(context);
  if (!triggers) {
    std::cerr << "oe: " << triggers.error().message << '\n';
    return kExitFailed;
  }
  const httpd::Router router = service::buildRouter(context, service::standardParts(**triggers, exe));

  httpd::ServerOptions options;
  options.listen = a.listen;
  if (!a.token_file.empty()) {
    options.token_file = a.token_file;
  }
  if (!a.tls_cert.empty()) {
    options.tls_cert = a.tls_cert;
  }
  if (!a.tls_key.empty()) {
    options.tls_key = a.tls_key;
  }
  options.insecure_http = a.insecure_http;
  options.cors_origin = a.cors_origin;
  options.access_log = a.access_log;
  auto server = httpd::Server::start(options, router);
  if (!server) {
    std::cerr << "oe: " << server.error().message << '\n';
    return kExitUsage;
  }
  service::say("listening on " + (*server)->url() + " (root " + root.string() +
                   (store.empty() ? std::string() : ", store " + pg::redact(store)) + ")",
               STDOUT_FILENO);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  service::say(std::string(signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
               ": stopping; runs in progress are stopped and resumed by the next oe serve");
  (*server)->stop();
  (*triggers)->stop();
  (*launcher)->stop();
  return kExitOk;
}

}  // namespace

void addServeCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve the experiences under a folder over HTTP: a REST API, events, a dashboard");
  cmd->add_option("--listen", a->listen, "host:port to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--root", a->root, "The folder whose experiences are served")
      ->capture_default_str();
  addStoreOption(*cmd, a->store);
  cmd->add_flag("--workers", a->workers,
                "Runs hand their node attempts to `oe worker` processes (needs --store)");
  cmd->add_option("--token-file", a->token_file,
                  "Bearer tokens, one `<read|admin> <name> <token>` a line; needed to listen "
                  "beyond loopback");
  cmd->add_option("--tls-cert", a->tls_cert, "TLS certificate chain (PEM)");
  cmd->add_option("--tls-key", a->tls_key, "TLS private key (PEM)");
  cmd->add_flag("--insecure-http", a->insecure_http,
                "Serve plain HTTP on a non-loopback address (behind a TLS proxy)");
  cmd->add_option("--cors-origin", a->cors_origin, "Allow this origin (CORS); default: none");
  cmd->add_option("--max-concurrent-runs", a->max_concurrent_runs,
                  "Runs at once, in all and per experience (an experience's "
                  "runtime.max_concurrent_runs wins for it)")
      ->capture_default_str();
  cmd->add_flag("--access-log", a->access_log,
                "One line per request on stderr (never a query string or a token's value)");
  cmd->callback([a, &exit_code] { exit_code = serve(*a); });
}

}  // namespace oe::cli
