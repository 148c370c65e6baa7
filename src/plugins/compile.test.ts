import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { CONFIG_PATH, DNS_PORT, compile } from "./compile.js";
import type { CompileInput, Topology, Workload } from "./compile.js";
import { CAPS } from "./caps.js";
import { parseManifest } from "./validate.js";
import { CORE_AUDIENCE, CORE_TOKEN_PATH, EGRESS_AUDIENCE, EGRESS_TOKEN_PATH, PROXY_PORT, TOKEN_EXPIRATION_SECONDS } from "./constants.js";
import { effective } from "./effective.js";
import type { EffectivePermissions } from "./effective.js";
import { ErrorCode } from "./errors.js";
import { SA_JWKS_DIR } from "./jwks.js";
import { parseImageRef } from "./image-ref.js";
import type { ImageRef } from "./image-ref.js";
import { buildObjects, objectsToJSON } from "./objects.js";
import type { EgressHost, GrantSpec, JsonValue, Manifest } from "./types.js";

const IMAGE = ((): ImageRef => {
  const r = parseImageRef(`ghcr.io/openfief/ibkr-flex@sha256:${"ab".repeat(32)}`);
  if (!r.ok) throw new Error("image");
  return r.value;
})();

const TOPOLOGY: Topology = {
  core: { clusterIP: "10.96.0.10", port: 8080, podPort: 8081, podLabels: { "app.kubernetes.io/name": "openfief-core" } },
  proxy: { clusterIP: "10.96.0.20", podPort: 4751, podLabels: { "app.kubernetes.io/name": "openfief-egress" } },
  pluginPort: 9090,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};

const h = (host: string, port = 443): EgressHost => ({ host, port });

function perms(m: Partial<Manifest>, g: Partial<GrantSpec> = {}): EffectivePermissions {
  const manifest: Manifest = { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [], ...m };
  const grant: GrantSpec = {
    capabilities: manifest.capabilities,
    egress: manifest.egress,
    secrets: manifest.secrets.map((s) => s.name),
    dataTiers: manifest.dataTiers,
    ...g,
  };
  const r = effective(manifest, grant);
  if (!r.ok) throw new Error("effective");
  return r.value;
}

function compiled(e: EffectivePermissions, topology: Topology = TOPOLOGY, config?: JsonValue): Workload {
  const r = compile(config === undefined ? { name: "ibkr", image: IMAGE } : { name: "ibkr", image: IMAGE, config }, e, topology);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}

const envOf = (w: Workload): Record<string, string> => Object.fromEntries(w.env.map((e) => [e.name, e.value]));

