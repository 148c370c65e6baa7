import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { KubernetesSource } from "../../src/kube/source.js";
import type { CustomResource, Timers } from "../../src/kube/source.js";
import { FakeApiServer } from "./fake-apiserver.js";

const RELIST_MS = 300_000;
const NS = "openfief";
const PLUGINS = "/apis/openfief.io/v1alpha1/namespaces/openfief/plugins";

function plugin(name: string, image = "a"): Record<string, unknown> {
  return {
    apiVersion: "openfief.io/v1alpha1",
    kind: "Plugin",
    metadata: { name, namespace: NS },
    spec: { image: `ghcr.io/acme/${name}@sha256:${image.repeat(64)}`, manifest: { capabilities: ["connector"] } },
  };
}

function grant(name: string): Record<string, unknown> {
  return { apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { name, namespace: NS }, spec: { capabilities: ["connector"] } };
}

async function until(what: string, predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (predicate()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never happened: ${what}`);
}

/** Timers that record every delay, run restarts at once and hold relists for the test to fire. */
class TestTimers implements Timers {
  readonly delays: number[] = [];
  relists: Array<() => void> = [];
  setTimeout(fn: () => void, ms: number): unknown {
    this.delays.push(ms);
    if (ms === RELIST_MS) {
      this.relists.push(fn);
      return fn;
    }
    return setTimeout(fn, 1);
  }
  clearTimeout(h: unknown): void {
    if (typeof h === "function") this.relists = this.relists.filter((f) => f !== h);
    else clearTimeout(h as NodeJS.Timeout);
  }
  fireRelist(): void {
    const fns = this.relists;
    this.relists = [];
    for (const fn of fns) fn();
  }
}

describe("KubernetesSource against the fake API server", () => {
  let server: FakeApiServer;
  let timers: TestTimers;
  let source: KubernetesSource;
  let seen: Array<[string, string, string | null]>;
  let errors: Array<[string, number]>;
  let relists: number;

  function last(kind: string, name: string): string | null | undefined {
    return seen.filter(([k, n]) => k === kind && n === name).at(-1)?.[2];
  }

  beforeEach(async () => {
    server = await FakeApiServer.start();
    timers = new TestTimers();
    seen = [];
    errors = [];
    relists = 0;
    const image = (o: CustomResource | null): string | null => (o === null ? null : String((o.spec as { image?: unknown } | undefined)?.image ?? ""));
    source = new KubernetesSource(
      server.kubeConfig(),
      {
        onPlugin: (n, o) => seen.push(["plugin", n, image(o)]),
        onGrant: (n, o) => seen.push(["grant", n, o === null ? null : "present"]),
        onRelist: () => (relists += 1),
        onError: (_kind, _msg, delay) => errors.push([_kind, delay]),
      },
      { timers, initialBackoffMs: 100, maxBackoffMs: 1_000, relistIntervalMs: RELIST_MS, now: () => new Date(0) },
    );
  });
  afterEach(async () => {
    await source.stop();
    await server.close();
  });

  it("emits every Plugin and PluginGrant on start and records the time of the list", async () => {
    server.put(plugin("nbp-fx"));
    server.put(grant("nbp-fx"));
    expect(source.lastSuccessfulList()).toBeNull();
    await source.start();
    expect(last("plugin", "nbp-fx")).toMatch(/nbp-fx@sha256/);
    expect(last("grant", "nbp-fx")).toBe("present");
    expect(source.lastSuccessfulList()).toEqual(new Date(0));
    expect(source.synced()).toBe(true);
  });

  it("delivers a change and a deletion seen on the watch", async () => {
    server.put(plugin("nbp-fx"));
    await source.start();
    await until("plugin watch open", () => server.openWatches("plugins") === 1);
    server.put(plugin("nbp-fx", "b"));
    await until("update", () => last("plugin", "nbp-fx")?.endsWith("b".repeat(64)) === true);
    server.remove("openfief.io/v1alpha1", "Plugin", NS, "nbp-fx");
    await until("delete", () => last("plugin", "nbp-fx") === null);
  });

  it("restarts the informer with growing backoff after HTTP 500s on the watch, then delivers events again", async () => {
    for (let i = 0; i < 3; i++) server.failNextWatch("plugins", "500");
    await source.start();
    await until("watch open after the failures", () => server.openWatches("plugins") === 1);
    expect(errors.filter(([k]) => k === "plugins").map(([, d]) => d)).toEqual([100, 200, 400]);
    server.put(plugin("late"));
    await until("event after restart", () => last("plugin", "late") !== undefined);
  });

  it("never waits longer than the longest backoff", async () => {
    for (let i = 0; i < 6; i++) server.failNextWatch("plugingrants", "500");
    await source.start();
    await until("grant watch open after the failures", () => server.openWatches("plugingrants") === 1);
    expect(errors.filter(([k]) => k === "plugingrants").map(([, d]) => d)).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("keeps following after the watch connection is dropped mid-stream", async () => {
    await source.start();
    await until("plugin watch open", () => server.openWatches("plugins") === 1);
    const watchesBefore = server.requests.filter((r) => r.path === PLUGINS && r.query["watch"] === "true").length;
    server.dropWatches("plugins");
    await until("a new watch", () => server.requests.filter((r) => r.path === PLUGINS && r.query["watch"] === "true").length > watchesBefore);
    await until("watch open again", () => server.openWatches("plugins") === 1);
    server.put(plugin("after-drop"));
    await until("event after drop", () => last("plugin", "after-drop") !== undefined);
  });

  it("relists after a watch ERROR 410 and reports what vanished meanwhile", async () => {
    server.put(plugin("gone-soon"));
    await source.start();
    await until("plugin watch open", () => server.openWatches("plugins") === 1);
    server.silenceWatches("plugins");
    server.remove("openfief.io/v1alpha1", "Plugin", NS, "gone-soon");
    const listsBefore = server.requests.filter((r) => r.method === "GET" && r.path === PLUGINS && r.query["watch"] === undefined).length;
    server.expireWatches("plugins");
    await until("a relist", () => server.requests.filter((r) => r.method === "GET" && r.path === PLUGINS && r.query["watch"] === undefined).length > listsBefore);
    await until("vanished reported", () => last("plugin", "gone-soon") === null);
  });

  it("relists periodically, re-emitting everything, so a silent watch misses nothing for long", async () => {
    server.put(plugin("a1"));
    await source.start();
    await until("plugin watch open", () => server.openWatches("plugins") === 1);
    server.silenceWatches("plugins");
    server.put(plugin("b1"));
    server.remove("openfief.io/v1alpha1", "Plugin", NS, "a1");
    const before = seen.length;
    timers.fireRelist();
    await until("relist done", () => relists === 2);
    expect(seen.slice(before)).toEqual([
      ["plugin", "b1", expect.stringContaining("b1@sha256")],
      ["plugin", "a1", null],
    ]);
    expect(timers.relists).toHaveLength(1);
  });
});
