// Reads the research question (a file next to the experience; in real use, the user's ask).
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export default async function loadQuestion({ file }) {
  const here = dirname(fileURLToPath(import.meta.url));
  const { question } = JSON.parse(await readFile(join(here, "..", file), "utf8"));
  return { state_delta: { question } };
}
