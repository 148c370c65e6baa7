/** Shared helpers of the event store tests: temp dirs, a stepping clock, sample events. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NewEvent } from "../../src/events/types.js";

/** A fresh temp dir and a function removing it. */
export function tempDir(): { dir: string; file: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "openfief-events-"));
  return { dir, file: join(dir, "events.db"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A clock that starts at `start` and moves one second each call. */
export function steppingClock(start = Date.parse("2026-01-01T00:00:00Z")): () => Date {
  let t = start;
  return () => new Date((t += 1000) - 1000);
}

export const DIGEST_A = "sha256:" + "a".repeat(64);
export const DIGEST_B = "sha256:" + "b".repeat(64);
export const IMAGE_A = `registry.example/echo@${DIGEST_A}`;
export const IMAGE_B = `registry.example/echo@${DIGEST_B}`;

/** A valid-looking manifest. */
export const MANIFEST = { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] };

/** `plugin.observed` for `name` running `image`. */
export function pluginObserved(name: string, image = IMAGE_A, actor = "cluster"): NewEvent {
  return { stream: `plugin/${name}`, type: "plugin.observed", actor, data: { name, spec: { image, manifest: MANIFEST } } };
}

/** A grant spec granting what MANIFEST asks for. */
export const GRANT = { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] };

/** `grant.observed` granting what MANIFEST asks for. */
export function grantObserved(name: string, actor = "owner:cli"): NewEvent {
  return { stream: `plugin/${name}`, type: "grant.observed", actor, data: { name, spec: GRANT } };
}

/** `signature.verdict` for a digest. */
export function verdict(digest: string, image: string, outcome: "verified" | "unverified" | "refused" = "verified"): NewEvent {
  return {
    stream: "trust", type: "signature.verdict", actor: "trust",
    data: { digest, image, outcome, signers: outcome === "refused" ? [] : [{ name: "acme", kind: "catalog" }], identities: [], trustRoot: "r".repeat(64), catalog: "c".repeat(64), rules: 1 },
  };
}

/** `egress.decision`. */
export function egressDecision(plugin: string, allowed = true): NewEvent {
  return { stream: `egress/${plugin}`, type: "egress.decision", actor: "egress", data: { plugin, host: "api.example.com", port: 443, allowed, reason: allowed ? "granted" : "not granted", rules: 1 } };
}

/** `config.verdict` for a plugin's image. */
export function configVerdict(name: string, image: string, ok = true): NewEvent {
  return { stream: `plugin/${name}`, type: "config.verdict", actor: "reconciler", data: { name, image, rules: 1, ok, errors: ok ? [] : [{ code: "config_mismatch", path: "config.url", message: "must be a string" }] } };
}

/** A manifest asking for one more host than MANIFEST. */
export const MANIFEST_WIDER = { ...MANIFEST, egress: [...MANIFEST.egress, { host: "extra.example.com", port: 443 }] };
