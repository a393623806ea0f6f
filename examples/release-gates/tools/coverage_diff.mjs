// Compares line coverage between the main branch and the release candidate.
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export default async function coverageDiff({ before, after }) {
  const here = dirname(fileURLToPath(import.meta.url));
  const load = async (file) => JSON.parse(await readFile(join(here, "..", file), "utf8"));
  const [main, release] = [await load(before), await load(after)];
  const delta = Math.round((release.lines_pct - main.lines_pct) * 100) / 100;
  return {
    state_delta: {
      coverage_delta: { main: main.lines_pct, release: release.lines_pct, delta, regression: delta < 0 },
    },
  };
}
