// Reads the topic and the angles to brainstorm from (one diverge run per angle).
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export default async function loadSeed({ file }) {
  const here = dirname(fileURLToPath(import.meta.url));
  const { topic, angles } = JSON.parse(await readFile(join(here, "..", file), "utf8"));
  return { state_delta: { topic, angles } };
}
