/**
 * The runtime settings of a data folder: what `up` was started with is saved in
 * `<data>/settings.json`, so `reconcile` (or a restarted `up`) sees the same images and signers.
 * Settings given now override the saved ones; relative paths are saved absolute.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { RefusalBudgetLimits } from "../events/index.js";
import type { GatewayLimitsInput } from "../views/index.js";
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
  /**
   * The gateway's limits, in part (docs/adr/0091, 0092): `rate.perUser` and `rate.perInstallation`
   * (`perSecond`, `burst`), `watches` (`perUser`, `perInstallation`, `total`) and `refusals`
   * (`perSource`, `total`, `windowMs`, `maxKeys`); what is not named keeps its default.
   */
  readonly gatewayLimits?: GatewayLimitsInput;
  /** The egress proxy's budget of refusals before identity (`perSource`, `total`, `windowMs`, `maxKeys`), in part. */
  readonly egressRefusals?: Partial<RefusalBudgetLimits>;
}

/** The keys a limits setting may name, each a number or a further level. */
type Shape = { readonly [k: string]: "number" | Shape };
const BUDGET_SHAPE: Shape = { perSource: "number", total: "number", windowMs: "number", maxKeys: "number" };
const RATE_SHAPE: Shape = { perSecond: "number", burst: "number" };
const GATEWAY_LIMITS_SHAPE: Shape = {
  rate: { perUser: RATE_SHAPE, perInstallation: RATE_SHAPE },
  watches: { perUser: "number", perInstallation: "number", total: "number" },
  refusals: BUDGET_SHAPE,
};

/** `v` when it is an object of finite numbers (and nested objects) under the keys `shape` names; else a problem at `path`. */
function limitsOf(v: unknown, shape: Shape, path: string): { ok: true; value: Record<string, unknown> } | { ok: false; problem: string } {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { ok: false, problem: `${path} must be an object` };
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const want = shape[k];
    if (want === undefined) return { ok: false, problem: `${path}.${k} is not a limit` };
    if (want === "number") {
      if (typeof x !== "number" || !Number.isFinite(x)) return { ok: false, problem: `${path}.${k} must be a number` };
      out[k] = x;
    } else {
      const inner = limitsOf(x, want, `${path}.${k}`);
      if (!inner.ok) return inner;
      out[k] = inner.value;
    }
  }
  return { ok: true, value: out };
}

/** The limits a setting names, checked for form (their values are checked where they are used). */
export function checkLimitsSettings(s: Pick<Settings, "gatewayLimits" | "egressRefusals">): void {
  for (const [key, shape] of [["gatewayLimits", GATEWAY_LIMITS_SHAPE], ["egressRefusals", BUDGET_SHAPE]] as const) {
    if (s[key] === undefined) continue;
    const r = limitsOf(s[key], shape, key);
    if (!r.ok) throw new AppError("bad_setting", r.problem, key);
  }
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
  for (const [k, shape] of [["gatewayLimits", GATEWAY_LIMITS_SHAPE], ["egressRefusals", BUDGET_SHAPE]] as const) {
    if (o[k] === undefined) continue;
    const r = limitsOf(o[k], shape, k);
    if (!r.ok) throw new AppError("bad_setting", `${file}: ${r.problem}: fix or remove it`, k);
    (out as Record<string, unknown>)[k] = r.value;
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
    ...(given.gatewayLimits !== undefined ? { gatewayLimits: given.gatewayLimits } : {}),
    ...(given.egressRefusals !== undefined ? { egressRefusals: given.egressRefusals } : {}),
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
