// `oe state [field]` and `oe reset-state --yes` (D11).
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/pgstore/pg_state_backend.hpp"
#include "oe/pgstore/scope.hpp"
#include "oe/run/run.hpp"
#include "oe/state/state_store.hpp"

namespace oe::cli {

void addStateCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string field;
    std::string experience = ".";
    bool json = false;
    std::string store;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("state", "Print the persisted state (or one field)");
  cmd->add_option("field", a->field, "One state field");
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print JSON");
  addStoreOption(*cmd, a->store);
  cmd->callback([a, &exit_code] {
    auto experience = loadOnly(a->experience);
    if (!experience) {
      exit_code = kExitFailed;
      return;
    }
    const std::string url = resolveStore(a->store, &experience->raw);
    Result<std::unique_ptr<state::StateStore>> store = makeError("not opened");
    if (pg::isUrl(url)) {
      auto backend = pgstore::PgStateBackend::open(
          url, pgstore::storeScope(experience->name, experience->file), pgstore::storeRetry());
      if (!backend) {
        std::cerr << "oe: cannot open the store " << pg::redact(url) << ": "
                  << backend.error().message << '\n';
        exit_code = kExitFailed;
        return;
      }
      store = state::StateStore::open(std::move(backend).value(), experience->state);
    } else {
      const auto db = run::statePath(*experience);
      std::error_code ec;
      if (!std::filesystem::exists(db, ec)) {
        std::cout << "state file does not exist yet (no runs performed)\n";
        exit_code = kExitOk;
        return;
      }
      store = state::StateStore::open(db, experience->state);
    }
    if (!store) {
      std::cerr << "oe: " << store.error().message << '\n';
      exit_code = kExitFailed;
      return;
    }
    if (!a->field.empty()) {
      if (experience->state.find(a->field) == nullptr) {
        std::cerr << "oe: \"" << a->field << "\" is not a field of state.schema in "
                  << experience->file.string() << '\n';
        exit_code = kExitFailed;
        return;
      }
      const Json* value = (*store)->field(a->field);
      std::cout << (value == nullptr ? std::string("null") : value->dump(a->json ? -1 : 2)) << '\n';
    } else if (a->json) {
      std::cout << (*store)->snapshot().dump(2) << '\n';
    } else {
      printState(std::cout, *experience, (*store)->snapshot());
    }
    exit_code = kExitOk;
  });
}

namespace {

// reset-state on a PostgreSQL store: the scope's rows go, unless a coordinator holds the scope.
int resetStoreState(const std::string& url, const std::string& scope, bool yes) {
  if (!yes) {
    std::cerr << "oe: reset-state requires --yes to confirm destructive action\n";
    return kExitFailed;
  }
  auto conn = openHoldingScope(url, scope, "reset the state");
  if (!conn) {
    return kExitFailed;
  }
  if (auto reset = pgstore::resetState(*conn, scope); !reset) {
    std::cerr << "oe: cannot reset the state of scope \"" << scope << "\" in " << pg::redact(url)
              << ": " << reset.error().message << '\n';
    return kExitFailed;
  }
  std::cout << "removed the state of scope \"" << scope << "\" in " << pg::redact(url) << '\n';
  return kExitOk;
}

}  // namespace

void addResetStateCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string experience = ".";
    bool yes = false;
    std::string store;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("reset-state", "Delete the state database (and its -wal/-shm)");
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->add_flag("--yes", a->yes, "Confirm the deletion");
  addStoreOption(*cmd, a->store);
  cmd->callback([a, &exit_code] {
    auto experience = loadOnly(a->experience);
    if (!experience) {
      exit_code = kExitFailed;
      return;
    }
    if (const std::string url = resolveStore(a->store, &experience->raw); pg::isUrl(url)) {
      exit_code =
          resetStoreState(url, pgstore::storeScope(experience->name, experience->file), a->yes);
      return;
    }
    const auto db = run::statePath(*experience);
    std::error_code ec;
    if (!std::filesystem::exists(db, ec)) {
      std::cout << "no state to reset\n";
      exit_code = kExitOk;
      return;
    }
    if (!a->yes) {
      std::cerr << "oe: reset-state requires --yes to confirm destructive action\n";
      exit_code = kExitFailed;
      return;
    }
    // A run holding the store would keep writing into a file that is gone (issue 10, item 4),
    // and one starting while the files go would find them deleted under it: the lock is held
    // until they are gone.
    const auto lock = lockForDeletion(db, "reset-state", "reset the state", "oe reset-state --yes");
    if (!lock) {
      exit_code = kExitFailed;
      return;
    }
    auto removed = state::removeStateFiles(db);
    if (!removed) {
      std::cerr << "oe: " << removed.error().message << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::cout << "removed " << db.string() << " (and its -wal/-shm files)\n";
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli
