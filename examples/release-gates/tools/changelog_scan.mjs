// Collects the changelog entries of the newest release that are marked as breaking.
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export default async function changelogScan({ changelog }) {
  const here = dirname(fileURLToPath(import.meta.url));
  const text = await readFile(join(here, "..", changelog), "utf8");
  const newest = text.split(/^## /m)[1] ?? "";  // the first release section
  const breaking_changes = newest
    .split("\n")
    .filter((line) => /^\s*[-*]\s+\*\*breaking\*\*/i.test(line))
    .map((line) => ({ entry: line.replace(/^\s*[-*]\s+\*\*breaking\*\*:?\s*/i, "").trim() }));
  return { state_delta: { breaking_changes } };
}
