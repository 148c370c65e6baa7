/**
 * The owner's writes expect the stream version they read before their facts: a write by another
 * process in between is a conflict, retried on the new facts (or, with the version the owner saw,
 * refused as `precondition_failed`), never a decision on stale facts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventStore } from "../events/index.js";
import { applyResources, approve, deleteResource } from "./owner-edits.js";
import { parseResources } from "./resources.js";

const IMAGE = `registry.example/echo@sha256:${"a".repeat(64)}`;
const MANIFEST = { capabilities: ["connector"], egress: [{ host: "a.example" }, { host: "b.example" }], secrets: [], dataTiers: [] };
let dir: string;
let store: EventStore;
let other: EventStore;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-owner-edits-"));
  store = await openStore({ file: join(dir, "log.db") });
  other = await openStore({ file: join(dir, "log.db") });
  store.append([
    { stream: "plugin/echo", type: "plugin.observed", actor: "owner:cli", data: { name: "echo", spec: { image: IMAGE, manifest: MANIFEST } } },
    { stream: "plugin/echo", type: "grant.observed", actor: "owner:cli", data: { name: "echo", spec: { capabilities: ["connector"], egress: [{ host: "a.example" }] } } },
  ]);
});

afterEach(async () => {
  await store.close();
  await other.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The store, with another process's write slipped in right after the use case first reads its facts. */
function withConcurrentWrite(write: () => void): EventStore {
  let done = false;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== "read" || typeof v !== "function") return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return (...args: unknown[]) => {
        const out = (v as (...a: unknown[]) => unknown).apply(target, args);
        if (!done) { done = true; write(); }
        return out;
      };
    },
  });
}

const narrowGrant = () => other.append([{ stream: "plugin/echo", type: "grant.observed", actor: "owner:web:bob", data: { name: "echo", spec: { capabilities: ["connector"], egress: [] } } }]);

describe("approve", () => {
  it("adds exactly what is pending, as the actor's grant edit", () => {
    const r = approve(store, "echo", "owner:web:alice");
    expect(r.approved.egress).toEqual([{ host: "b.example", port: 443 }]);
    const g = store.last("plugin/echo", "grant.observed");
    expect(g?.actor).toBe("owner:web:alice");
    expect(g?.data.spec).toEqual({ capabilities: ["connector"], egress: [{ host: "a.example", port: 443 }, { host: "b.example", port: 443 }], secrets: [], dataTiers: [] });
  });

  it("decides again on the new facts when another writer changed the grant after it read them", () => {
    const r = approve(withConcurrentWrite(narrowGrant), "echo", "owner:cli");
    // The other writer narrowed the grant to no egress: both hosts are pending now, and both are added.
    expect(r.approved.egress.map((h) => h.host)).toEqual(["a.example", "b.example"]);
    expect(store.read({ stream: "plugin/echo", type: "grant.observed" })).toHaveLength(3);
  });

  it("refuses, changing nothing, when the owner names the version they saw and another writer moved it", () => {
    const seen = store.version("plugin/echo");
    expect(() => approve(withConcurrentWrite(narrowGrant), "echo", "owner:web:alice", seen)).toThrow(expect.objectContaining({ code: "precondition_failed" }));
    expect(store.last("plugin/echo", "grant.observed")?.actor).toBe("owner:web:bob");
  });

  it("lets one of two approvals with the same version win", () => {
    const seen = store.version("plugin/echo");
    approve(store, "echo", "owner:web:alice", seen);
    expect(() => approve(store, "echo", "owner:web:bob", seen)).toThrow(expect.objectContaining({ code: "precondition_failed" }));
  });
});

