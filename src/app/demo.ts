/**
 * The demo that ships with the project (`openfief up --demo`, `npm start`): the plugins of
 * `examples/plugins` (signed images in the OCI layout `examples/oci`, trusted through
 * `examples/trusted-signers.json`) and their grants, then an upgrade of nbp-fx that asks for a new
 * egress host and is held back. Applied once: on a data folder that already holds a log the
 * owner's state (approvals included) is kept, and `--reset` starts over.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { EventLog } from "../events/index.js";
import { shippedFile } from "../trust/index.js";
import { OWNER_CLI } from "./actor.js";
import type { Actor } from "./actor.js";
import { AppError } from "./errors.js";
import { applyResources } from "./owner-edits.js";
import { parseResources } from "./resources.js";
import type { Settings } from "./settings.js";

/** The demo's folder. */
export const EXAMPLES = shippedFile("examples");

/** The settings the demo runs with: its OCI layout and its trusted signers. */
export function demoSettings(): Settings {
  if (!existsSync(join(EXAMPLES, "oci"))) throw new AppError("bad_setting", `the demo is missing: ${EXAMPLES} has no oci/ (run npm run demo:make)`);
  return { ociLayouts: [join(EXAMPLES, "oci")], trustedSigners: join(EXAMPLES, "trusted-signers.json") };
}

/** Records every resource of a folder of the demo as the actor's observation; returns how many changed. */
export async function applyDemoFolder(store: EventLog, folder: "plugins" | "upgrade", actor: Actor = OWNER_CLI): Promise<number> {
  const dir = join(EXAMPLES, folder);
  let changed = 0;
  for (const f of readdirSync(dir).filter((n) => /\.(ya?ml|json)$/.test(n)).sort()) {
    const path = join(dir, f);
    changed += (await applyResources(store, parseResources(readFileSync(path, "utf8"), path), actor)).filter((r) => r.changed).length;
  }
  return changed;
}

/** Removes a data folder's state (`--reset`): the log, its settings, keys, cluster objects. */
export function resetDataDir(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    if (name === "up.lock") continue;
    rmSync(join(dir, name), { recursive: true, force: true });
  }
}
