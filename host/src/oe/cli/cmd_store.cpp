// `oe store`: the PostgreSQL store's own upkeep (docs/scale-out.md). `migrate` brings the
// database's oe schema to this oe's version; `status` says where it is. (oe run, oe worker and
// the other commands migrate on first use too; this is for an operator who wants it done ahead,
// with the database's owner role, before handing the workers a less privileged one.)
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pg/schema.hpp"

namespace oe::cli {

namespace {

// The store's connection for `oe store <verb>`, or nullptr after saying why (exit_code set).
std::unique_ptr<pg::Connection> connectFor(std::string& store, const std::string& verb,
                                           int& exit_code) {
  if (!resolveStoreUrl(store, "oe store", "; a SQLite store needs no migration")) {
    exit_code = kExitUsage;
    return nullptr;
  }
  auto conn = pg::Connection::open(store, {.application_name = "oe store " + verb});
  if (!conn) {
    std::cerr << "oe store " << verb << ": " << conn.error().message << '\n';
    exit_code = kExitFailed;
    return nullptr;
  }
  return std::move(conn).value();
}

}  // namespace

void addStoreCommand(CLI::App& app, int& exit_code) {
  auto store = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("store", "Manage a PostgreSQL store (schema migrations)");
  cmd->require_subcommand(1);

  CLI::App* migrate =
      cmd->add_subcommand("migrate", "Create or upgrade oe's tables in a PostgreSQL database");
  migrate->add_option("--store", *store, "postgresql://… URL (default: $OE_STORE)");
  migrate->callback([store, &exit_code] {
    auto conn = connectFor(*store, "migrate", exit_code);
    if (!conn) {
      return;
    }
    auto report = pg::migrate(*conn);
    if (!report) {
      std::cerr << "oe store migrate: " << report.error().message << '\n';
      exit_code = kExitFailed;
      return;
    }
    if (report->from == report->to) {
      std::cout << "oe schema is at version " << report->to << " (up to date)\n";
    } else {
      std::cout << "oe schema migrated from version " << report->from << " to " << report->to
                << '\n';
    }
    exit_code = kExitOk;
  });

  CLI::App* status = cmd->add_subcommand("status", "Print the oe schema version of a database");
  status->add_option("--store", *store, "postgresql://… URL (default: $OE_STORE)");
  status->callback([store, &exit_code] {
    auto conn = connectFor(*store, "status", exit_code);
    if (!conn) {
      return;
    }
    auto version = pg::currentVersion(*conn);
    if (!version) {
      std::cerr << "oe store status: " << version.error().message << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::cout << "oe schema version " << *version << " (this oe: " << pg::latestVersion() << ")"
              << (*version < pg::latestVersion() ? "; run `oe store migrate`" : "") << '\n';
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli
