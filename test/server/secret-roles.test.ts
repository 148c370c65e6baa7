/**
 * Approving a Secret role through the console and the JSON API (docs/adr/0151): the confirmation
 * shows the instance's own Secret the role will mount, and the grant edit maps each role to
 * `<plugin>-<role>` in `secretRoles`, whichever face approved it. Two instances of the demo's
 * ledger-view image are installed beside the demo's own.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyResources, parseResources } from "../../src/app/index.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";
import { bearer, call, cookieOf } from "./support.js";

const LEDGER = readFileSync(join(import.meta.dirname, "..", "..", "examples", "plugins", "ledger-view.yaml"), "utf8");

let demo: ConsoleDemo;
let cookie: string;
let token: string;

beforeAll(async () => {
  // An hour between passes: nothing decides behind the test's back.
  demo = await startConsoleDemo({ history: false, intervalMs: 3_600_000 });
  const link = new URL(await demo.signIn("alice", "owner"));
  cookie = cookieOf(await call(demo.url, link.pathname + link.search));
  token = await demo.token("alice", "owner");
  for (const name of ["ledger-a", "ledger-b"]) {
    await applyResources(demo.cp.runtime.store, parseResources(LEDGER.replace(/name: ledger-view\n/, `name: ${name}\n`), name), "owner:cli");
  }
  await demo.cp.pass();
}, 60_000);

afterAll(async () => {
  await demo.stop();
});

const text = (page: string): string => page.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");
const grantOf = async (name: string) => (await demo.cp.runtime.store.last(`plugin/${name}`, "grant.observed"))?.data.spec;

describe("approving a Secret role", () => {
  it("the console shows the Secret of the instance's own the role will mount, and its approval maps it so", async () => {
    const page = await call(demo.url, "/plugins/ledger-a", { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(text(page.text)).toMatch(/Secrets \+ ?ledger-view-session as Secret ledger-a-ledger-view-session/);
    const version = /name="version" value="(\d+)"/.exec(page.text)?.[1] ?? "";
    const r = await call(demo.url, "/plugins/ledger-a/approve", { method: "POST", body: `version=${version}`, headers: { cookie, origin: demo.url, "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" } });
    expect(r.status).toBe(303);
    expect(await grantOf("ledger-a")).toMatchObject({ secrets: [], secretRoles: [{ role: "ledger-view-session", secret: "ledger-a-ledger-view-session" }] });
    expect((await demo.cp.runtime.store.last("plugin/ledger-a", "grant.observed"))?.actor).toBe("owner:web:alice");
  });

  it("the API shows the grant after approving and approves the same way, naming the Secret in its answer", async () => {
    const seen = await call(demo.url, "/api/v1/plugins/ledger-b", { headers: bearer(token) });
    expect(seen.json()).toMatchObject({ pending: { grantAfter: { secrets: [], secretRoles: [{ role: "ledger-view-session", secret: "ledger-b-ledger-view-session" }] } } });
    const r = await call(demo.url, "/api/v1/plugins/ledger-b/approve", { method: "POST", headers: { ...bearer(token), "if-match": seen.headers.etag ?? "" } });
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toMatchObject({ secretRoles: [{ role: "ledger-view-session", secret: "ledger-b-ledger-view-session" }] });
    expect(await grantOf("ledger-b")).toMatchObject({ secrets: [], secretRoles: [{ role: "ledger-view-session", secret: "ledger-b-ledger-view-session" }] });
  });

  it("then runs each instance with its own Secret, neither refused for the other's", async () => {
    await demo.cp.pass();
    const store = demo.cp.runtime.store;
    for (const name of ["ledger-a", "ledger-b"]) {
      const d = await store.last(`plugin/${name}`, "rollout.decided");
      expect(JSON.stringify(d?.data)).toContain(`${name}-ledger-view-session`);
      expect(await store.read({ stream: `plugin/${name}`, type: ["grant.verdict"] })).toEqual([]);
    }
  });
});
