/**
 * The folder the product's files ship in (`catalog/`, `data/`, `examples/`): the nearest folder
 * above this module holding the project's package.json. Found by walking up rather than by a
 * fixed `../../`, so the same code works from the sources (tsx, vitest) and from the bundle the
 * CLI runs (`dist/openfief.mjs`).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_NAME = "openfief-control-plane";

function find(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, "utf8")) as { name?: unknown }).name === PACKAGE_NAME) return dir;
      } catch {
        // Not ours; keep walking.
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the ${PACKAGE_NAME} folder above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

/** The product's folder. */
export const PROJECT_ROOT: string = find();

/** A file the product ships, by its path inside the product's folder. */
export function shippedFile(...parts: string[]): string {
  return join(PROJECT_ROOT, ...parts);
}
