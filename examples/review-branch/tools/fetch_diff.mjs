// Reads the branch's diff (a file next to the experience; in real use, `git diff main...HEAD`).
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export default async function fetchDiff({ file }) {
  const here = dirname(fileURLToPath(import.meta.url));
  const diff = await readFile(join(here, "..", file), "utf8");
  return { state_delta: { diff } };
}
