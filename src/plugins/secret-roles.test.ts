import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Deployment } from "kubernetes-models/apps/v1";
import { compile } from "./compile.js";
import type { Topology } from "./compile.js";
import { effective, needsApproval } from "./effective.js";
import { ErrorCode } from "./errors.js";
import { parseImageRef } from "./image-ref.js";
import type { ImageRef } from "./image-ref.js";
import { buildObjects, objectsToJSON } from "./objects.js";
import { foreignSecretProblems } from "./secret-claims.js";
import type { InstanceSecrets } from "./secret-claims.js";
import type { GrantSpec, Manifest } from "./types.js";
import { defaultSecretName, parseGrant } from "./validate.js";

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

const MANIFEST: Manifest = {
  capabilities: ["connector"],
  egress: [],
  secrets: [{ name: "credentials", mountPath: "/etc/ibkr" }, { name: "query", mountPath: "/etc/query" }],
  dataTiers: [],
};

function grant(name: string, spec: unknown): GrantSpec {
  const r = parseGrant({ name, spec });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value.spec;
}

/** The Secret names the Deployment of `name` (with `g`) mounts, read from the built objects. */
function mountedSecrets(name: string, g: GrantSpec, manifest: Manifest = MANIFEST): string[] {
  const e = effective(manifest, g);
  if (!e.ok) throw new Error("effective");
  const w = compile({ name, image: IMAGE }, e.value, TOPOLOGY);
  if (!w.ok) throw new Error(JSON.stringify(w.errors));
  const objects = objectsToJSON(buildObjects(w.value)) as { kind: string }[];
  const dep = objects.find((o) => o.kind === "Deployment") as unknown as ConstructorParameters<typeof Deployment>[0];
  new Deployment(dep).validate();
  const volumes = (dep as { spec: { template: { spec: { volumes: { secret?: { secretName: string } }[] } } } }).spec.template.spec.volumes;
  return volumes.flatMap((v) => (v.secret === undefined ? [] : [v.secret.secretName])).sort();
}

describe("Secret roles in a grant", () => {
  it("maps a role to <plugin>-<role> when the grant names no Secret, and parses its own output again unchanged", () => {
    const g = grant("ibkr-main", { capabilities: ["connector"], secretRoles: [{ role: "credentials" }, { role: "query", secret: "flex-query-main" }] });
    expect(g.secretRoles).toEqual([{ role: "credentials", secret: "ibkr-main-credentials" }, { role: "query", secret: "flex-query-main" }]);
    expect(grant("ibkr-main", g)).toEqual(g);
  });

  it("keeps a grant written before roles as it was: `secrets` mounts the Secret of the role's own name", () => {
    const g = grant("ibkr", { capabilities: ["connector"], secrets: ["credentials"] });
    expect(g).toEqual({ capabilities: ["connector"], egress: [], secrets: ["credentials"], dataTiers: [] });
    expect(mountedSecrets("ibkr", g)).toEqual(["credentials"]);
  });

  it("refuses, each at its field: an unknown field, a bad role or Secret name, a role twice, a role also in secrets, one Secret for two roles, a default over 253", () => {
    const long = "a".repeat(250);
    const r = parseGrant({
      name: "ibkr",
      spec: {
        capabilities: ["connector"],
        secrets: ["query"],
        secretRoles: [
          { role: "credentials", mount: "/x" },
          { role: "Bad_Role" },
          { role: "token", secret: "-bad" },
          { role: "credentials", secret: "other" },
          { role: "query" },
          { role: "db", secret: "ibkr-credentials" },
          { role: long },
          "credentials",
        ],
      },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => `${e.path} ${e.code}`)).toEqual([
      "spec.secretRoles[0].mount unknown_field",
      "spec.secretRoles[1].role invalid_secret_name",
      "spec.secretRoles[2].secret invalid_secret_name",
      "spec.secretRoles[3].role duplicate",
      "spec.secretRoles[4].role duplicate",
      "spec.secretRoles[5].secret duplicate",
      "spec.secretRoles[6].role invalid_secret_name",
      "spec.secretRoles[7] invalid_type",
    ]);
  });

  it("carries the mapping through effective and compile: the role in both, the instance's Secret in the Deployment", () => {
    const g = grant("ibkr-main", { capabilities: ["connector"], secretRoles: [{ role: "credentials" }] });
    const e = effective(MANIFEST, g);
    if (!e.ok) throw new Error("effective");
    expect(e.value.secrets).toEqual([{ name: "ibkr-main-credentials", mountPath: "/etc/ibkr", role: "credentials" }]);
    const w = compile({ name: "ibkr-main", image: IMAGE }, e.value, TOPOLOGY);
    if (!w.ok) throw new Error("compile");
    expect(w.value.secrets).toEqual([{ volumeName: "secret-0", secretName: "ibkr-main-credentials", role: "credentials", mountPath: "/etc/ibkr", readOnly: true }]);
    expect(needsApproval(MANIFEST, g).secrets).toEqual(["query"]);
    expect(mountedSecrets("ibkr-main", g)).toEqual(["ibkr-main-credentials"]);
  });
});

