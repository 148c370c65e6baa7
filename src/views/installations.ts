/**
 * Installations read from the event log (docs/adr/0024): a Plugin is an installation; its ID is
 * `<name>.<seq>`, the seq of the `plugin.observed` that created it, so a Plugin deleted and made
 * again is a new installation and tokens of the old one stop working. The pinned definition is the
 * manifest of the version the latest rollout decision runs; its effective rules are taken under
 * the grant as it stands now, so a narrowed or revoked grant counts at once.
 */
import { createHash } from "node:crypto";
import { canonicalize } from "json-canonicalize";
import { gatewayStream, pluginStream } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import {
  EMPTY_GRANT_SPEC,
  NAMESPACE,
  effective,
  isValidPluginName,
  manifestToJSON,
  parseGrant,
  parseImageRef,
  parseManifest,
  serviceAccountName,
} from "../plugins/index.js";
import type { GrantSpec, Manifest } from "../plugins/index.js";
import type { Installation, Installations } from "./ports.js";

/** `sha256:<hex>` of a manifest's canonical JSON (RFC 8785 over its sorted form): its definition hash. */
export function definitionHash(manifest: Manifest): string {
  return `sha256:${createHash("sha256").update(canonicalize(manifestToJSON(manifest))).digest("hex")}`;
}

/** Splits an installation ID `<name>.<seq>`; null when it is not one. */
export function parseInstallationId(id: string): { name: string; seq: number } | null {
  const dot = id.lastIndexOf(".");
  if (dot <= 0 || id.length > 80) return null;
  const name = id.slice(0, dot);
  const digits = id.slice(dot + 1);
  if (!isValidPluginName(name) || !/^[1-9][0-9]{0,15}$/.test(digits)) return null;
  return { name, seq: Number(digits) };
}

/** {@link Installations} over an event log, cached per version of the Plugin's stream. */
export class LogInstallations implements Installations {
  readonly #store: EventLog;
  readonly #cache = new Map<string, { version: number; value: Installation | null }>();

  constructor(store: EventLog) {
    this.#store = store;
  }

  async get(id: string): Promise<Installation | null> {
    const parsed = parseInstallationId(id);
    if (parsed === null) return null;
    const current = await this.byName(parsed.name);
    return current !== null && current.id === id ? current : null;
  }

  async byName(name: string): Promise<Installation | null> {
    if (!isValidPluginName(name)) return null;
    const stream = pluginStream(name);
    const version = await this.#store.version(stream);
    const hit = this.#cache.get(name);
    if (hit !== undefined && hit.version === version) return hit.value;
    const value = await this.#read(name, stream);
    if (this.#cache.size > 4096) this.#cache.clear();
    this.#cache.set(name, { version, value });
    return value;
  }

  async #read(name: string, stream: string): Promise<Installation | null> {
    const store = this.#store;
    const observed = await store.last(stream, "plugin.observed");
    if (observed === null) return null;
    const deleted = await store.last(stream, "plugin.deleted");
    const isDeleted = deleted !== null && deleted.seq > observed.seq;
    if (isDeleted && !(await this.#tearingDown(stream, deleted.seq))) return null;
    // The installation began with the first observation after the deletion before the last one.
    const before = (await store.lookups.lastOf(stream, ["plugin.deleted"], observed.seq))?.seq ?? 0;
    const start = (await store.lookups.firstAfter(stream, "plugin.observed", before))?.seq ?? observed.seq;
    const pinned = await this.#pinned(name, stream, observed.data.spec);
    return {
      id: `${name}.${start}`,
      name,
      state: isDeleted ? "deleting" : pinned.view ? "ready" : "inactive",
      pluginName: pinned.pluginName,
      pluginVersion: pinned.pluginVersion,
      definitionHash: pinned.definitionHash,
      rules: pinned.rules,
      serviceAccount: { namespace: NAMESPACE, name: serviceAccountName(name) },
      ui: pinned.ui,
    };
  }

  /**
   * The pinned version (what the latest decision runs; the spec's, for names only, when nothing
   * runs) and its effective permissions under the grant as it stands now.
   */
  async #pinned(name: string, stream: string, spec: unknown): Promise<{ pluginName: string; pluginVersion: string; definitionHash: string; rules: Installation["rules"]; view: boolean; ui: Installation["ui"] }> {
    const run = (await this.#store.last(stream, "rollout.decided"))?.data.plan.run ?? null;
    const asked = (spec ?? {}) as { image?: unknown; manifest?: unknown };
    const manifest = parseManifest(run === null ? asked.manifest : run.manifest);
    const image = parseImageRef(run === null ? asked.image : run.image);
    const e = run !== null && manifest.ok ? effective(manifest.value, await this.#grant(name, stream)) : null;
    const granted = e !== null && e.ok ? e.value : null;
    return {
      pluginName: image.ok ? image.value.name : "",
      pluginVersion: image.ok ? image.value.digest : "",
      definitionHash: manifest.ok ? definitionHash(manifest.value) : "",
      rules: granted === null ? [] : granted.rbac,
      view: granted !== null && granted.capabilities.includes("view"),
      ui: runningUi(run, manifest),
    };
  }

  /** The grant as it stands now (none when deleted or unreadable). */
  async #grant(name: string, stream: string): Promise<GrantSpec> {
    const granted = await this.#store.last(stream, "grant.observed");
    const revoked = await this.#store.last(stream, "grant.deleted");
    if (granted === null || (revoked !== null && revoked.seq > granted.seq)) return EMPTY_GRANT_SPEC;
    const g = parseGrant({ name, spec: granted.data.spec });
    return g.ok ? g.value.spec : EMPTY_GRANT_SPEC;
  }

  /** Whether a deleted Plugin's workload still runs or its removal is not applied yet. */
  async #tearingDown(stream: string, deletedSeq: number): Promise<boolean> {
    const desired = await this.#store.last(stream, "workload.desired");
    if (desired === null) return false;
    if (desired.data.running) return true;
    if (desired.seq < deletedSeq) return false;
    const applied = await this.#store.last(stream, "workload.applied");
    return !(applied !== null && applied.seq > desired.seq && applied.data.ok);
  }
}

/** The UI bundle of a version a decision runs: only that version was verified, so only its bundle is served. */
function runningUi(run: unknown, manifest: ReturnType<typeof parseManifest>): Installation["ui"] {
  return run !== null && manifest.ok ? (manifest.value.ui ?? null) : null;
}

/** The stream of an installation's gateway decisions. */
export function decisionsStream(installationName: string): string {
  return gatewayStream(installationName);
}
