/**
 * The console answers only at its canonical origin (`http://127.0.0.1:<port>` here), through real
 * HTTP on 127.0.0.1 with the views running: cookies are not port-scoped, so a console opened as
 * `localhost:<port>` would share its cookie with the plugin proxy and the gateway on localhost. A
 * GET or HEAD at the listener's other loopback names is redirected to the canonical origin (before
 * anything is read, a sign-in code included), any other method refused, and a write whose Origin
 * is such a name is refused as cross-site.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";
import { bearer, call, cookieOf } from "./support.js";

let demo: ConsoleDemo;
let port: string;

beforeAll(async () => {
  demo = await startConsoleDemo({ history: false, views: true });
  port = new URL(demo.url).port;
}, 60_000);

afterAll(async () => {
  await demo?.stop();
});

/** One request to the console's listener with this Host and request target, exactly as written. */
function raw(method: string, host: string, target: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ hostname: "127.0.0.1", port: Number(port), method, path: target, headers: { host, ...headers } }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("the console's canonical origin", () => {
  it("is where up's sign-in link points and where the views are framed from", () => {
    expect(demo.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(demo.cp.server?.origin).toBe(demo.url);
    expect(demo.cp.views?.origins.console).toBe(demo.url);
  });

  it.each([
    ["GET", "localhost", "/plugins/nbp-fx?approved=1"],
    ["HEAD", "localhost", "/"],
    ["GET", "[::1]", "/api/v1/plugins"],
    ["GET", "LOCALHOST", "/log?plugin=nbp-fx"],
  ])("redirects %s at %s to it, keeping the path and query %s", async (method, name, target) => {
    const r = await raw(method, `${name}:${port}`, target);
    expect([r.status, r.headers["location"]]).toEqual([307, `${demo.url}${target}`]);
    expect(r.headers["set-cookie"]).toBeUndefined();
  });

  it("redirects a request target written as an absolute URL to its own origin, never to the host it names", async () => {
    const r = await raw("GET", `localhost:${port}`, "http://evil.example/plugins?x=1");
    expect([r.status, r.headers["location"]]).toEqual([307, `${demo.url}/plugins?x=1`]);
  });

  it("redirects a sign-in link opened at localhost without redeeming it, so it signs in at the canonical origin only", async () => {
    const link = new URL(await demo.signIn("ola", "viewer"));
    const there = await raw("GET", `localhost:${port}`, link.pathname + link.search);
    expect([there.status, there.headers["set-cookie"]]).toEqual([307, undefined]);
    const here = await call(String(there.headers["location"]), "");
    expect(here.status).toBe(303);
    expect(here.headers["set-cookie"]?.[0]).toMatch(/^openfief_session=/);
  });

  it("refuses sign-out at another loopback name", async () => {
    const r = await raw("POST", `localhost:${port}`, "/signout", { origin: `http://localhost:${port}` });
    expect([r.status, r.headers["set-cookie"]]).toEqual([400, undefined]);
  });

  it.each([
    ["POST", "/api/v1/apply", "application/yaml"],
    ["DELETE", "/api/v1/grants/ledger-view", undefined],
  ])("refuses %s %s at another loopback name, doing nothing", async (method, path, type) => {
    const token = await demo.token("alice", "owner");
    const before = await demo.cp.runtime.store.head();
    const r = await raw(method, `localhost:${port}`, path, { ...bearer(token), ...(type === undefined ? {} : { "content-type": type }) }, type === undefined ? undefined : "apiVersion: v1\n");
    expect([r.status, (JSON.parse(r.text) as { field?: string }).field]).toEqual([400, "Host"]);
    expect(await demo.cp.runtime.store.head()).toBe(before);
  });

  it("refuses a write with the cookie whose Origin is another loopback name of the console", async () => {
    const link = new URL(await demo.signIn("olga", "owner"));
    const cookie = cookieOf(await call(demo.url, link.pathname + link.search));
    const r = await call(demo.url, "/api/v1/apply", { method: "POST", headers: { cookie, origin: `http://localhost:${port}`, "content-type": "application/yaml" }, body: "x" });
    expect([r.status, r.json().field]).toEqual([403, "Origin"]);
  });

  it("still refuses a Host it was not told it has (DNS rebinding), without redirecting", async () => {
    const r = await raw("GET", `evil.example:${port}`, "/");
    expect([r.status, r.headers["location"]]).toEqual([400, undefined]);
  });
});
