/**
 * An approval grants a pending Secret role in `secretRoles`, mapped to the instance's own Secret
 * `<plugin>-<role>` (docs/adr/0160, 0151): two instances of one image approved the same way mount
 * different Secrets, and a grant the approval could not write validly is refused, changing nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import { effective, parseGrant, parsePlugin } from "../plugins/index.js";
import { approve, grantWithPending } from "./owner-edits.js";
import { pendingApproval } from "./plugin-view.js";

const IMAGE = `registry.example/ibkr@sha256:${"b".repeat(64)}`;
const MANIFEST = {
  capabilities: ["connector"], egress: [{ host: "a.example" }],
  secrets: [{ name: "flex-token", mountPath: "/etc/ibkr/flex" }, { name: "query", mountPath: "/etc/ibkr/query" }],
  dataTiers: [],
};
let dir: string;
let store: EventLog;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-approve-roles-"));
  store = await openStore({ file: join(dir, "log.db") });
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function install(name: string, grant?: Record<string, unknown>): Promise<void> {
  await store.append([
    { stream: `plugin/${name}`, type: "plugin.observed", actor: "owner:cli", data: { name, spec: { image: IMAGE, manifest: MANIFEST } } },
    ...(grant === undefined ? [] : [{ stream: `plugin/${name}`, type: "grant.observed" as const, actor: "owner:cli", data: { name, spec: grant } }]),
  ]);
}

async function grantSpec(name: string): Promise<unknown> {
  return (await store.last(`plugin/${name}`, "grant.observed"))?.data.spec;
}

describe("approving Secret roles", () => {
  it("writes each pending role in secretRoles with the instance's own Secret, never in secrets", async () => {
    await install("ibkr-a");
    const r = await approve(store, "ibkr-a", "owner:cli");
    expect(r.approved.secrets).toEqual(["flex-token", "query"]);
    expect(await grantSpec("ibkr-a")).toEqual({
      capabilities: ["connector"], egress: [{ host: "a.example", port: 443 }], secrets: [],
      secretRoles: [{ role: "flex-token", secret: "ibkr-a-flex-token" }, { role: "query", secret: "ibkr-a-query" }],
      dataTiers: [],
    });
  });

  it("gives two instances of one image different Secrets, and what runs mounts them", async () => {
    await install("ibkr-a");
    await install("ibkr-b");
    await approve(store, "ibkr-a", "owner:cli");
    await approve(store, "ibkr-b", "owner:cli");
    const mounted = async (name: string) => {
      const p = parsePlugin({ name, spec: { image: IMAGE, manifest: MANIFEST } });
      const g = parseGrant({ name, spec: await grantSpec(name) });
      if (!p.ok || !g.ok) throw new Error("unparsable");
      const e = effective(p.value.spec.manifest, g.value.spec);
      if (!e.ok) throw new Error("no effective permissions");
      return e.value.secrets.map((s) => s.name);
    };
    const a = await mounted("ibkr-a");
    const b = await mounted("ibkr-b");
    expect(a).toEqual(["ibkr-a-flex-token", "ibkr-a-query"]);
    expect(b).toEqual(["ibkr-b-flex-token", "ibkr-b-query"]);
  });

  it("keeps what the grant already maps, and a role approved the old way, as they are", async () => {
    await install("ibkr-a", { secrets: ["query"], secretRoles: [{ role: "flex-token", secret: "flex-of-account-7" }] });
    const r = await approve(store, "ibkr-a", "owner:cli");
    expect(r.approved.secrets).toEqual([]);
    expect((await grantSpec("ibkr-a")) as { secrets: string[]; secretRoles: unknown[] }).toMatchObject({
      secrets: ["query"], secretRoles: [{ role: "flex-token", secret: "flex-of-account-7" }],
    });
  });

  it("adds a role after the roles the grant maps", async () => {
    await install("ibkr-a", { secretRoles: [{ role: "flex-token", secret: "flex-of-account-7" }] });
    await approve(store, "ibkr-a", "owner:cli");
    expect(((await grantSpec("ibkr-a")) as { secretRoles: unknown[] }).secretRoles).toEqual([
      { role: "flex-token", secret: "flex-of-account-7" }, { role: "query", secret: "ibkr-a-query" },
    ]);
  });

  it("refuses (conflict, at the field), recording nothing, when the default Secret is already mounted for another role", async () => {
    await install("ibkr-a", { secretRoles: [{ role: "flex-token", secret: "ibkr-a-query" }] });
    const before = await store.version("plugin/ibkr-a");
    await expect(approve(store, "ibkr-a", "owner:cli")).rejects.toThrow(expect.objectContaining({ code: "conflict", field: "spec.secretRoles[1].secret" }));
    expect(await store.version("plugin/ibkr-a")).toBe(before);
  });

  it("shows the grant an approval would write, with the mapping", async () => {
    await install("ibkr-b");
    const p = await pendingApproval(store, "ibkr-b");
    expect(p?.grantAfter.secretRoles).toEqual([{ role: "flex-token", secret: "ibkr-b-flex-token" }, { role: "query", secret: "ibkr-b-query" }]);
    expect(p?.grantAfter.secrets).toEqual([]);
  });

  it("writes no secretRoles when no role is approved", () => {
    const g = grantWithPending({ capabilities: [], egress: [], secrets: [], dataTiers: [] }, { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] }, "x");
    expect(g).toEqual({ capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] });
  });
});
