// Registration of each `oe` command; each is defined in its own cmd_<name>.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace oe::cli {

// Each adds its subcommand to `app`; when it runs, it stores its exit code in `exit_code`.
void addRunCommand(CLI::App& app, int& exit_code);
void addResumeCommand(CLI::App& app, int& exit_code);
void addValidateCommand(CLI::App& app, int& exit_code);
void addPluginsCommand(CLI::App& app, int& exit_code);
void addTrustCommand(CLI::App& app, int& exit_code);
void addStateCommand(CLI::App& app, int& exit_code);
void addResetStateCommand(CLI::App& app, int& exit_code);
void addInspectCommand(CLI::App& app, int& exit_code);
void addSchemaCommand(CLI::App& app, int& exit_code);
void addRunsCommand(CLI::App& app, int& exit_code);
void addCacheCommand(CLI::App& app, int& exit_code);
void addGcCommand(CLI::App& app, int& exit_code);
void addEvolveCommand(CLI::App& app, int& exit_code);
void addDiffCommand(CLI::App& app, int& exit_code);
void addGraphCommand(CLI::App& app, int& exit_code);
void addDoctorCommand(CLI::App& app, int& exit_code);
void addInitCommand(CLI::App& app, int& exit_code);
void addRegistryCommand(CLI::App& app, int& exit_code);
void addInstallCommand(CLI::App& app, int& exit_code);
void addInstalledCommand(CLI::App& app, int& exit_code);
void addSubmitCommand(CLI::App& app, int& exit_code);
void addDemoCommand(CLI::App& app, int& exit_code);
void addUltraCommand(CLI::App& app, int& exit_code);
void addUltraReviseCommand(CLI::App& app, int& exit_code);
void addMcpCommand(CLI::App& app, int& exit_code);
void addStoreCommand(CLI::App& app, int& exit_code);
void addWorkerCommand(CLI::App& app, int& exit_code);
void addApplyDiffCommand(CLI::App& app, int& exit_code);
void addApproveCommand(CLI::App& app, int& exit_code);
void addRejectCommand(CLI::App& app, int& exit_code);
void addServeCommand(CLI::App& app, int& exit_code);
// Hidden: the helper process of a plugin under isolation: process.
void addPluginHostCommand(CLI::App& app, int& exit_code);

// `oe resume RUN` with the default flags (cmd_run.cpp): how `oe approve` / `oe reject` continue
// the run they decided; `store`: --store as given (empty: OE_STORE, runtime.store). Returns the
// exit code `oe resume` would.
int continueRun(const std::string& experience, const std::string& run_id,
                const std::string& store, bool json, bool quiet);

}  // namespace oe::cli
