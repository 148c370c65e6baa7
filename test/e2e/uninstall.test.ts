/**
 * One Secret per instance and uninstall with --purge, through the CLI as a user runs it: two
 * instances of one signed image each mount their own Secret; a grant reaching for the other's is
 * refused; a purge removes the grant and the instance's own Secrets and records what went, once,
 * also when the process is killed (SIGKILL) in the middle of it.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { freshBundle, ok, openfief, ROOT, spawnOpenfief } from "./support.js";

let dir: string;

const data = (): string[] => ["--data", join(dir, "data")];
const flags = (): string[] => [...data(), "--out", join(dir, "cluster"), "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")];

interface Doc { metadata: { name: string }; spec: Record<string, unknown> }

/** The example ledger-view Plugin installed again under `name` (the same signed image), with a grant of `secretsSpec`. */
async function secondInstance(name: string, secretsSpec: Record<string, unknown>): Promise<string> {
  const plugin = parse(await readFile(join(ROOT, "examples", "plugins", "ledger-view.yaml"), "utf8")) as Doc;
  const grant = parse(await readFile(join(ROOT, "examples", "plugins", "ledger-view-grant.yaml"), "utf8")) as Doc;
  plugin.metadata.name = name;
  grant.metadata.name = name;
  delete grant.spec["secrets"];
  Object.assign(grant.spec, secretsSpec);
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, `${stringify(plugin)}---\n${stringify(grant)}`);
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

async function events(): Promise<{ stream: string; type: string; data: Record<string, unknown> }[]> {
  return (await ok(["log", "--json", ...data()])).trim().split("\n").map((l) => JSON.parse(l) as { stream: string; type: string; data: Record<string, unknown> });
}

async function secret(name: string): Promise<void> {
  await mkdir(join(dir, "cluster", "secrets"), { recursive: true });
  await writeFile(join(dir, "cluster", "secrets", `${name}.yaml`), `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}\n  namespace: openfief\n`);
}

const secretsLeft = async (): Promise<string[]> => (await readdir(join(dir, "cluster", "secrets"))).sort();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-uninstall-"));
  await freshBundle();
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data()]);
}, 180_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("one Secret per instance, and uninstall with --purge", () => {
  it("runs two instances of one image, each with its own Secret", async () => {
    await ok(["apply", "-f", await secondInstance("ledger-b", { secretRoles: [{ role: "ledger-view-session" }] }), ...data()]);
    await ok(["reconcile", ...flags()]);
    expect(await mounted("ledger-view")).toEqual(["ledger-view-session"]);
    expect(await mounted("ledger-b")).toEqual(["ledger-b-ledger-view-session"]);
  }, 60_000);

  it("refuses a grant that maps the other instance's Secret, recorded with its code and field", async () => {
    await ok(["apply", "-f", await secondInstance("ledger-c", { secretRoles: [{ role: "ledger-view-session", secret: "ledger-view-session" }] }), ...data()]);
    await ok(["reconcile", ...flags()]);
    expect(await mounted("ledger-c")).toBeNull();
    const verdict = (await events()).find((e) => e.stream === "plugin/ledger-c" && e.type === "grant.verdict");
    expect(verdict?.data).toMatchObject({ ok: false, errors: [{ code: "foreign_secret", path: "spec.secretRoles[0].secret" }] });
    const why = await openfief(["why", "ledger-c", ...data()]);
    expect(why.stdout).toContain("refused");
  }, 60_000);

  it("purges an instance with its Secret present: the Secret, the grant and the objects go, the other instance's stay", async () => {
    await secret("ledger-b-ledger-view-session");
    await secret("ledger-view-session");
    const r = await ok(["delete", "plugin", "ledger-b", "--purge", ...data(), "--out", join(dir, "cluster")]);
    expect(r).toContain("Secret ledger-b-ledger-view-session");
    expect(r).toMatch(/plugin\/ledger-b uninstalled \(event \d+\)/);
    expect(await secretsLeft()).toEqual(["ledger-view-session.yaml"]);
    expect(await mounted("ledger-b")).toBeNull();
    const mine = (await events()).filter((e) => e.stream === "plugin/ledger-b");
    expect(mine.filter((e) => e.type === "plugin.uninstalled").map((e) => e.data)).toEqual([
      expect.objectContaining({ grant: true, secrets: ["ledger-b-ledger-view-session"], absent: [] }),
    ]);
    expect(mine.map((e) => e.type)).toContain("grant.deleted");
    // Its earlier decisions stay in the log.
    expect(mine.map((e) => e.type)).toContain("rollout.decided");
    expect((await openfief(["delete", "plugin", "ledger-b", "--purge", ...data()])).code).toBe(1);
    // why and log show what it did as coming from a removed instance.
    const why = await ok(["why", "ledger-b", ...data()]);
    expect(why.split("\n")[0]).toMatch(/^ledger-b is a removed instance: it was uninstalled at \S+ \S+ UTC \(event \d+\), removing .*its grant, Secret ledger-b-ledger-view-session/);
    const log = (await ok(["log", "--plugin", "ledger-b", ...data()])).trim().split("\n");
    const decided = log.filter((l) => l.includes("rollout.decided"));
    expect(decided[0]).toMatch(/ — from removed instance ledger-b \(removed at \S+ \S+ UTC, event \d+, uninstalled\)/);
  }, 60_000);

  it("purges a plugin with no Secret at all", async () => {
    const r = await ok(["delete", "plugin", "ecb-fx", "--purge", ...data(), "--out", join(dir, "cluster")]);
    expect(r).toContain("removes its objects and allow-list entry, its grant");
    expect(r).not.toContain("Secret");
    await ok(["reconcile", ...flags()]);
    expect(await mounted("ecb-fx")).toBeNull();
  }, 60_000);

  it("never purges a Secret another installed instance mounts: the refused ledger-c leaves ledger-view's", async () => {
    const r = await ok(["delete", "plugin", "ledger-c", "--purge", ...data(), "--out", join(dir, "cluster")]);
    expect(r).not.toContain("Secret");
    expect(await secretsLeft()).toEqual(["ledger-view-session.yaml"]);
  }, 60_000);

  it("converges when killed (SIGKILL) in the middle of a purge: nothing half-deleted, plugin.uninstalled once", async () => {
    const killed = await spawnOpenfief(["delete", "plugin", "ledger-view", "--purge", ...data(), "--out", join(dir, "cluster")], { OPENFIEF_TEST_KILL_MID_PURGE: "1" });
    expect(killed.signal).toBe("SIGKILL");
    let mine = (await events()).filter((e) => e.stream === "plugin/ledger-view");
    // The intent and both deletions are in the log together; the purge is not yet recorded done.
    expect(mine.map((e) => e.type).slice(-3)).toEqual(["plugin.uninstall.requested", "plugin.deleted", "grant.deleted"]);
    expect(mine.filter((e) => e.type === "plugin.uninstalled")).toEqual([]);
    // The next reconcile finishes it, once; a second changes nothing.
    await ok(["reconcile", ...flags()]);
    await ok(["reconcile", ...flags()]);
    mine = (await events()).filter((e) => e.stream === "plugin/ledger-view");
    expect(mine.filter((e) => e.type === "plugin.uninstalled").map((e) => e.data)).toEqual([
      expect.objectContaining({ grant: true, secrets: [], absent: ["ledger-view-session"] }),
    ]);
    expect(await secretsLeft()).toEqual([]);
    expect(await mounted("ledger-view")).toBeNull();
    expect((await openfief(["verify-log", ...data()])).code).toBe(0);
  }, 90_000);
});
