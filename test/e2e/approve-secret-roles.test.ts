/**
 * `openfief approve` (the bundle, as a process) grants a pending Secret role mapped to the
 * instance's own Secret (docs/adr/0151): two instances of one signed image, each approved the
 * usual way, mount `<plugin>-<role>` each, and an approval whose grant would not hold is refused
 * with `conflict`, recording nothing.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { freshBundle, ok, ROOT, spawnOpenfief } from "./support.js";

let dir: string;

const data = (): string[] => ["--data", join(dir, "data")];
const flags = (): string[] => [...data(), "--out", join(dir, "cluster"), "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")];

interface Doc { metadata: { name: string }; spec: Record<string, unknown> }

/** The example ledger-view Plugin (its signed image asks for the Secret role `ledger-view-session`) installed as `name`, with a grant when given. */
async function instance(name: string, grant?: Record<string, unknown>): Promise<string> {
  const plugin = parse(await readFile(join(ROOT, "examples", "plugins", "ledger-view.yaml"), "utf8")) as Doc;
  plugin.metadata.name = name;
  const docs = [stringify(plugin)];
  if (grant !== undefined) docs.push(stringify({ apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { name, namespace: "openfief" }, spec: grant }));
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, docs.join("---\n"));
  return file;
}

/** The Secrets a plugin's Deployment mounts, from the cluster folder; null when it has no objects. */
async function mounted(name: string): Promise<string[] | null> {
  let text: string;
  try {
    text = await readFile(join(dir, "cluster", "plugins", `${name}.yaml`), "utf8");
  } catch {
    return null;
  }
  const dep = parseAllDocuments(text).map((d) => d.toJSON() as { kind: string; spec?: { template: { spec: { volumes: { secret?: { secretName: string } }[] } } } }).find((d) => d.kind === "Deployment");
  return (dep?.spec?.template.spec.volumes ?? []).flatMap((v) => (v.secret === undefined ? [] : [v.secret.secretName]));
}

interface Logged { seq: number; stream: string; type: string; data: Record<string, unknown> }

async function events(): Promise<Logged[]> {
  return (await ok(["log", "--json", ...data()])).trim().split("\n").map((l) => JSON.parse(l) as Logged);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-approve-roles-"));
  await freshBundle();
  await ok(["apply", "-f", await instance("ledger-a"), ...data()]);
  await ok(["apply", "-f", await instance("ledger-b"), ...data()]);
  await ok(["reconcile", ...flags()]);
}, 180_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("openfief approve with Secret roles (the bundle, as a process)", () => {
  it("approves two instances of one image, each mapped to and mounting its own Secret", async () => {
    expect(await mounted("ledger-a")).toBeNull();
    for (const name of ["ledger-a", "ledger-b"]) {
      const r = await spawnOpenfief(["approve", name, ...data()]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`Secret role ledger-view-session mounts this instance's Secret ${name}-ledger-view-session`);
    }
    const grants = (await events()).filter((e) => e.type === "grant.observed");
    expect(grants.map((e) => [e.stream, e.data["spec"]])).toEqual([
      ["plugin/ledger-a", expect.objectContaining({ secrets: [], secretRoles: [{ role: "ledger-view-session", secret: "ledger-a-ledger-view-session" }] })],
      ["plugin/ledger-b", expect.objectContaining({ secrets: [], secretRoles: [{ role: "ledger-view-session", secret: "ledger-b-ledger-view-session" }] })],
    ]);
    await ok(["reconcile", ...flags()]);
    expect(await mounted("ledger-a")).toEqual(["ledger-a-ledger-view-session"]);
    expect(await mounted("ledger-b")).toEqual(["ledger-b-ledger-view-session"]);
    // Neither reaches for the other's Secret: no grant is refused.
    expect((await events()).filter((e) => e.type === "grant.verdict")).toEqual([]);
  }, 90_000);

  it("refuses (exit 1, conflict, naming the field) an approval whose default Secret the grant already mounts, recording nothing", async () => {
    await ok(["apply", "-f", await instance("ledger-c", { capabilities: ["view"], dataTiers: ["ledger"], secretRoles: [{ role: "spare", secret: "ledger-c-ledger-view-session" }] }), ...data()]);
    const before = (await events()).length;
    const r = await spawnOpenfief(["approve", "ledger-c", ...data()]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/conflict/);
    expect(r.stderr).toContain("spec.secretRoles[1].secret");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect((await events()).length).toBe(before);
  }, 60_000);
});
