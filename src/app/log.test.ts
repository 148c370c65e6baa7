/** Reading the log as every face does: filtered, paged forwards and backwards, followed. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog, KnownEvent } from "../events/index.js";
import { eventSentence, followLog, readLog, readLogTail } from "./log.js";

let dir: string;
let store: EventLog;

function decision(plugin: string, host: string, allowed = true) {
  return { stream: `egress/${plugin}`, type: "egress.decision", actor: "egress", data: { plugin, host, port: 443, allowed, reason: allowed ? "listed" : "not_listed", rules: 1 } };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-log-"));
  store = await openStore({ file: join(dir, "log.db") });
  // seq 1..30: a and b take turns; every third is b's grant.
  for (let i = 1; i <= 30; i++) {
    await store.append([i % 3 === 0 ? { stream: "plugin/b", type: "grant.observed", actor: "owner:cli", data: { name: "b", spec: { n: i } } } : decision(i % 2 === 0 ? "a" : "b", `h${i}.example`)]);
  }
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const seqs = (events: readonly KnownEvent[]) => events.map((e) => e.seq);

describe("a page of the log", () => {
  it.each<[string, Parameters<typeof readLog>[1], number[], number | null]>([
    ["is every event after a seq, up to the limit", { afterSeq: 25, limit: 3 }, [26, 27, 28], 28],
    ["says there is no next page when it is the last", { afterSeq: 28, limit: 5 }, [29, 30], null],
    ["holds a plugin's own stream and its egress decisions", { plugin: "b", afterSeq: 20 }, [21, 23, 24, 25, 27, 29, 30], null],
    ["keeps to the limit across a plugin's two streams", { plugin: "b", limit: 3 }, [1, 3, 5], 5],
    ["filters by type", { types: ["grant.observed"], afterSeq: 20 }, [21, 24, 27, 30], null],
  ])("%s", async (_what, q, expected, next) => {
    const page = await readLog(store, q);
    expect(seqs(page.events)).toEqual(expected);
    expect(page.next).toBe(next);
    expect(page.head).toBe(30);
  });

  it.each<[string, Parameters<typeof readLog>[1], RegExp]>([
    ["refuses a type the catalog does not define", { types: ["no.such"] }, /unknown event type "no.such"/],
    ["refuses a plugin name no plugin can have", { plugin: "Not A Name" }, /invalid plugin name/],
  ])("%s", async (_what, q, message) => {
    await expect(readLog(store, q)).rejects.toThrow(message);
  });
});

describe("the latest events", () => {
  it.each<[string, Parameters<typeof readLogTail>[1], Parameters<typeof readLogTail>[2], number[], number | null]>([
    ["are the newest, oldest first", {}, { limit: 4 }, [27, 28, 29, 30], 27],
    ["page back from before a seq", {}, { limit: 4, beforeSeq: 27 }, [23, 24, 25, 26], 23],
    ["end at the first event", {}, { limit: 4, beforeSeq: 3 }, [1, 2], null],
    ["are filtered like a page", { plugin: "a" }, { limit: 3 }, [22, 26, 28], 22],
    ["find rare events far back", { types: ["grant.observed"] }, { limit: 2, beforeSeq: 10 }, [6, 9], 6],
  ])("%s", async (_what, q, o, expected, older) => {
    const tail = await readLogTail(store, q, o);
    expect(seqs(tail.events)).toEqual(expected);
    expect(tail.older).toBe(older);
  });
});

describe("following the log", () => {
  it("hands over every new matching event once, in order, and none after it stops", async () => {
    const seen: number[] = [];
    let resolve: () => void = () => undefined;
    const two = new Promise<void>((r) => (resolve = r));
    const stop = followLog(store, { plugin: "a" }, 30, (events) => {
      seen.push(...seqs(events));
      if (seen.length >= 2) resolve();
    }, { pollMs: 10_000 });
    await store.append([decision("b", "x.example"), decision("a", "y.example")]);
    await store.append([decision("a", "z.example")]);
    await two;
    stop();
    await store.append([decision("a", "after.example")]);
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([32, 33]);
  });

  it("sees what another connection appends, at its next poll", async () => {
    const other = await openStore({ file: join(dir, "log.db") });
    try {
      const got = new Promise<number[]>((resolve) => {
        const stop = followLog(store, {}, 30, (events) => { stop(); resolve(seqs(events)); }, { pollMs: 20 });
      });
      await other.append([decision("a", "other.example")]);
      expect(await got).toEqual([31]);
    } finally {
      await other.close();
    }
  });
});

describe("a plugin's story in the log", () => {
  const DIGEST = `sha256:${"c".repeat(64)}`;
  const OTHER = `sha256:${"d".repeat(64)}`;
  const MANIFEST = { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] };
  const verdict = (digest: string, manifest?: string) => ({
    stream: "trust", type: "signature.verdict", actor: "reconciler",
    data: { digest, image: `registry.example/c@${digest}`, outcome: "unverified", signers: [{ name: "me", kind: "owner" }], identities: [], trustRoot: "r", catalog: "c", rules: 1, ...(manifest === undefined ? {} : { manifest }) },
  });

  it("holds the signature verdicts about the images the plugin asked for, and no other", async () => {
    const [observed] = await store.append([{ stream: "plugin/c", type: "plugin.observed", actor: "owner:cli", data: { name: "c", spec: { image: `registry.example/c@${DIGEST}`, manifest: MANIFEST } } }]);
    const [mine] = await store.append([verdict(DIGEST)]);
    const [elses] = await store.append([verdict(OTHER)]);
    const [otherManifest] = await store.append([verdict(DIGEST, "e".repeat(64))]);
    const [config] = await store.append([{ stream: "plugin/c", type: "config.verdict", actor: "reconciler", data: { name: "c", image: `registry.example/c@${DIGEST}`, rules: 1, ok: true, errors: [] } }]);
    const page = await readLog(store, { plugin: "c" });
    expect(seqs(page.events)).toEqual([observed?.seq, mine?.seq, config?.seq]);
    expect(seqs(page.events)).not.toContain(elses?.seq);
    expect(seqs(page.events)).not.toContain(otherManifest?.seq);
    expect(seqs((await readLog(store, { plugin: "c", types: ["signature.verdict"] })).events)).toEqual([mine?.seq]);
    expect(seqs((await readLog(store, { plugin: "c", types: ["config.verdict"] })).events)).toEqual([config?.seq]);
    expect(seqs((await readLogTail(store, { plugin: "c" }, { limit: 2 })).events)).toEqual([mine?.seq, config?.seq]);
  });

  it("words a grant edit as what it changed against the grant just before it", async () => {
    const grant = (hosts: string[]) => ({ capabilities: ["connector"], egress: hosts.map((host) => ({ host, port: 443 })), secrets: [], dataTiers: [] });
    const [first] = await store.append([{ stream: "plugin/g", type: "grant.observed", actor: "owner:cli", data: { name: "g", spec: grant(["a.example"]) } }]);
    const [wider] = await store.append([{ stream: "plugin/g", type: "grant.observed", actor: "owner:web:root", data: { name: "g", spec: grant(["a.example", "b.example"]) } }]);
    const [gone] = await store.append([{ stream: "plugin/g", type: "grant.deleted", actor: "owner:cli", data: { name: "g" } }]);
    expect(await Promise.all([first, wider, gone].map((e) => (e === undefined ? Promise.resolve("") : eventSentence(store, e))))).toEqual([
      "the grant was set by owner:cli: +capability connector, +egress a.example:443",
      "the grant was set by owner:web:root: +egress b.example:443",
      "the grant was deleted by owner:cli: \u2212capability connector, \u2212egress a.example:443, \u2212egress b.example:443",
    ]);
  });
});