describe("compile", () => {
  it("gives a plugin without egress hosts only the core: one token, no proxy, no proxy rule", () => {
    const w = compiled(perms({}));
    expect(w.serviceAccountName).toBe("plugin-ibkr");
    expect(w.namespace).toBe("openfief");
    expect(w.automountServiceAccountToken).toBe(false);
    expect(w.tokens).toEqual([
      { volumeName: "openfief-token", audience: CORE_AUDIENCE, expirationSeconds: 3600, path: CORE_TOKEN_PATH, mountDir: "/var/run/secrets/openfief", fileName: "token" },
    ]);
    expect(w.egressToken).toBeUndefined();
    expect(w.env).toEqual([
      { name: "OPENFIEF_CONFIG", value: CONFIG_PATH },
      { name: "OPENFIEF_CORE_ADDRESS", value: "10.96.0.10:8080" },
      { name: "OPENFIEF_CORE_SUBJECT", value: "system:serviceaccount:openfief:openfief-core" },
      { name: "OPENFIEF_INSTANCE", value: "ibkr" },
      { name: "OPENFIEF_LISTEN_PORT", value: "9090" },
      { name: "OPENFIEF_SA_JWKS_DIR", value: "/var/run/secrets/openfief-sa-jwks" },
      { name: "OPENFIEF_TOKEN_FILE", value: CORE_TOKEN_PATH },
    ]);
    expect(w.ingress).toEqual([{ podLabels: { "app.kubernetes.io/name": "openfief-core" }, port: 9090, protocol: "TCP" }]);
    expect(w.egress).toEqual([{ podLabels: { "app.kubernetes.io/name": "openfief-core" }, port: 8081, protocol: "TCP" }]);
    expect(w.allowList).toEqual([]);
    expect(w.hasEgress).toBe(false);
  });

  it("gives a plugin with egress hosts the egress token, the proxy variables and a rule to the proxy's pods", () => {
    const w = compiled(perms({ egress: [h("ndcdyn.interactivebrokers.com"), h("api.example.com", 8443)] }));
    expect(w.egressToken).toEqual({
      volumeName: "openfief-egress-token",
      audience: EGRESS_AUDIENCE,
      expirationSeconds: TOKEN_EXPIRATION_SECONDS,
      path: EGRESS_TOKEN_PATH,
      mountDir: "/var/run/secrets/openfief-egress",
      fileName: "token",
    });
    expect(w.tokens.map((t) => t.audience).sort()).toEqual([CORE_AUDIENCE, EGRESS_AUDIENCE]);
    const env = envOf(w);
    expect(env["OPENFIEF_EGRESS_TOKEN_FILE"]).toBe(EGRESS_TOKEN_PATH);
    expect(env["HTTPS_PROXY"]).toBe(`http://10.96.0.20:${PROXY_PORT}`);
    expect(env["NO_PROXY"]).toBe("10.96.0.10");
    expect(w.env.map((e) => e.name)).toEqual([...w.env.map((e) => e.name)].sort());
    expect(w.egress).toEqual([
      { podLabels: { "app.kubernetes.io/name": "openfief-egress" }, port: 4751, protocol: "TCP" },
      { podLabels: { "app.kubernetes.io/name": "openfief-core" }, port: 8081, protocol: "TCP" },
    ]);
    expect(w.allowList).toEqual([h("api.example.com", 8443), h("ndcdyn.interactivebrokers.com")]);
  });

  it.each([
    { name: "without egress hosts", m: {} },
    { name: "with egress hosts", m: { egress: [h("api.example.com")] } },
  ])("tells every plugin who the core is and where the cluster's keys are mounted, $name", ({ m }) => {
    const w = compiled(perms(m));
    expect(w.coreSubject).toBe("system:serviceaccount:openfief:openfief-core");
    expect(w.jwks).toEqual({
      configMapName: "openfief-sa-jwks",
      volumeName: "openfief-sa-jwks",
      mountDir: "/var/run/secrets/openfief-sa-jwks",
      items: ["issuer", "jwks.json"],
      readOnly: true,
    });
    const env = envOf(w);
    expect(env["OPENFIEF_CORE_SUBJECT"]).toBe(TOPOLOGY.coreSubject);
    expect(env["OPENFIEF_SA_JWKS_DIR"]).toBe(SA_JWKS_DIR);
    expect(env["OPENFIEF_SA_JWKS_DIR"]).toBe(w.jwks.mountDir);
    expect(w.toJSON()).toMatchObject({ coreSubject: TOPOLOGY.coreSubject, jwks: { configMapName: "openfief-sa-jwks" } });
  });

  it("takes the core's subject from the topology as it is", () => {
    const w = compiled(perms({}), { ...TOPOLOGY, coreSubject: "system:serviceaccount:openfief-system:core.v2" });
    expect(envOf(w)["OPENFIEF_CORE_SUBJECT"]).toBe("system:serviceaccount:openfief-system:core.v2");
  });

  it("makes the allow-list exactly the effective egress hosts, not what the grant approves beyond them", () => {
    const e = perms({ egress: [h("a.example.com"), h("b.example.com")] }, { egress: [h("b.example.com"), h("c.example.com")] });
    expect(compiled(e).allowList).toEqual([h("b.example.com")]);
  });

  it.each([
    {
      name: "IPv6 addresses are bracketed in URLs and host:port but not in NO_PROXY",
      topology: {
        ...TOPOLOGY,
        core: { ...TOPOLOGY.core, clusterIP: "fd00:10:96::a" },
        proxy: { ...TOPOLOGY.proxy, clusterIP: "fd00:10:96::14" },
      },
      want: { OPENFIEF_CORE_ADDRESS: "[fd00:10:96::a]:8080", HTTPS_PROXY: "http://[fd00:10:96::14]:4750", NO_PROXY: "fd00:10:96::a" },
    },
    {
      name: "an explicit proxy port replaces 4750",
      topology: { ...TOPOLOGY, proxy: { ...TOPOLOGY.proxy, port: 3128 } },
      want: { OPENFIEF_CORE_ADDRESS: "10.96.0.10:8080", HTTPS_PROXY: "http://10.96.0.20:3128", NO_PROXY: "10.96.0.10" },
    },
  ])("$name", ({ topology, want }) => {
    const env = envOf(compiled(perms({ egress: [h("api.example.com")] }), topology));
    expect({ OPENFIEF_CORE_ADDRESS: env["OPENFIEF_CORE_ADDRESS"], HTTPS_PROXY: env["HTTPS_PROXY"], NO_PROXY: env["NO_PROXY"] }).toEqual(want);
  });

  it("mounts the granted Secrets read-only at the manifest's paths, and no other", () => {
    const e = perms(
      { secrets: [{ name: "ibkr-flex-credentials", mountPath: "/etc/ibkr" }, { name: "db", mountPath: "/etc/db" }] },
      { secrets: ["ibkr-flex-credentials"] },
    );
    expect(compiled(e).secrets).toEqual([{ volumeName: "secret-0", secretName: "ibkr-flex-credentials", role: "ibkr-flex-credentials", mountPath: "/etc/ibkr", readOnly: true }]);
  });

  it("writes the config as canonical JSON, and {} when there is none", () => {
    const w = compiled(perms({}), TOPOLOGY, { z: 1, a: { y: [3, 1], b: "é" } });
    expect(w.config.json).toBe('{"a":{"b":"é","y":[3,1]},"z":1}');
    expect(w.config.path).toBe(CONFIG_PATH);
    expect(envOf(w)["OPENFIEF_CONFIG"]).toBe(w.config.path);
    expect(compiled(perms({})).config.json).toBe("{}");
  });

  it("carries capabilities and data tiers, sorted", () => {
    const w = compiled(perms({ capabilities: ["view", "connector"], dataTiers: ["raw", "ledger"] }));
    expect(w.capabilities).toEqual(["connector", "view"]);
    expect(w.dataTiers).toEqual(["ledger", "raw"]);
  });

  it("returns copies from its accessors", () => {
    const w = compiled(perms({ egress: [h("api.example.com")] }));
    w.env.push({ name: "X", value: "y" });
    w.allowList.push(h("evil.example.com"));
    (w.egress[0] as { port: number }).port = 53;
    (w.ingress[0]?.podLabels as Record<string, string>)["x"] = "y";
    w.labels["x"] = "y";
    expect(w.env.map((e) => e.name)).not.toContain("X");
    expect(w.allowList).toEqual([h("api.example.com")]);
    expect(w.egress.map((r) => r.port)).not.toContain(53);
    expect(w.ingress[0]?.podLabels).toEqual({ "app.kubernetes.io/name": "openfief-core" });
    expect(w.labels).not.toHaveProperty("x");
  });

  const bad = (patch: (t: Topology) => unknown): Topology => patch(structuredClone(TOPOLOGY) as Topology) as Topology;
  it.each([
    { name: "a core Service name instead of an address", t: bad((t) => ({ ...t, core: { ...t.core, clusterIP: "core.openfief.svc" } })), path: "topology.core.clusterIP" },
    { name: "an IPv4 address out of range", t: bad((t) => ({ ...t, proxy: { ...t.proxy, clusterIP: "10.96.0.256" } })), path: "topology.proxy.clusterIP" },
    { name: "a short IPv4 form", t: bad((t) => ({ ...t, core: { ...t.core, clusterIP: "10.1" } })), path: "topology.core.clusterIP" },
    { name: "an IPv6 address with a zone", t: bad((t) => ({ ...t, core: { ...t.core, clusterIP: "fe80::1%eth0" } })), path: "topology.core.clusterIP" },
    { name: "a bracketed IPv6 address", t: bad((t) => ({ ...t, core: { ...t.core, clusterIP: "[fd00::1]" } })), path: "topology.core.clusterIP" },
    { name: "the unspecified address", t: bad((t) => ({ ...t, proxy: { ...t.proxy, clusterIP: "0.0.0.0" } })), path: "topology.proxy.clusterIP" },
    { name: "no proxy at all", t: bad((t) => ({ ...t, proxy: undefined })), path: "topology.proxy" },
    { name: "port 0", t: bad((t) => ({ ...t, core: { ...t.core, port: 0 } })), path: "topology.core.port" },
    { name: "port 65536", t: bad((t) => ({ ...t, pluginPort: 65536 })), path: "topology.pluginPort" },
    { name: "a fractional port", t: bad((t) => ({ ...t, core: { ...t.core, podPort: 80.5 } })), path: "topology.core.podPort" },
    { name: "a port as a string", t: bad((t) => ({ ...t, proxy: { ...t.proxy, podPort: "4750" } })), path: "topology.proxy.podPort" },
    { name: "the DNS port for the core pods", t: bad((t) => ({ ...t, core: { ...t.core, podPort: DNS_PORT } })), path: "topology.core.podPort" },
    { name: "the DNS port for the proxy pods", t: bad((t) => ({ ...t, proxy: { ...t.proxy, podPort: DNS_PORT } })), path: "topology.proxy.podPort" },
    { name: "the DNS port for the proxy Service", t: bad((t) => ({ ...t, proxy: { ...t.proxy, port: DNS_PORT } })), path: "topology.proxy.port" },
    { name: "the DNS port for the plugin", t: bad((t) => ({ ...t, pluginPort: DNS_PORT })), path: "topology.pluginPort" },
    { name: "no core pod labels, which would select every pod", t: bad((t) => ({ ...t, core: { ...t.core, podLabels: {} } })), path: "topology.core.podLabels" },
    { name: "an invalid label key", t: bad((t) => ({ ...t, proxy: { ...t.proxy, podLabels: { "bad key": "x" } } })), path: "topology.proxy.podLabels.bad key" },
    { name: "an invalid label value", t: bad((t) => ({ ...t, core: { ...t.core, podLabels: { app: "-x-" } } })), path: "topology.core.podLabels.app" },
    { name: "the plugin label on core pods", t: bad((t) => ({ ...t, core: { ...t.core, podLabels: { "openfief.io/plugin": "x" } } })), path: "topology.core.podLabels.openfief.io/plugin" },
    { name: "no core subject", t: bad((t) => ({ ...t, coreSubject: undefined })), path: "topology.coreSubject" },
    { name: "an empty core subject", t: bad((t) => ({ ...t, coreSubject: "" })), path: "topology.coreSubject" },
    { name: "a core subject that is not a string", t: bad((t) => ({ ...t, coreSubject: 42 })), path: "topology.coreSubject" },
    { name: "a core subject that is a user, not a ServiceAccount", t: bad((t) => ({ ...t, coreSubject: "admin@example.com" })), path: "topology.coreSubject" },
    { name: "a core subject that is a ServiceAccount group", t: bad((t) => ({ ...t, coreSubject: "system:serviceaccounts:openfief" })), path: "topology.coreSubject" },
    { name: "a core subject without a name", t: bad((t) => ({ ...t, coreSubject: "system:serviceaccount:openfief:" })), path: "topology.coreSubject" },
    { name: "a core subject without a namespace", t: bad((t) => ({ ...t, coreSubject: "system:serviceaccount::openfief-core" })), path: "topology.coreSubject" },
    { name: "a core subject with extra colons", t: bad((t) => ({ ...t, coreSubject: "system:serviceaccount:openfief:openfief-core:x" })), path: "topology.coreSubject" },
    { name: "a core subject with upper case", t: bad((t) => ({ ...t, coreSubject: "system:serviceaccount:OpenFief:openfief-core" })), path: "topology.coreSubject" },
    { name: "a core subject with a namespace that is not a DNS label", t: bad((t) => ({ ...t, coreSubject: "system:serviceaccount:open.fief:openfief-core" })), path: "topology.coreSubject" },
    { name: "a core subject with spaces", t: bad((t) => ({ ...t, coreSubject: " system:serviceaccount:openfief:openfief-core" })), path: "topology.coreSubject" },
    { name: "a plugin's ServiceAccount as the core", t: bad((t) => ({ ...t, coreSubject: "system:serviceaccount:openfief:plugin-nbp-fx" })), path: "topology.coreSubject" },
  ])("refuses a topology with $name", ({ t, path }) => {
    const r = compile({ name: "ibkr", image: IMAGE }, perms({ egress: [h("api.example.com")] }), t);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toContainEqual(expect.objectContaining({ code: ErrorCode.InvalidTopology, path }));
    expect(r.errors.every((e) => e.code === ErrorCode.InvalidTopology)).toBe(true);
  });

  it("reports every topology problem at once", () => {
    const t = { core: { clusterIP: "x", port: 0, podPort: 53, podLabels: {} }, proxy: { clusterIP: "y", podPort: 1, podLabels: { a: "b" } }, pluginPort: -1, coreSubject: "core" };
    const r = compile({ name: "ibkr", image: IMAGE }, perms({}), t);
    expect(r.ok ? [] : r.errors.map((e) => e.path)).toEqual([
      "topology.core.clusterIP",
      "topology.core.port",
      "topology.core.podPort",
      "topology.core.podLabels",
      "topology.proxy.clusterIP",
      "topology.pluginPort",
      "topology.coreSubject",
    ]);
  });

  it.each([
    { name: "an invalid instance name", input: { name: "1bad", image: IMAGE }, code: ErrorCode.InvalidName },
    { name: "an instance name too long for plugin-<name>", input: { name: `a${"b".repeat(56)}`, image: IMAGE }, code: ErrorCode.InvalidName },
    { name: "a config that is not JSON", input: { name: "ibkr", image: IMAGE, config: { n: Number.NaN } }, code: ErrorCode.InvalidJSON },
  ])("refuses $name", ({ input, code }) => {
    const r = compile(input, perms({}), TOPOLOGY);
    expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual([code]);
  });

  it.each([
    { name: "a mount inside the token directory", mount: "/var/run/secrets/openfief", code: ErrorCode.ReservedMountPath },
    { name: "a mount above the token directory", mount: "/var/run", code: ErrorCode.ReservedMountPath },
    { name: "a relative mount", mount: "etc/x", code: ErrorCode.InvalidMountPath },
    { name: "the root", mount: "/", code: ErrorCode.InvalidMountPath },
    { name: "an unclean mount", mount: "/etc/../x", code: ErrorCode.InvalidMountPath },
  ])("refuses a Secret at $name, which validation should have caught", ({ mount, code }) => {
    const r = compile({ name: "ibkr", image: IMAGE }, perms({ secrets: [{ name: "s", mountPath: mount }] }), TOPOLOGY);
    expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual([code]);
  });

  it("refuses Secret mounts that overlap", () => {
    const e = perms({ secrets: [{ name: "a", mountPath: "/etc/a" }, { name: "b", mountPath: "/etc/a/b" }] });
    const r = compile({ name: "ibkr", image: IMAGE }, e, TOPOLOGY);
    expect(r.ok ? [] : r.errors.map((x) => x.code)).toEqual([ErrorCode.MountOverlap]);
  });
});

