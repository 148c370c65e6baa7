import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ErrorCode } from "./errors.js";
import { EMPTY_PENDING, effective, isEmptyPending, needsApproval } from "./effective.js";
import type { Pending } from "./effective.js";
import type { Capability, EgressHost, GrantSpec, Manifest, SecretMount } from "./types.js";
import { CAPABILITIES, EMPTY_GRANT_SPEC } from "./types.js";

function manifest(m: Partial<Manifest>): Manifest {
  return { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [], ...m };
}
function grant(g: Partial<GrantSpec>): GrantSpec {
  return { ...EMPTY_GRANT_SPEC, capabilities: ["connector"], ...g };
}
const h = (host: string, port = 443): EgressHost => ({ host, port });

describe("effective keeps only what manifest and grant share", () => {
  it.each([
    {
      name: "a grant equal to the request gives the request",
      m: manifest({ egress: [h("api.example.com")], secrets: [{ name: "creds", mountPath: "/etc/creds" }], dataTiers: ["raw"] }),
      g: grant({ egress: [h("api.example.com")], secrets: ["creds"], dataTiers: ["raw"] }),
      want: { capabilities: ["connector"], egress: [h("api.example.com")], secrets: [{ name: "creds", mountPath: "/etc/creds" }], dataTiers: ["raw"] },
    },
    {
      name: "a grant approving more adds nothing",
      m: manifest({ egress: [h("api.example.com")] }),
      g: grant({
        capabilities: ["connector", "view"],
        egress: [h("api.example.com"), h("other.example.com")],
        secrets: ["creds", "more"],
        dataTiers: ["raw", "ledger"],
      }),
      want: { capabilities: ["connector"], egress: [h("api.example.com")], secrets: [], dataTiers: [] },
    },
    {
      name: "a request beyond the grant gets nothing",
      m: manifest({
        capabilities: ["connector", "view"],
        egress: [h("api.example.com"), h("new.example.com")],
        secrets: [{ name: "creds", mountPath: "/etc/creds" }],
        dataTiers: ["raw"],
      }),
      g: grant({ egress: [h("api.example.com")] }),
      want: { capabilities: ["connector"], egress: [h("api.example.com")], secrets: [], dataTiers: [] },
    },
    {
      name: "egress hosts match only when host and port are both equal",
      m: manifest({ egress: [h("api.example.com", 443), h("api.example.com", 8443), h("b.example.com", 443)] }),
      g: grant({ egress: [h("api.example.com", 8443), h("b.example.com", 444)] }),
      want: { capabilities: ["connector"], egress: [h("api.example.com", 8443)], secrets: [], dataTiers: [] },
    },
    {
      name: "a Secret keeps the mount path the manifest asks for",
      m: manifest({ secrets: [{ name: "creds", mountPath: "/moved/by/vendor" }] }),
      g: grant({ secrets: ["creds"] }),
      want: { capabilities: ["connector"], egress: [], secrets: [{ name: "creds", mountPath: "/moved/by/vendor" }], dataTiers: [] },
    },
    {
      name: "every list comes back sorted",
      m: manifest({
        capabilities: ["view", "connector"],
        egress: [h("z.example.com"), h("a.example.com", 8443), h("a.example.com", 443)],
        secrets: [{ name: "zeta", mountPath: "/z" }, { name: "alpha", mountPath: "/a" }],
        dataTiers: ["tier-b", "tier-a"],
      }),
      g: grant({
        capabilities: ["view", "connector"],
        egress: [h("a.example.com", 443), h("z.example.com"), h("a.example.com", 8443)],
        secrets: ["zeta", "alpha"],
        dataTiers: ["tier-a", "tier-b"],
      }),
      want: {
        capabilities: ["connector", "view"],
        egress: [h("a.example.com", 443), h("a.example.com", 8443), h("z.example.com")],
        secrets: [{ name: "alpha", mountPath: "/a" }, { name: "zeta", mountPath: "/z" }],
        dataTiers: ["tier-a", "tier-b"],
      },
    },
  ])("$name", ({ m, g, want }) => {
    const r = effective(m, g);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.toJSON()).toEqual(want);
    expect(r.value.capabilities).toEqual(want.capabilities);
    expect(r.value.egress).toEqual(want.egress);
    expect(r.value.secrets).toEqual(want.secrets);
    expect(r.value.dataTiers).toEqual(want.dataTiers);
    expect(r.value.hasEgress).toBe(want.egress.length > 0);
  });

  it.each([
    { name: "the grant approves no capability", m: manifest({ capabilities: ["connector"] }), g: grant({ capabilities: [] }) },
    { name: "the grant approves only another capability", m: manifest({ capabilities: ["connector"] }), g: grant({ capabilities: ["view"] }) },
    { name: "the plugin has no grant at all", m: manifest({ egress: [h("api.example.com")] }), g: EMPTY_GRANT_SPEC },
    { name: "the manifest requests no capability", m: manifest({ capabilities: [] }), g: grant({ capabilities: ["connector", "view"] }) },
  ])("refuses with no_capability_granted when $name", ({ m, g }) => {
    const r = effective(m, g);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.map((e) => e.code)).toEqual([ErrorCode.NoCapabilityGranted]);
  });

  it("returns copies: changing what an accessor returned changes nothing", () => {
    const r = effective(manifest({ egress: [h("api.example.com")], secrets: [{ name: "s", mountPath: "/s" }] }), grant({ egress: [h("api.example.com")], secrets: ["s"] }));
    if (!r.ok) throw new Error("effective");
    const e = r.value;
    e.capabilities.push("view");
    const egress = e.egress;
    egress.push(h("evil.example.com"));
    (egress[0] as { host: string }).host = "evil.example.com";
    (e.secrets[0] as { mountPath: string }).mountPath = "/";
    e.dataTiers.push("x");
    expect(e.toJSON()).toEqual({ capabilities: ["connector"], egress: [h("api.example.com")], secrets: [{ name: "s", mountPath: "/s" }], dataTiers: [] });
    expect(Object.keys(e)).toEqual([]);
  });

  it("does not depend on the manifest or grant changing later", () => {
    const egress = [h("api.example.com")];
    const m = manifest({ egress });
    const r = effective(m, grant({ egress: [h("api.example.com")] }));
    egress.push(h("later.example.com"));
    if (r.ok) expect(r.value.egress).toEqual([h("api.example.com")]);
    expect(r.ok).toBe(true);
  });
});

describe("needsApproval", () => {
  it.each<{ name: string; m: Manifest; g: GrantSpec; want: Pending }>([
    {
      name: "nothing is pending when the grant covers the request",
      m: manifest({ egress: [h("api.example.com")], secrets: [{ name: "creds", mountPath: "/c" }] }),
      g: grant({ egress: [h("api.example.com"), h("extra.example.com")], secrets: ["creds", "unused"], capabilities: ["connector", "view"] }),
      want: EMPTY_PENDING,
    },
    {
      name: "a new host is all that is pending",
      m: manifest({ egress: [h("api.example.com"), h("new.example.com")] }),
      g: grant({ egress: [h("api.example.com")] }),
      want: { ...EMPTY_PENDING, egress: [h("new.example.com")] },
    },
    {
      name: "another port of a granted host is pending",
      m: manifest({ egress: [h("api.example.com", 8443)] }),
      g: grant({ egress: [h("api.example.com", 443)] }),
      want: { ...EMPTY_PENDING, egress: [h("api.example.com", 8443)] },
    },
    {
      name: "everything requested is pending without a grant, sorted",
      m: manifest({
        capabilities: ["view", "connector"],
        egress: [h("b.example.com"), h("a.example.com")],
        secrets: [{ name: "zz", mountPath: "/z" }, { name: "aa", mountPath: "/a" }],
        dataTiers: ["t2", "t1"],
      }),
      g: EMPTY_GRANT_SPEC,
      want: { capabilities: ["connector", "view"], egress: [h("a.example.com"), h("b.example.com")], secrets: ["aa", "zz"], dataTiers: ["t1", "t2"] },
    },
    {
      name: "a moved Secret mount needs no new approval",
      m: manifest({ secrets: [{ name: "creds", mountPath: "/somewhere/else" }] }),
      g: grant({ secrets: ["creds"] }),
      want: EMPTY_PENDING,
    },
  ])("$name", ({ m, g, want }) => {
    const p = needsApproval(m, g);
    expect(p).toEqual(want);
    expect(isEmptyPending(p)).toBe(isEmptyPending(want));
  });

  it("reports empty only when every list is empty", () => {
    expect(isEmptyPending(EMPTY_PENDING)).toBe(true);
    expect(isEmptyPending({ ...EMPTY_PENDING, dataTiers: ["x"] })).toBe(false);
    expect(isEmptyPending({ ...EMPTY_PENDING, secrets: ["x"] })).toBe(false);
    expect(isEmptyPending({ ...EMPTY_PENDING, capabilities: ["view"] })).toBe(false);
    expect(isEmptyPending({ ...EMPTY_PENDING, egress: [h("a.example.com")] })).toBe(false);
  });
});

// Small pools so that request and grant overlap often.
const capArb = fc.subarray([...CAPABILITIES] as Capability[]);
const hostArb = fc.record({ host: fc.constantFrom("a.example.com", "b.example.com", "c.example.net"), port: fc.constantFrom(443, 8443) });
const egressArb = fc.uniqueArray(hostArb, { selector: (x) => `${x.host}:${x.port}`, maxLength: 6 });
const secretNameArb = fc.constantFrom<string>("creds", "token", "db", "api-key");
const secretsArb = fc
  .uniqueArray(secretNameArb, { maxLength: 4 })
  .map((names): SecretMount[] => names.map((name) => ({ name, mountPath: `/mnt/${name}` })));
const tiersArb = fc.uniqueArray(fc.constantFrom<string>("raw", "ledger", "pii"), { maxLength: 3 });
const manifestArb = fc.record({ capabilities: capArb, egress: egressArb, secrets: secretsArb, dataTiers: tiersArb });
const grantArb = fc.record({
  capabilities: capArb,
  egress: egressArb,
  secrets: fc.uniqueArray(secretNameArb, { maxLength: 4 }),
  dataTiers: tiersArb,
});

function union(a: GrantSpec, b: GrantSpec): GrantSpec {
  return {
    capabilities: [...a.capabilities, ...b.capabilities],
    egress: [...a.egress, ...b.egress],
    secrets: [...a.secrets, ...b.secrets],
    dataTiers: [...a.dataTiers, ...b.dataTiers],
  };
}

