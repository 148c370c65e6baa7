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
import type { AppendOptions, EventLog } from "../events/index.js";
import { applyResources, approve, deleteResource } from "./owner-edits.js";
import { parseResources } from "./resources.js";

const IMAGE = `registry.example/echo@sha256:${"a".repeat(64)}`;
const MANIFEST = { capabilities: ["connector"], egress: [{ host: "a.example" }, { host: "b.example" }], secrets: [], dataTiers: [] };
let dir: string;
let store: EventLog;
let other: EventLog;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-owner-edits-"));
  store = await openStore({ file: join(dir, "log.db") });
  other = await openStore({ file: join(dir, "log.db") });
  await store.append([
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
function withConcurrentWrite(write: () => Promise<unknown>): EventLog {
  let done = false;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== "read" || typeof v !== "function") return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return async (...args: unknown[]) => {
        const out = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (!done) { done = true; await write(); }
        return out;
      };
    },
  });
}

const narrowGrant = () => other.append([{ stream: "plugin/echo", type: "grant.observed", actor: "owner:web:bob", data: { name: "echo", spec: { capabilities: ["connector"], egress: [] } } }]);

describe("approve", () => {
  it("adds exactly what is pending, as the actor's grant edit", async () => {
    const r = await approve(store, "echo", "owner:web:alice");
    expect(r.approved.egress).toEqual([{ host: "b.example", port: 443 }]);
    const g = await store.last("plugin/echo", "grant.observed");
    expect(g?.actor).toBe("owner:web:alice");
    expect(g?.data.spec).toEqual({ capabilities: ["connector"], egress: [{ host: "a.example", port: 443 }, { host: "b.example", port: 443 }], secrets: [], dataTiers: [] });
  });

  it("decides again on the new facts when another writer changed the grant after it read them", async () => {
    const r = await approve(withConcurrentWrite(narrowGrant), "echo", "owner:cli");
    // The other writer narrowed the grant to no egress: both hosts are pending now, and both are added.
    expect(r.approved.egress.map((h) => h.host)).toEqual(["a.example", "b.example"]);
    expect(await store.read({ stream: "plugin/echo", type: "grant.observed" })).toHaveLength(3);
  });

  it("refuses, changing nothing, when the owner names the version they saw and another writer moved it", async () => {
    const seen = await store.version("plugin/echo");
    await expect(approve(withConcurrentWrite(narrowGrant), "echo", "owner:web:alice", seen)).rejects.toThrow(expect.objectContaining({ code: "precondition_failed" }));
    expect((await store.last("plugin/echo", "grant.observed"))?.actor).toBe("owner:web:bob");
  });

  it("lets one of two approvals with the same version win", async () => {
    const seen = await store.version("plugin/echo");
    await approve(store, "echo", "owner:web:alice", seen);
    await expect(approve(store, "echo", "owner:web:bob", seen)).rejects.toThrow(expect.objectContaining({ code: "precondition_failed" }));
  });
});

