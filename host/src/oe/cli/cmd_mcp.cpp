// `oe mcp`: an MCP server on stdio (docs/mcp.md). stdout carries JSON-RPC and nothing else: the
// real stdout is moved to a private fd for the one writer, and fd 1 becomes stderr, so a plugin
// or a program that prints cannot corrupt the stream.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <thread>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/mcp/framing.hpp"
#include "oe/mcp/server.hpp"
#include "oe/mcp/tools.hpp"

namespace oe::cli {

using mcp::McpContext;
using mcp::mcpResources;
using mcp::mcpTools;
namespace {

constexpr const char* kInstructions =
    "oe runs AI workflows written as YAML (experiences). Validate with oe_validate, run with "
    "oe_run (progress per node; cancel to interrupt, then oe_resume), read results with "
    "oe_state, oe_inspect and oe_runs. Paths must lie under the server's roots.";

// The JSON-RPC fd: the real stdout, duplicated above 2 and close-on-exec; fd 1 then points at
// stderr for everything else in the process and the programs it starts.
int isolateStdout() {
  const int rpc = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (rpc < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    return -1;
  }
  return rpc;
}

}  // namespace

void addMcpCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::vector<std::string> roots;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "mcp", "Serve oe's tools to MCP clients (Claude Code, Codex, ...) on stdin/stdout");
  cmd->add_option("--root", a->roots,
                  "Allow paths under this folder too (repeatable; the working directory always)");
  cmd->callback([a, &exit_code] {
    std::error_code ec;
    const auto cwd = std::filesystem::current_path(ec);
    std::vector<std::filesystem::path> roots = {cwd};
    roots.insert(roots.end(), a->roots.begin(), a->roots.end());
    auto guard = mcp::PathGuard::create(roots, cwd);
    if (!guard) {
      std::cerr << "oe: " << guard.error().message << '\n';
      exit_code = kExitUsage;
      return;
    }
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
      std::cerr << "oe: cannot find oe's own binary (/proc/self/exe): " << ec.message() << '\n';
      exit_code = kExitFailed;
      return;
    }
    const int rpc_fd = isolateStdout();
    if (rpc_fd < 0) {
      std::cerr << "oe: cannot set up stdout for JSON-RPC\n";
      exit_code = kExitFailed;
      return;
    }
    // SIGINT/SIGTERM are taken by a thread of their own (blocked here, before any other thread
    // exists): the runs in flight are interrupted, not orphaned, before oe mcp exits.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    auto context = std::make_shared<McpContext>(McpContext{std::move(*guard), exe});
    mcp::ServerInfo info;
    info.version = OE_VERSION_STRING;
    info.instructions = kInstructions;
    // Shared with the signal thread, which outlives this callback (it is never joined): a
    // signal during the process's exit must not find the server gone.
    struct Session {
      Session(int fd, mcp::ServerInfo info, std::shared_ptr<const McpContext> context)
          : out(fd), server(std::move(info), mcpTools(context), mcpResources(context), out) {}
      mcp::LineWriter out;
      mcp::Server server;
    };
    auto session = std::make_shared<Session>(rpc_fd, std::move(info), context);
    std::thread([session, stop_signals] {
      int signal_number = 0;
      sigwait(&stop_signals, &signal_number);
      session->server.shutdown();
      std::_Exit(128 + signal_number);
    }).detach();
    mcp::LineReader in(STDIN_FILENO);
    exit_code = session->server.serve(in);
  });
}

}  // namespace oe::cli
