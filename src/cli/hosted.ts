/**
 * A command that calls a plugin once (`call`, `import`): the runtime and the plugin host for the
 * data folder's log, opened for the command and closed after it, whatever it throws.
 */
import { loadSettings, requireLog, runningEgress, storeLocationOf } from "../app/index.js";
import { openRuntime, startHostedPlugins } from "../compose/index.js";
import type { HostedPlugins, Runtime } from "../compose/index.js";
import { dataDir } from "./context.js";
import type { DataOptions } from "./context.js";
import { cliLogger } from "./logger.js";

/** Runs `use` with the host and runtime of `o`'s data folder (or store), closing both after. */
export async function withHostedPlugins<T>(o: DataOptions & { json?: boolean }, use: (hosted: HostedPlugins, rt: Runtime, dir: string) => Promise<T>): Promise<T> {
  const dir = dataDir(o);
  const store = storeLocationOf(o);
  if (store === null) requireLog(dir);
  const logger = cliLogger({ level: process.env["OPENFIEF_LOG_LEVEL"] ?? "warn", json: o.json === true });
  const rt = await openRuntime({ dataDir: dir, logger, store, ...loadSettings(dir) });
  const hosted = startHostedPlugins(rt, { dataDir: dir, logger, egressUrl: runningEgress(dir) });
  try {
    return await use(hosted, rt, dir);
  } finally {
    await hosted.close();
    await rt.close();
  }
}