// --- properties -------------------------------------------------------------------------------

const HOSTS = ["a.example.com", "b.example.com", "api.example.net", "z.example.org"];
const manifestArb = fc.record({
  capabilities: fc.constantFrom<Manifest["capabilities"]>(["connector"], ["view"], ["connector", "view"]),
  egress: fc.uniqueArray(fc.record({ host: fc.constantFrom(...HOSTS), port: fc.constantFrom(443, 8443) }), { selector: (x) => `${x.host}:${x.port}`, maxLength: 5 }),
  secrets: fc.uniqueArray(fc.constantFrom("creds", "db", "token-b", "zz"), { maxLength: 4 }).map((ns) => ns.map((name) => ({ name, mountPath: `/mnt/${name}` }))),
  dataTiers: fc.uniqueArray(fc.constantFrom("raw", "ledger", "pii"), { maxLength: 3 }),
});
const labelsArb = fc.dictionary(fc.constantFrom("app", "app.kubernetes.io/name", "tier", "example.com/role"), fc.constantFrom("core", "egress", "a-b", ""), {
  minKeys: 1,
  maxKeys: 4,
});
const topologyArb = fc.record({
  core: fc.record({ clusterIP: fc.constantFrom("10.96.0.10", "fd00::a"), port: fc.integer({ min: 1, max: 65535 }), podPort: fc.integer({ min: 1, max: 65535 }), podLabels: labelsArb }),
  proxy: fc.record(
    { clusterIP: fc.constantFrom("10.96.0.20", "fd00::14"), port: fc.integer({ min: 1, max: 65535 }), podPort: fc.integer({ min: 1, max: 65535 }), podLabels: labelsArb },
    { requiredKeys: ["clusterIP", "podPort", "podLabels"] },
  ),
  pluginPort: fc.integer({ min: 1, max: 65535 }),
  coreSubject: fc.constantFrom("system:serviceaccount:openfief:openfief-core", "system:serviceaccount:other-ns:core.example"),
});
const configArb = fc.option(fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>, { nil: undefined });

