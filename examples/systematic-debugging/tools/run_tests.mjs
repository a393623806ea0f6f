// Runs the repository's test command. `mode: symptoms` (the first run) records what failed for
// the agents; `mode: verify` (after the fix) reports passed or failed. The repository path stays
// relative to the experience directory, so prompts do not depend on where the example lives.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export default async function runTests({ mode, repo_path, test_command, _state }) {
  const repo = repo_path ?? _state.repo_path;
  const command = test_command ?? _state.test_command;
  const [program, ...args] = command.split(/\s+/).filter((word) => word !== "");
  const here = dirname(fileURLToPath(import.meta.url));
  const run = spawnSync(program, args, { cwd: join(here, "..", repo), encoding: "utf8", timeout: 60000 });
  if (run.error) {
    throw new Error(`cannot run \`${command}\` in ${repo}: ${run.error.message}`);
  }
  const output = `${run.stdout}${run.stderr}`.slice(0, 4000);
  if (mode === "symptoms") {
    return {
      state_delta: {
        symptoms: { command, exit_code: run.status, output },
        repo_path: repo,
        test_command: command,
      },
    };
  }
  return {
    state_delta: {
      verification_status: run.status === 0 ? "passed" : "failed",
      verification_output: output,
    },
  };
}