describe("approve a version that cannot run whatever is approved", () => {
  const SCHEMA = { type: "object", properties: { region: { type: "string" } }, additionalProperties: false };
  const respec = (spec: Record<string, unknown>) => store.append([{ stream: "plugin/echo", type: "plugin.observed", actor: "owner:cli", data: { name: "echo", spec: { image: IMAGE, manifest: MANIFEST, ...spec } } }]);
  const refuse = (reason: string) => store.append([{ stream: "trust", type: "signature.verdict", actor: "reconciler", data: { digest: `sha256:${"a".repeat(64)}`, image: IMAGE, outcome: "refused", reason, signers: [], identities: [], trustRoot: "r", catalog: "c", rules: 1 } }]);

  it.each<[string, () => Promise<unknown>, string, RegExp]>([
    ["its config fails its schema", () => respec({ manifest: { ...MANIFEST, configSchema: SCHEMA }, config: { region: 7 } }), "config_refused", /its config does not match its schema: spec\.config\.region/],
    ["its signature was refused", () => refuse("untrusted_signer"), "signature_refused", /its signature was refused: it is signed, but by no signer you trust \(untrusted_signer\)/],
    ["its spec is invalid", () => respec({ manifest: { ...MANIFEST, egress: [{ host: "not a host" }] } }), "spec_invalid", /its spec is invalid/],
    ["both its signature and its config are refused, naming the signature first", async () => { await refuse("unsigned"); await respec({ manifest: { ...MANIFEST, configSchema: SCHEMA }, config: { region: 7 } }); }, "signature_refused", /signature was refused.*; and its config does not match/],
  ])("refuses when %s, with a code naming the blocker, and records nothing", async (_what, arrange, code, message) => {
    await arrange();
    const head = await store.head();
    let thrown: unknown;
    try { await approve(store, "echo", "owner:cli"); } catch (err) { thrown = err; }
    expect(thrown).toMatchObject({ code, message: expect.stringMatching(message) });
    expect(await store.head()).toBe(head);
  });

  it("approves once the blocker is fixed", async () => {
    await respec({ manifest: { ...MANIFEST, configSchema: SCHEMA }, config: { region: 7 } });
    await respec({ manifest: { ...MANIFEST, configSchema: SCHEMA }, config: { region: "eu" } });
    expect((await approve(store, "echo", "owner:cli")).approved.egress.map((h) => h.host)).toEqual(["b.example"]);
  });
});

describe("delete", () => {
  it("refuses what does not exist, and records the deletion of what does", async () => {
    await expect(deleteResource(store, "plugin", "ghost", "owner:cli")).rejects.toThrow(expect.objectContaining({ code: "not_found" }));
    expect((await deleteResource(store, "grant", "echo", "owner:cli")).kind).toBe("grant");
    await expect(deleteResource(store, "grant", "echo", "owner:cli")).rejects.toThrow(/does not exist/);
  });
});

describe("durability", () => {
  /**
   * At each commit the write makes, whether durability was asked of the log then (inside
   * `durably`, or `{ durable: true }`) and how much durable work was still open once the write
   * returned. What the log makes of it (SQLite: `synchronous=FULL` for those commits, NORMAL after)
   * is the adapter's test (src/events/store.test.ts).
   */
  async function durableAtCommits(write: (log: EventLog) => Promise<unknown>): Promise<{ commits: boolean[]; openAfter: number }> {
    let open = 0;
    const watched = new Proxy(store, {
      get(t, p) {
        if (p === "durably") {
          return async <T>(fn: () => Promise<T>): Promise<T> => {
            open++;
            try { return await t.durably(fn); } finally { open--; }
          };
        }
        if (p === "append" || p === "observe") {
          return async (what: never, opts?: AppendOptions) => {
            const durable = opts?.durable === true;
            if (durable) open++;
            try { return await (t[p] as (w: never, o?: AppendOptions) => Promise<unknown>)(what, opts); } finally { if (durable) open--; }
          };
        }
        const v = Reflect.get(t, p, t) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
    const commits: boolean[] = [];
    const off = store.subscribe(() => commits.push(open > 0));
    try {
      await write(watched);
    } finally {
      off();
    }
    return { commits, openAfter: open };
  }

  const GRANT = "apiVersion: openfief.io/v1alpha1\nkind: PluginGrant\nmetadata: {name: echo}\nspec: {capabilities: [connector], egress: [{host: c.example}]}\n";
  it.each<[string, (log: EventLog) => Promise<unknown>]>([
    ["apply", (log) => applyResources(log, parseResources(GRANT, "grant.yaml"), "owner:web:alice")],
    ["approve", (log) => approve(log, "echo", "owner:web:alice")],
    ["delete", (log) => deleteResource(log, "grant", "echo", "owner:web:alice")],
  ])("puts %s on disk before it returns (a durable commit), and leaves no durable work open", async (_what, write) => {
    expect(await durableAtCommits(write)).toEqual({ commits: [true], openAfter: 0 });
  });

  it("leaves other appends (the reconciler's, the gateway's) not durable", async () => {
    expect(await durableAtCommits((log) => log.append([{ stream: "plugin/echo", type: "workload.applied", actor: "reconciler", data: { name: "echo", target: "directory", ok: true } }]))).toEqual({ commits: [false], openAfter: 0 });
  });
});
