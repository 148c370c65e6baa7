/**
 * `openfief token PLUGIN`: a short-lived egress token for a plugin the log knows, signed by the
 * data folder's embedded key, so a plugin can run locally under the same confinement as in a
 * cluster. The key must be private to its owner: whoever can replace it can mint any plugin's tokens.
 */
import { join } from "node:path";
import { EGRESS_KEY_FILE, mintEgressToken } from "../egress/index.js";
import type { EmbeddedAudience, MintedToken } from "../egress/index.js";
import { pluginStream } from "../events/index.js";
import { checkPrivateFile, requireLog } from "./data-dir.js";
import { AppError } from "./errors.js";
import { openDataStore } from "./data-dir.js";

/** The embedded signing key of a data folder, refused when others may write it. */
export function checkEmbeddedKey(dataDir: string): void {
  checkPrivateFile(join(dataDir, EGRESS_KEY_FILE), "the egress signing key");
}

/**
 * Mints an egress token for `plugin`, which must be a plugin of the data folder's log; with
 * `audience` openfief-core, the token it calls the core API with (docs/adr/0196).
 */
export async function mintPluginEgressToken(dataDir: string, plugin: string, ttlSeconds: number, audience?: EmbeddedAudience): Promise<MintedToken> {
  requireLog(dataDir);
  const store = await openDataStore(dataDir);
  try {
    const last = await store.last(pluginStream(plugin), "plugin.observed");
    const deleted = await store.last(pluginStream(plugin), "plugin.deleted");
    if (last === null) throw new AppError("not_found", `no plugin ${plugin} in ${dataDir}: apply it first (openfief get plugins lists the known ones)`);
    if (deleted !== null && deleted.seq > last.seq) throw new AppError("not_found", `plugin ${plugin} was deleted`);
  } finally {
    await store.close();
  }
  checkEmbeddedKey(dataDir);
  try {
    return await mintEgressToken(dataDir, plugin, { ttlSeconds, ...(audience === undefined ? {} : { audience }) });
  } catch (err) {
    const path = join(dataDir, EGRESS_KEY_FILE);
    throw new AppError("bad_setting", `${path} is not a usable signing key (${err instanceof Error ? err.message.split("\n")[0] : String(err)}): remove it and run openfief up to make a new one`);
  }
}
