// Says it started (the file `waiting`), then waits until the file `release` exists; both in the
// experience folder. The files are the test's signals; polling them is not a timing.
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const folder = join(dirname(fileURLToPath(import.meta.url)), "..");

export default async function wait() {
  writeFileSync(join(folder, "waiting"), "");
  while (!existsSync(join(folder, "release"))) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { state_delta: { second: "released" } };
}
