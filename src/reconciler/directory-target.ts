/**
 * The embedded default target: each running plugin's objects as one multi-document YAML file
 * under `<dir>/plugins/<name>.yaml`, and the allow-lists as the `openfief-egress-allowlist`
 * ConfigMap in `<dir>/openfief-egress-allowlist.yaml`, and the running WebAssembly plugins as the
 * `openfief-plugin-host` ConfigMap in `<dir>/openfief-plugin-host.yaml` (ADR 0080). The Secrets
 * plugins mount are the owner's files `<dir>/secrets/<name>.yaml`; OpenFief never writes them and
 * deletes them only when an uninstall purges them (docs/adr/0162). Files are replaced atomically (write to a
 * temporary file, fsync, rename) so a crash never leaves a half-written object behind.
 */
import { mkdir, open, readdir, rename, rm, unlink } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { ALLOWLIST_CONFIGMAP, NAMESPACE, PLUGIN_HOST_CONFIGMAP, validateSecretName } from "../plugins/index.js";
import { processAlive } from "./process-alive.js";
import type { KubeObject, Target } from "./target.js";

const PLUGIN_NAME = /^[a-z][a-z0-9-]{0,55}$/;

export class DirectoryTarget implements Target {
  readonly name: string;

  constructor(private readonly dir: string) {
    this.name = `directory:${dir}`;
  }

  async applyPlugin(plugin: string, objects: readonly KubeObject[]): Promise<void> {
    const file = this.pluginFile(plugin);
    const text = objects.map((o) => stringify(o, { sortMapEntries: false, lineWidth: 0 })).join("---\n");
    await writeAtomically(file, text);
  }

  async removePlugin(plugin: string): Promise<void> {
    await rm(this.pluginFile(plugin), { force: true });
  }

  async removeSecrets(names: readonly string[]): Promise<{ removed: string[]; absent: string[] }> {
    const removed: string[] = [];
    const absent: string[] = [];
    for (const name of names) {
      // The name reaches a file path: only a Secret name, so nothing escapes the folder.
      if (validateSecretName(name, "name").length > 0) throw new Error(`directory target: invalid Secret name ${JSON.stringify(name.slice(0, 64))}`);
      const file = join(this.dir, "secrets", `${name}.yaml`);
      try {
        await unlink(file);
        removed.push(name);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        absent.push(name);
      }
    }
    return { removed, absent };
  }

  async applyAllowLists(data: Readonly<Record<string, string>>): Promise<void> {
    await this.#writeConfigMap(ALLOWLIST_CONFIGMAP, data);
  }

  async applyPluginHost(data: Readonly<Record<string, string>>): Promise<void> {
    await this.#writeConfigMap(PLUGIN_HOST_CONFIGMAP, data);
  }

  async #writeConfigMap(name: string, data: Readonly<Record<string, string>>): Promise<void> {
    const sorted: Record<string, string> = {};
    for (const key of Object.keys(data).sort()) sorted[key] = data[key] ?? "";
    const configMap = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: NAMESPACE, labels: { "app.kubernetes.io/managed-by": "openfief" } },
      data: sorted,
    };
    await writeAtomically(join(this.dir, `${name}.yaml`), stringify(configMap, { lineWidth: 0 }));
  }

  async listPlugins(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(join(this.dir, "plugins"));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    // A process killed between writing a temporary file and renaming it leaves the file behind.
    await removeStaleTemps(join(this.dir, "plugins"), names);
    await removeStaleTemps(this.dir, await readdir(this.dir));
    return names
      .filter((n) => n.endsWith(".yaml"))
      .map((n) => n.slice(0, -".yaml".length))
      .filter((n) => PLUGIN_NAME.test(n))
      .sort();
  }

  private pluginFile(plugin: string): string {
    // The name reaches a file path: accept only a plugin name, so nothing escapes the folder.
    if (!PLUGIN_NAME.test(plugin)) throw new Error(`directory target: invalid plugin name ${JSON.stringify(plugin)}`);
    return join(this.dir, "plugins", `${plugin}.yaml`);
  }
}

const TEMP = /\.tmp-(\d+)$/;

/** Removes the temporary files of writers that are gone (never this process's own, never a live writer's). */
async function removeStaleTemps(dir: string, names: readonly string[]): Promise<void> {
  for (const n of names) {
    const m = TEMP.exec(n);
    const pid = m === null ? NaN : Number(m[1]);
    if (Number.isInteger(pid) && pid !== process.pid && !processAlive(pid)) await rm(join(dir, n), { force: true });
  }
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const dir = file.slice(0, file.lastIndexOf("/"));
  await mkdir(dir, { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  const handle = await open(tmp, "w", 0o644);
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
}