describe("effective, as properties", () => {
  it("is a subset of both the request and the grant", () => {
    fc.assert(
      fc.property(manifestArb, grantArb, (m, g) => {
        const r = effective(m, g);
        if (!r.ok) return m.capabilities.every((c) => !g.capabilities.includes(c));
        const e = r.value;
        const key = (x: EgressHost): string => `${x.host}:${x.port}`;
        return (
          e.capabilities.length > 0 &&
          e.capabilities.every((c) => m.capabilities.includes(c) && g.capabilities.includes(c)) &&
          e.egress.every((x) => m.egress.some((y) => key(y) === key(x)) && g.egress.some((y) => key(y) === key(x))) &&
          e.secrets.every((s) => m.secrets.some((y) => y.name === s.name && y.mountPath === s.mountPath) && g.secrets.includes(s.name)) &&
          e.dataTiers.every((t) => m.dataTiers.includes(t) && g.dataTiers.includes(t))
        );
      }),
      { numRuns: 200 },
    );
  });

  it("is exactly the request minus what needs approval", () => {
    fc.assert(
      fc.property(manifestArb, grantArb, (m, g) => {
        const r = effective(m, g);
        if (!r.ok) return true;
        const p = needsApproval(m, g);
        return (
          r.value.egress.length + p.egress.length === m.egress.length &&
          r.value.secrets.length + p.secrets.length === m.secrets.length &&
          r.value.dataTiers.length + p.dataTiers.length === m.dataTiers.length &&
          r.value.capabilities.length + p.capabilities.length === m.capabilities.length
        );
      }),
      { numRuns: 200 },
    );
  });

  it("is monotone in the grant: a bigger grant never gives less", () => {
    fc.assert(
      fc.property(manifestArb, grantArb, grantArb, (m, g, extra) => {
        const small = effective(m, g);
        const big = effective(m, union(g, extra));
        if (!small.ok) return true;
        if (!big.ok) return false;
        const s = small.value.toJSON();
        const b = big.value.toJSON();
        return (
          s.capabilities.every((c) => b.capabilities.includes(c)) &&
          s.egress.every((x) => b.egress.some((y) => y.host === x.host && y.port === x.port)) &&
          s.secrets.every((x) => b.secrets.some((y) => y.name === x.name && y.mountPath === x.mountPath)) &&
          s.dataTiers.every((t) => b.dataTiers.includes(t))
        );
      }),
      { numRuns: 200 },
    );
  });

  it("does not depend on the order of any list", () => {
    fc.assert(
      fc.property(manifestArb, grantArb, (m, g) => {
        const rev = <T>(xs: readonly T[]): T[] => [...xs].reverse();
        const m2: Manifest = { capabilities: rev(m.capabilities), egress: rev(m.egress), secrets: rev(m.secrets), dataTiers: rev(m.dataTiers) };
        const g2: GrantSpec = { capabilities: rev(g.capabilities), egress: rev(g.egress), secrets: rev(g.secrets), dataTiers: rev(g.dataTiers) };
        const a = effective(m, g);
        const b = effective(m2, g2);
        return (
          JSON.stringify(a.ok ? a.value : a.errors) === JSON.stringify(b.ok ? b.value : b.errors) &&
          JSON.stringify(needsApproval(m, g)) === JSON.stringify(needsApproval(m2, g2))
        );
      }),
      { numRuns: 200 },
    );
  });
});

describe("effective and needsApproval on malformed values from adapters", () => {
  const ok = manifest({ egress: [h("api.example.com")] });
  it.each<[string, unknown, unknown, string]>([
    ["no manifest", undefined, grant({}), "manifest"],
    ["a manifest whose capabilities are a string", { ...ok, capabilities: "connector" }, grant({}), "manifest.capabilities"],
    ["an unknown capability in the manifest", { ...ok, capabilities: ["admin"] }, grant({ capabilities: ["admin" as Capability] }), "manifest.capabilities[0]"],
    ["a null egress host", { ...ok, egress: [null] }, grant({}), "manifest.egress[0]"],
    ["a port that is a string", { ...ok, egress: [{ host: "a.example.com", port: "443" }] }, grant({}), "manifest.egress[0]"],
    ["a Secret without a mount path", { ...ok, secrets: [{ name: "s" }] }, grant({}), "manifest.secrets[0]"],
    ["no grant", ok, null, "grant"],
    ["a grant whose Secrets are objects", ok, { ...grant({}), secrets: [{ name: "s" }] }, "grant.secrets[0]"],
    ["a grant without data tiers", ok, { capabilities: ["connector"], egress: [], secrets: [] }, "grant.dataTiers"],
  ])("refuses %s, at its path", (_what, m, g, path) => {
    expect(effective(m as Manifest, g as GrantSpec)).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.InvalidType, path })] });
  });

  it("refuses a manifest list over the cap", () => {
    const m = { ...ok, dataTiers: Array.from({ length: 65 }, (_, i) => `t${i}`) };
    expect(effective(m, grant({}))).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "manifest.dataTiers" })] });
  });

  it("finds nothing pending for a malformed manifest, which can never run", () => {
    expect(needsApproval({ capabilities: 7 } as unknown as Manifest, grant({}))).toBe(EMPTY_PENDING);
  });

  it("finds everything pending under a malformed grant, which approves nothing", () => {
    expect(needsApproval(ok, { capabilities: null } as unknown as GrantSpec)).toEqual(needsApproval(ok, EMPTY_GRANT_SPEC));
  });
});
