/**
 * The runtime settings of a data folder: what `up` was started with is saved in
 * `<data>/settings.json`, so `reconcile` (or a restarted `up`) sees the same images and signers.
 * Settings given now override the saved ones; relative paths are saved absolute.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { AppError } from "./errors.js";

/** What a data folder's control plane reads images and signers from. */
export interface Settings {
  readonly ociLayouts?: readonly string[];
  readonly trustedSigners?: string;
  readonly catalog?: string;
  readonly trustedRoot?: string;
  readonly outDir?: string;
  readonly insecureRegistries?: readonly string[];
  /** The unconfined tier's folder (seed 003): off unless set. */
  readonly unconfinedDir?: string;
  /** The cluster this control plane fronts, bound into every PluginToken (default `embedded`). */
  readonly clusterId?: string;
  /** The console's origin: the only page that may frame a view (default `http://127.0.0.1:4780`). */
  readonly consoleOrigin?: string;
  /** The plugin proxy's origin, a different site from the console's (default `http://localhost:4781`). */
  readonly pluginProxyOrigin?: string;
  /** The gateway's origin (default `http://localhost:4782`). */
  readonly gatewayOrigin?: string;
}

const MAX_SETTINGS_BYTES = 64 * 1024;

function settingsFile(dir: string): string {
  return join(dir, "settings.json");
}

function strings(v: unknown): readonly string[] | undefined {
  return Array.isArray(v) && v.every((x) => typeof x === "string") ? v : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** The settings saved in a data folder (none when the file is missing); a file that is not settings is refused. */
export function loadSettings(dir: string): Settings {
  const file = settingsFile(dir);
  if (!existsSync(file)) return {};
  let v: unknown;
  try {
    const text = readFileSync(file, "utf8");
    if (text.length > MAX_SETTINGS_BYTES) throw new Error("too large");
    v = JSON.parse(text);
  } catch {
    throw new AppError("bad_setting", `${file} is not valid settings JSON: fix or remove it`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new AppError("bad_setting", `${file} is not a settings object: fix or remove it`);
  const o = v as Record<string, unknown>;
  const out: { -readonly [K in keyof Settings]: Settings[K] } = {};
  const ociLayouts = strings(o.ociLayouts);
  if (ociLayouts !== undefined) out.ociLayouts = ociLayouts;
  const insecure = strings(o.insecureRegistries);
  if (insecure !== undefined) out.insecureRegistries = insecure;
  for (const k of ["trustedSigners", "catalog", "trustedRoot", "outDir", "unconfinedDir", "clusterId", "consoleOrigin", "pluginProxyOrigin", "gatewayOrigin"] as const) {
    const s = str(o[k]);
    if (s !== undefined) out[k] = s;
  }
  return out;
}

/** The saved settings with `given` laid over them (paths made absolute; OCI layouts added, newest first). */
export function mergeSettings(saved: Settings, given: Settings): Settings {
  const abs = (p: string) => resolve(p);
  return {
    ...saved,
    ...(given.ociLayouts !== undefined ? { ociLayouts: [...new Set([...given.ociLayouts.map(abs), ...(saved.ociLayouts ?? [])])] } : {}),
    ...(given.trustedSigners !== undefined ? { trustedSigners: abs(given.trustedSigners) } : {}),
    ...(given.catalog !== undefined ? { catalog: abs(given.catalog) } : {}),
    ...(given.trustedRoot !== undefined ? { trustedRoot: abs(given.trustedRoot) } : {}),
    ...(given.outDir !== undefined ? { outDir: abs(given.outDir) } : {}),
    ...(given.insecureRegistries !== undefined ? { insecureRegistries: given.insecureRegistries } : {}),
    ...(given.unconfinedDir !== undefined ? { unconfinedDir: abs(given.unconfinedDir) } : {}),
    ...pick(given, ["clusterId", "consoleOrigin", "pluginProxyOrigin", "gatewayOrigin"]),
  };
}

/** The settings of `keys` that `s` gives, as they are (not paths). */
function pick(s: Settings, keys: readonly ("clusterId" | "consoleOrigin" | "pluginProxyOrigin" | "gatewayOrigin")[]): Settings {
  const out: { -readonly [K in keyof Settings]: Settings[K] } = {};
  for (const k of keys) if (s[k] !== undefined) out[k] = s[k];
  return out;
}

/** Saves a data folder's settings. */
export function saveSettings(dir: string, settings: Settings): void {
  writeFileSync(settingsFile(dir), `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
}
