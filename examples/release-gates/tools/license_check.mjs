// Lists the dependencies whose licence is not on the allow-list (one issue each).
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ALLOWED = new Set(["MIT", "ISC", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0"]);

export default async function licenseCheck({ deps }) {
  const here = dirname(fileURLToPath(import.meta.url));
  const list = JSON.parse(await readFile(join(here, "..", deps), "utf8"));
  const license_issues = list
    .filter((dep) => !ALLOWED.has(dep.license))
    .map((dep) => ({ package: dep.name, version: dep.version, license: dep.license }));
  return { state_delta: { license_issues } };
}
