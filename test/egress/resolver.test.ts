/** DnsResolver against a real DNS server on 127.0.0.1: every answer the proxy must handle. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DnsResolver } from "../../src/egress/resolver.js";
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
    "rebind.test": { kind: "sequence", answers: [["8.8.8.8"], ["10.0.0.1"]] },
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

  it("asks DNS for a name that looks numeric instead of reading it as an address", async () => {
    // dns.lookup would turn this into 127.0.0.1 without asking; the resolver asks and gets NXDOMAIN.
    expect(await resolver().resolve("0177.0.0.1")).toEqual({ ok: false, code: "dns_nxdomain" });
    expect(dns.queries.get("0177.0.0.1")).toBeGreaterThan(0);
  });
});