describe("approve a version that cannot run whatever is approved", () => {
  const SCHEMA = { type: "object", properties: { region: { type: "string" } }, additionalProperties: false };
  const respec = (spec: Record<string, unknown>) => store.append([{ stream: "plugin/echo", type: "plugin.observed", actor: "owner:cli", data: { name: "echo", spec: { image: IMAGE, manifest: MANIFEST, ...spec } } }]);
  const refuse = (reason: string) => store.append([{ stream: "trust", type: "signature.verdict", actor: "reconciler", data: { digest: `sha256:${"a".repeat(64)}`, image: IMAGE, outcome: "refused", reason, signers: [], identities: [], trustRoot: "r", catalog: "c" } }]);

  it.each<[string, () => void, string, RegExp]>([
    ["its config fails its schema", () => respec({ manifest: { ...MANIFEST, configSchema: SCHEMA }, config: { region: 7 } }), "config_refused", /its config does not match its schema: spec\.config\.region/],
    ["its signature was refused", () => refuse("untrusted_signer"), "signature_refused", /its signature was refused: it is signed, but by no signer you trust \(untrusted_signer\)/],
    ["its spec is invalid", () => respec({ manifest: { ...MANIFEST, egress: [{ host: "not a host" }] } }), "spec_invalid", /its spec is invalid/],
    ["both its signature and its config are refused, naming the signature first", () => { refuse("unsigned"); respec({ manifest: { ...MANIFEST, configSchema: SCHEMA }, config: { region: 7 } }); }, "signature_refused", /signature was refused.*; and its config does not match/],
  ])("refuses when %s, with a code naming the blocker, and records nothing", (_what, arrange, code, message) => {
    arrange();
    const head = store.head();
    let thrown: unknown;
    try { approve(store, "echo", "owner:cli"); } catch (err) { thrown = err; }
    expect(thrown).toMatchObject({ code, message: expect.stringMatching(message) });
    expect(store.head()).toBe(head);
  });

  it("approves once the blocker is fixed", () => {
    respec({ manifest: { ...MANIFEST, configSchema: SCHEMA }, config: { region: 7 } });
    respec({ manifest: { ...MANIFEST, configSchema: SCHEMA }, config: { region: "eu" } });
    expect(approve(store, "echo", "owner:cli").approved.egress.map((h) => h.host)).toEqual(["b.example"]);
  });
});

describe("delete", () => {
  it("refuses what does not exist, and records the deletion of what does", () => {
    expect(() => deleteResource(store, "plugin", "ghost", "owner:cli")).toThrow(expect.objectContaining({ code: "not_found" }));
    expect(deleteResource(store, "grant", "echo", "owner:cli").kind).toBe("grant");
    expect(() => deleteResource(store, "grant", "echo", "owner:cli")).toThrow(/does not exist/);
  });
});

describe("durability", () => {
  /** SQLite's `synchronous` on the store's connection at each commit the write makes (2 is FULL: synced before the commit returns). */
  function syncAtCommits(write: () => unknown): number[] {
    const seen: number[] = [];
    const off = store.subscribe(() => seen.push(store.database.pragma("synchronous", { simple: true }) as number));
    try {
      write();
    } finally {
      off();
    }
    return seen;
  }

  const GRANT = "apiVersion: openfief.io/v1alpha1\nkind: PluginGrant\nmetadata: {name: echo}\nspec: {capabilities: [connector], egress: [{host: c.example}]}\n";
  it.each<[string, () => unknown]>([
    ["apply", () => applyResources(store, parseResources(GRANT, "grant.yaml"), "owner:web:alice")],
    ["approve", () => approve(store, "echo", "owner:web:alice")],
    ["delete", () => deleteResource(store, "grant", "echo", "owner:web:alice")],
  ])("puts %s on disk before it returns (synchronous=FULL), and leaves the connection at NORMAL", (_what, write) => {
    expect(syncAtCommits(write)).toEqual([2]);
    expect(store.database.pragma("synchronous", { simple: true })).toBe(1);
  });

  it("leaves other appends (the reconciler's, the gateway's) at NORMAL", () => {
    expect(syncAtCommits(() => store.append([{ stream: "plugin/echo", type: "workload.applied", actor: "reconciler", data: { name: "echo", target: "directory", ok: true } }]))).toEqual([1]);
  });
});