function reorderKeys(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(reorderKeys);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.keys(v).reverse().map((k) => [k, reorderKeys((v as Record<string, JsonValue>)[k] as JsonValue)]));
  }
  return v;
}
const rev = <T>(xs: readonly T[]): T[] => [...xs].reverse();
const revRecord = (r: Readonly<Record<string, string>>): Record<string, string> => Object.fromEntries(rev(Object.entries(r)));


function render(m: Manifest, g: GrantSpec, t: Topology, config: JsonValue | undefined): string {
  const e = effective(m, g);
  if (!e.ok) return JSON.stringify(e.errors);
  const w = compile(config === undefined ? { name: "p1", image: IMAGE } : { name: "p1", image: IMAGE, config }, e.value, t);
  if (!w.ok) return JSON.stringify(w.errors);
  return JSON.stringify([w.value, objectsToJSON(buildObjects(w.value))]);
}

describe("compile, as properties", () => {
  it("gives the same Workload and the same objects whatever the order of every input list and map", () => {
    fc.assert(
      fc.property(manifestArb, manifestArb, topologyArb, configArb, fc.infiniteStream(fc.nat()), (m, gm, t, config, keys) => {
        const g: GrantSpec = { capabilities: gm.capabilities, egress: [...gm.egress, ...m.egress.slice(1)], secrets: [...gm.secrets.map((s) => s.name), "creds"], dataTiers: gm.dataTiers };
        // A random permutation: sort by random keys.
        const pick = <T>(xs: readonly T[]): T[] =>
          xs.map((x) => ({ k: keys.next().value as number, x })).sort((a, b) => a.k - b.k).map((e) => e.x);
        const m2: Manifest = { capabilities: pick(m.capabilities), egress: pick(m.egress), secrets: pick(m.secrets), dataTiers: pick(m.dataTiers) };
        const g2: GrantSpec = { capabilities: pick(g.capabilities), egress: pick(g.egress), secrets: pick(g.secrets), dataTiers: pick(g.dataTiers) };
        const t2: Topology = {
          coreSubject: t.coreSubject,
          pluginPort: t.pluginPort,
          proxy: { ...t.proxy, podLabels: revRecord(t.proxy.podLabels) },
          core: { podLabels: revRecord(t.core.podLabels), podPort: t.core.podPort, port: t.core.port, clusterIP: t.core.clusterIP },
        };
        const c2 = config === undefined ? undefined : reorderKeys(config);
        return render(m, g, t, config) === render(m2, g2, t2, c2);
      }),
      { numRuns: 150 },
    );
  });

  it("never allows the DNS port and never gives egress to a plugin without egress hosts", () => {
    const portArb = fc.oneof(fc.constant(53), fc.integer({ min: 1, max: 65535 }));
    fc.assert(
      fc.property(manifestArb, topologyArb, portArb, portArb, portArb, (m, t, a, b, c) => {
        const e = effective(m, { ...m, secrets: m.secrets.map((s) => s.name) });
        if (!e.ok) return false;
        const topo: Topology = { core: { ...t.core, podPort: a }, proxy: { ...t.proxy, podPort: b }, pluginPort: c, coreSubject: t.coreSubject };
        const w = compile({ name: "p1", image: IMAGE }, e.value, topo);
        if (!w.ok) return [a, b, c].includes(53);
        const ports = [...w.value.ingress, ...w.value.egress].map((r) => r.port);
        const names = w.value.env.map((x) => x.name);
        const egressBits = names.includes("HTTPS_PROXY") || names.includes("NO_PROXY") || names.includes("OPENFIEF_EGRESS_TOKEN_FILE") || w.value.egressToken !== undefined;
        return !ports.includes(53) && egressBits === m.egress.length > 0 && w.value.egress.length === (m.egress.length > 0 ? 2 : 1);
      }),
      { numRuns: 150 },
    );
  });
});

