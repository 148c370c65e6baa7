/**
 * Between an approval and the reconciler's next decision, the console says what is true: the
 * plugin is approved and rolling out — not "held back", not "Nothing waits for approval", not
 * "Approve it below" with no button. The reconciler here runs only when the test says so. The
 * approval box names its content in its id, so a refresh keeps it while nothing changed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";
import { call, cookieOf } from "./support.js";

let demo: ConsoleDemo;
let cookie: string;

beforeAll(async () => {
  // An hour between passes: nothing decides behind the test's back.
  demo = await startConsoleDemo({ history: false, intervalMs: 3_600_000 });
  const link = new URL(await demo.signIn("alice", "owner"));
  cookie = cookieOf(await call(demo.url, link.pathname + link.search));
}, 60_000);

afterAll(async () => {
  await demo.stop();
});

const get = async (path: string): Promise<string> => {
  const r = await call(demo.url, path, { headers: { cookie } });
  expect(r.status).toBe(200);
  return r.text;
};
const boxId = (page: string): string => /<div id="(approval-[0-9a-f]{16})" class="approval" hx-preserve="true">/.exec(page)?.[1] ?? "";
const text = (page: string): string => page.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");

describe("an approval the reconciler has not taken in yet", () => {
  let waiting: string;
  let approved: string;

  it("keeps the approval box's id while nothing changes", async () => {
    waiting = await get("/plugins/nbp-fx");
    expect(text(waiting)).toMatch(/Waiting for your approval/);
    expect(boxId(waiting)).not.toBe("");
    expect(boxId(await get("/plugins/nbp-fx"))).toBe(boxId(waiting));
  });

  it("reads as approved and rolling out, on the plugin's page and in the list", async () => {
    const version = /name="version" value="(\d+)"/.exec(waiting)?.[1] ?? "";
    const r = await call(demo.url, "/plugins/nbp-fx/approve", { method: "POST", body: `version=${version}`, headers: { cookie, origin: demo.url, "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" } });
    expect(r.status).toBe(303);
    const seq = /approved=(\d+)/.exec(r.headers.location ?? "")?.[1] ?? "";
    approved = await get(r.headers.location ?? "");
    const words = text(approved);
    expect(words).toMatch(/approved; rolling out/);
    expect(words).toContain(`Approved by you The grant edit is event ${seq}`);
    expect(words).toMatch(/Rolling out nbp-fx@sha256:ac327d8f7783…/);
    expect(words).toContain(`Approved: your grant edit is event ${seq}. The reconciler rolls out the version asked for in a moment`);
    expect(approved).toContain(`hx-get="/plugins/nbp-fx?approved=${seq}"`);
    for (const contradiction of [/held back/, /Nothing waits for approval/, /Approve it below/, /Waiting for your approval/]) expect(words).not.toMatch(contradiction);
    expect(boxId(approved)).not.toBe(boxId(waiting));
    const list = text(await get("/plugins"));
    expect(list).toMatch(new RegExp(`nbp-fx ◔ approved; rolling out .* approved at event ${seq}`));
    expect(list).toMatch(/3 plugins: 2 running, 1 approved and rolling out As of|3 plugins: 2 running, 1 approved and rolling out Plugin/);
    expect(list).not.toMatch(/held back/);
  });

  it("reads as running once the reconciler has decided", async () => {
    await demo.cp.pass();
    const seq = /approved=(\d+)/.exec(approved)?.[1] ?? "";
    expect(text(await get(`/plugins/nbp-fx?approved=${seq}`))).toContain(`Approved: your grant edit is event ${seq}. The version asked for runs now.`);
    const page = text(await get("/plugins/nbp-fx"));
    expect(page).toMatch(/nbp-fx ◐?●? ?running/);
    expect(page).toMatch(/Nothing waits for approval/);
    expect(page).not.toMatch(/rolling out/);
    expect(text(await get("/plugins"))).not.toMatch(/rolling out/);
  });
});
