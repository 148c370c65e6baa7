/** DnsResolver against a real DNS server on 127.0.0.1: every answer the proxy must handle. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DNS_CACHE_MAX_TTL_MS, DnsResolver } from "../../src/egress/resolver.js";
import { startDnsServer, type TestDnsServer } from "./support/dns-server.js";

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer({
    "public.test": { kind: "answer", addresses: ["8.8.4.4"] },
    "mixed.test": { kind: "answer", addresses: ["8.8.4.4", "10.0.0.7", "2001:4860:4860::8844"] },
    "v6only.test": { kind: "answer", addresses: ["2001:4860:4860::8844"] },
    "empty.test": { kind: "answer", addresses: [] },
    "nx.test": { kind: "nxdomain" },
    "servfail.test": { kind: "servfail" },
    "silent.test": { kind: "silent" },
    "rebind.test": { kind: "sequence", answers: [["8.8.8.8"], ["10.0.0.1"]], ttl: 0 },
    "ttl10.test": { kind: "answer", addresses: ["8.8.4.4", "2001:4860:4860::8844"], ttl: 10 },
    "ttl0.test": { kind: "answer", addresses: ["8.8.4.4"], ttl: 0 },
    "long.test": { kind: "answer", addresses: ["8.8.4.4"], ttl: 86_400 },
    "n1.test": { kind: "answer", addresses: ["8.8.4.4"], ttl: 60 },
    "n2.test": { kind: "answer", addresses: ["8.8.4.4"], ttl: 60 },
    "n3.test": { kind: "answer", addresses: ["8.8.4.4"], ttl: 60 },
    "rebind-ttl.test": { kind: "sequence", answers: [["8.8.8.8"], ["10.0.0.1"]], ttl: 0 },
  });
});
afterAll(async () => {
  await dns.close();
});

describe("DnsResolver", () => {
  const resolver = (): DnsResolver => new DnsResolver({ servers: [dns.server], timeoutMs: 300 });

  it.each([
    ["public.test", { ok: true, addresses: ["8.8.4.4"] }],
    ["public.test.", { ok: true, addresses: ["8.8.4.4"] }],
    ["mixed.test", { ok: true, addresses: ["8.8.4.4", "10.0.0.7", "2001:4860:4860::8844"] }],
    ["v6only.test", { ok: true, addresses: ["2001:4860:4860::8844"] }],
    ["empty.test", { ok: false, code: "dns_no_addresses" }],
    ["nx.test", { ok: false, code: "dns_nxdomain" }],
    ["servfail.test", { ok: false, code: "dns_servfail" }],
    ["silent.test", { ok: false, code: "dns_timeout" }],
  ])("resolves %s to %j", async (name, expected) => {
    expect(await resolver().resolve(name)).toEqual(expected);
  });

  it("asks again every time, so a rebinding answer is seen", async () => {
    const r = resolver();
    expect(await r.resolve("rebind.test")).toEqual({ ok: true, addresses: ["8.8.8.8"] });
    expect(await r.resolve("rebind.test")).toEqual({ ok: true, addresses: ["10.0.0.1"] });
  });

  it("refuses a TTL cap above 30 s and a negative name bound", () => {
    expect(() => new DnsResolver({ cacheMaxTtlMs: DNS_CACHE_MAX_TTL_MS + 1 })).toThrow(RangeError);
    expect(() => new DnsResolver({ cacheMaxNames: -1 })).toThrow(RangeError);
  });

  it("asks DNS for a name that looks numeric instead of reading it as an address", async () => {
    // dns.lookup would turn this into 127.0.0.1 without asking; the resolver asks and gets NXDOMAIN.
    expect(await resolver().resolve("0177.0.0.1")).toEqual({ ok: false, code: "dns_nxdomain" });
    expect(dns.queries.get("0177.0.0.1")).toBeGreaterThan(0);
  });
});

describe("DnsResolver's answer cache", () => {
  const clock = { t: 1_000_000, now(): number { return this.t; } };
  const cached = (opts: { cacheMaxNames?: number } = {}): DnsResolver => new DnsResolver({ servers: [dns.server], timeoutMs: 300, clock, ...opts });
  const asked = (name: string): number => dns.queries.get(name) ?? 0;

  it("reuses an answer until its TTL has passed, then asks again", async () => {
    const r = cached();
    const before = asked("ttl10.test");
    const first = await r.resolve("ttl10.test");
    expect(first).toEqual({ ok: true, addresses: ["8.8.4.4", "2001:4860:4860::8844"] });
    expect(asked("ttl10.test")).toBe(before + 2); // A and AAAA
    clock.t += 9_999;
    expect(await r.resolve("TTL10.test.")).toEqual(first); // same name: ASCII case and one trailing dot
    expect(asked("ttl10.test")).toBe(before + 2);
    clock.t += 1;
    expect(await r.resolve("ttl10.test")).toEqual(first);
    expect(asked("ttl10.test")).toBe(before + 4);
  });

  it("never caches an answer with TTL 0", async () => {
    const r = cached();
    const before = asked("ttl0.test");
    await r.resolve("ttl0.test");
    await r.resolve("ttl0.test");
    expect(asked("ttl0.test")).toBe(before + 4);
    expect(r.cachedNames).toBe(0);
  });

  it("keeps no answer longer than 30 s, whatever its TTL", async () => {
    const r = cached();
    const before = asked("long.test");
    await r.resolve("long.test");
    clock.t += DNS_CACHE_MAX_TTL_MS - 1;
    await r.resolve("long.test");
    expect(asked("long.test")).toBe(before + 2);
    clock.t += 1;
    await r.resolve("long.test");
    expect(asked("long.test")).toBe(before + 4);
  });

  it("holds a bounded number of names, dropping the oldest", async () => {
    const r = cached({ cacheMaxNames: 2 });
    const before = ["n1.test", "n2.test", "n3.test"].map(asked);
    for (const n of ["n1.test", "n2.test", "n3.test"]) await r.resolve(n);
    expect(r.cachedNames).toBe(2);
    await r.resolve("n3.test");
    await r.resolve("n2.test");
    await r.resolve("n1.test");
    expect(["n1.test", "n2.test", "n3.test"].map(asked)).toEqual([before[0]! + 4, before[1]! + 2, before[2]! + 2]);
  });

  it.each(["nx.test", "servfail.test", "empty.test"])("never caches a failure: %s is asked again", async (name) => {
    const r = cached();
    const before = asked(name);
    const first = await r.resolve(name);
    const second = await r.resolve(name);
    expect(second).toEqual(first);
    expect(first.ok).toBe(false);
    expect(asked(name)).toBe(before + 4);
    expect(r.cachedNames).toBe(0);
  });

  it("sees a rebinding name's second answer, since it comes with TTL 0", async () => {
    const r = cached();
    expect(await r.resolve("rebind-ttl.test")).toEqual({ ok: true, addresses: ["8.8.8.8"] });
    expect(await r.resolve("rebind-ttl.test")).toEqual({ ok: true, addresses: ["10.0.0.1"] });
  });

  it("answers a cached name without a DNS round trip (synchronously)", async () => {
    const r = cached();
    await r.resolve("n1.test");
    const again = r.resolve("n1.test");
    expect(again instanceof Promise).toBe(false);
    expect(again).toEqual({ ok: true, addresses: ["8.8.4.4"] });
  });

  it("tells its lookup counter of every hit and miss", async () => {
    const seen: boolean[] = [];
    const r = new DnsResolver({ servers: [dns.server], timeoutMs: 300, onLookup: (hit) => seen.push(hit) });
    await r.resolve("n3.test");
    await r.resolve("n3.test");
    await r.resolve("ttl0.test");
    expect(seen).toEqual([false, true, false]);
  });

  it("is off with cacheMaxTtlMs 0", async () => {
    const r = new DnsResolver({ servers: [dns.server], timeoutMs: 300, clock, cacheMaxTtlMs: 0 });
    const before = asked("ttl10.test");
    await r.resolve("ttl10.test");
    await r.resolve("ttl10.test");
    expect(asked("ttl10.test")).toBe(before + 4);
  });
});