describe("compile checks Secret mounts with manifest validation's own checks", () => {
  it.each([
    { name: "/run/secrets, the token directory through the /var/run symlink", mount: "/run/secrets/x", code: ErrorCode.ReservedMountPath },
    { name: "a path with a control character", mount: "/etc/a\u0007b", code: ErrorCode.InvalidMountPath },
    { name: "a path longer than the cap", mount: `/etc/${"a".repeat(CAPS.mountPath)}`, code: ErrorCode.TooLarge },
  ])("refuses a Secret at $name, as manifest validation does", ({ mount, code }) => {
    const r = compile({ name: "ibkr", image: IMAGE }, perms({ secrets: [{ name: "s", mountPath: mount }] }), TOPOLOGY);
    expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual([code]);
    expect(parseManifest({ capabilities: ["connector"], secrets: [{ name: "s", mountPath: mount }] }).ok).toBe(false);
  });

  it("accepts exactly the Secret mounts parseManifest accepts", () => {
    const segment = fc.constantFrom("a", "b", "etc", "var", "run", "secrets", "openfief", "..", ".", "", "x\u0000y", "ab");
    const mount = fc.tuple(fc.boolean(), fc.array(segment, { minLength: 1, maxLength: 4 }), fc.boolean()).map(([abs, segs, trailing]) => `${abs ? "/" : ""}${segs.join("/")}${trailing ? "/" : ""}`);
    fc.assert(
      fc.property(fc.array(mount, { maxLength: 6 }), (paths) => {
        const secrets = paths.map((mountPath, i) => ({ name: `s${i}`, mountPath }));
        const parsed = parseManifest({ capabilities: ["connector"], secrets });
        const e = effective({ capabilities: ["connector"], egress: [], secrets, dataTiers: [] }, { capabilities: ["connector"], egress: [], secrets: secrets.map((s) => s.name), dataTiers: [] });
        if (!e.ok) return false;
        const w = compile({ name: "ibkr", image: IMAGE }, e.value, TOPOLOGY);
        expect([paths, w.ok]).toEqual([paths, parsed.ok]);
        return true;
      }),
      { numRuns: Number(process.env["FUZZ_RUNS"] ?? 300) },
    );
  });
});

describe("compile, given what no model function made", () => {
  it.each<[string, () => unknown]>([
    ["permissions that are a plain object", () => compile({ name: "ibkr", image: IMAGE }, { secrets: [], egress: [] } as unknown as EffectivePermissions, TOPOLOGY)],
    ["an image that is a string", () => compile({ name: "ibkr", image: "ghcr.io/x@sha256:00" as unknown as ImageRef }, perms({}), TOPOLOGY)],
    ["no plugin at all", () => compile(null as unknown as CompileInput, perms({}), TOPOLOGY)],
    ["a topology that is a number", () => compile({ name: "ibkr", image: IMAGE }, perms({}), 7 as unknown as Topology)],
    ["a config nested too deeply", () => compile({ name: "ibkr", image: IMAGE, config: JSON.parse(`${"[".repeat(100)}${"]".repeat(100)}`) as JsonValue }, perms({}), TOPOLOGY)],
  ])("refuses %s with an error, never a throw", (_what, call) => {
    const r = call() as { ok: boolean; errors?: unknown[] };
    expect(r.ok).toBe(false);
    expect(r.errors?.length).toBeGreaterThan(0);
  });
});