const inst = (name: string, installedSeq: number, spec: unknown, roles: readonly string[] = ["credentials", "query"]): InstanceSecrets => ({
  name,
  installedSeq,
  roles,
  grant: grant(name, spec),
});

describe("a grant that maps another instance's Secret", () => {
  it("is refused at the field that maps it: another instance's default name, whatever that instance's grant says", () => {
    const a = inst("ibkr-a", 1, { capabilities: ["connector"], secretRoles: [{ role: "credentials", secret: "elsewhere" }] });
    const b = inst("ibkr-b", 2, { capabilities: ["connector"], secretRoles: [{ role: "query" }, { role: "credentials", secret: "ibkr-a-credentials" }] });
    const problems = foreignSecretProblems(b, [a]);
    expect(problems.map((p) => `${p.path} ${p.code}`)).toEqual(["spec.secretRoles[1].secret foreign_secret"]);
    expect(problems[0]?.message).toContain("ibkr-a");
    expect(foreignSecretProblems(a, [b])).toEqual([]);
  });

  it("is refused when an instance installed earlier maps the same Secret; the earlier one keeps it", () => {
    const a = inst("ibkr-a", 1, { capabilities: ["connector"], secrets: ["credentials"] });
    const b = inst("ibkr-b", 2, { capabilities: ["connector"], secrets: ["credentials"] });
    expect(foreignSecretProblems(a, [b])).toEqual([]);
    expect(foreignSecretProblems(b, [a]).map((p) => `${p.path} ${p.code}`)).toEqual([`spec.secrets[0] ${ErrorCode.ForeignSecret}`]);
  });

  it("refuses only the grant that took another's default, even when that instance was installed earlier", () => {
    const a = inst("ibkr-a", 1, { capabilities: ["connector"], secretRoles: [{ role: "credentials", secret: "ibkr-b-credentials" }] });
    const b = inst("ibkr-b", 2, { capabilities: ["connector"], secretRoles: [{ role: "credentials" }] });
    expect(foreignSecretProblems(a, [b]).map((p) => p.path)).toEqual(["spec.secretRoles[0].secret"]);
    expect(foreignSecretProblems(b, [a])).toEqual([]);
  });

  it("is not refused for its own defaults, nor for a Secret nobody else maps", () => {
    const a = inst("ibkr-a", 1, { capabilities: ["connector"], secretRoles: [{ role: "credentials" }] });
    const b = inst("ibkr-b", 2, { capabilities: ["connector"], secretRoles: [{ role: "credentials" }, { role: "query", secret: "shared-nothing" }] });
    expect(foreignSecretProblems(a, [a, b])).toEqual([]);
    expect(foreignSecretProblems(b, [a, b])).toEqual([]);
  });

  it("for any two instances of one image, no Secret is mounted by both once refused grants run nothing", () => {
    const name = fc.constantFrom("ibkr", "ibkr-a", "ibkr-b", "ibkr-a-b", "a", "b");
    const role = fc.constantFrom("credentials", "query", "b-credentials", "a-query");
    const secret = fc.constantFrom("credentials", "ibkr-credentials", "ibkr-a-credentials", "ibkr-b-query", "shared", "a-b-credentials");
    const roleEntry = fc.record({ role, secret: fc.option(secret, { nil: undefined }) }, { requiredKeys: ["role"] });
    const spec = fc.record({ legacy: fc.uniqueArray(role, { maxLength: 2 }), roles: fc.uniqueArray(roleEntry, { maxLength: 3, selector: (r) => r.role }) });
    fc.assert(
      fc.property(fc.uniqueArray(name, { minLength: 2, maxLength: 2 }), fc.array(spec, { minLength: 2, maxLength: 2 }), fc.uniqueArray(role, { minLength: 1, maxLength: 3 }), ([n1, n2], specs, roles) => {
        const manifest: Manifest = { ...MANIFEST, secrets: roles.map((r, i) => ({ name: r, mountPath: `/etc/s${i}` })) };
        const instances: InstanceSecrets[] = [];
        [n1, n2].forEach((n, i) => {
          const s = specs[i];
          if (n === undefined || s === undefined) return;
          const r = parseGrant({ name: n, spec: { capabilities: ["connector"], secrets: s.legacy, secretRoles: s.roles.map((e) => (e.secret === undefined ? { role: e.role } : e)) } });
          if (r.ok) instances.push({ name: n, installedSeq: i + 1, roles, grant: r.value.spec });
        });
        // What each instance mounts when its grant is not refused (a refused grant runs nothing).
        const mounts = instances.map((x) => (foreignSecretProblems(x, instances).length > 0 || x.grant === null ? [] : mountedSecrets(x.name, x.grant, manifest)));
        const [m1 = [], m2 = []] = mounts;
        expect(m1.filter((s) => m2.includes(s))).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("names defaults distinctly for two instances of one image", () => {
    fc.assert(fc.property(fc.constantFrom("a", "b", "ibkr", "ibkr-a"), fc.constantFrom("a", "b", "ibkr", "ibkr-a"), fc.constantFrom("credentials", "q.x"), (x, y, r) => {
      fc.pre(x !== y);
      expect(defaultSecretName(x, r)).not.toBe(defaultSecretName(y, r));
    }));
  });
});
