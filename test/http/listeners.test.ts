/**
 * Every HTTP listener of the product is created with the same limits (src/http): the console and
 * API, the views' two listeners, the connector server (HTTP/1.1 on its shared port), the operator's
 * health server and the cluster plugin host's health and metrics server. The limits are tightened
 * for the test (a 300 ms headers timeout, 2 KiB of headers, 200 ms keep-alive) and each listener is
 * shown to hold them: a client slow with its headers is answered 408 and cut, a head over the size
 * is answered 431, and an idle kept-alive connection is closed. The plumbing's own parts (declared
 * bodies refused before reading, the one reader, the request logger) are tested beside.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage, Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ControlPlaneMetrics, Sessions } from "../../src/app/index.js";
import type { FaceContext } from "../../src/app/index.js";
import { healthServer, HostMetrics } from "../../src/compose/cluster-plugin-host.js";
import { serveConnectors } from "../../src/connector/index.js";
import { openStore, type EventLog } from "../../src/events/index.js";
import { createListener, LISTENER_LIMITS, NO_BODY, overrideListenerLimits, readBody, refuseBody, requestLogger } from "../../src/http/index.js";
import { startHealthServer } from "../../src/kube/index.js";
import { startServer } from "../../src/server/index.js";
import { listenViews } from "../../src/views/index.js";

const LIMITS = { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 200, maxHeaderBytes: 2048, maxHeadersCount: 20 };

/** Sends `text` on a fresh connection and collects what comes back until the server closes it (or `waitMs` passes). */
function raw(port: number, text: string, waitMs = 3_000): Promise<{ answer: string; closedAfterMs: number | null }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ answer, closedAfterMs: null });
    }, waitMs);
    socket.on("data", (b: Buffer) => { answer += b.toString("latin1"); });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ answer, closedAfterMs: Date.now() - started });
    });
    socket.write(text);
  });
}

interface Listener {
  readonly port: number;
  /** A path the listener answers with a GET. */
  readonly path: string;
  close(): Promise<void>;
}

const listeners = new Map<string, Listener>();
let restore: () => void;
let dir: string;
let store: EventLog;

function closing(server: Server): () => Promise<void> {
  return () => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

beforeAll(async () => {
  restore = overrideListenerLimits(LIMITS);
  dir = mkdtempSync(join(tmpdir(), "http-limits-"));
  store = await openStore({ file: join(dir, "events.db") });
  const logger = pino({ level: "silent" });
  const ctx: FaceContext = {
    dataDir: dir, store, sessions: await Sessions.open(dir), views: null, metrics: new ControlPlaneMetrics(), logger, clock: () => new Date(),
    readiness: () => ({ ready: true, reasons: [] }),
  };
  const face = await startServer(ctx, { host: "127.0.0.1", port: 0 });
  listeners.set("console and API", { port: Number(new URL(face.url).port), path: "/healthz", close: () => face.close() });
  const views = await listenViews({ host: "127.0.0.1", pluginProxyOrigin: "http://localhost:0", gatewayOrigin: "http://localhost:0", logger });
  listeners.set("views' plugin proxy", { port: Number(views.pluginProxy.address.split(":").at(-1)), path: "/", close: async () => undefined });
  listeners.set("views' gateway", { port: Number(views.gateway.address.split(":").at(-1)), path: "/", close: () => views.close() });
  const connectors = await serveConnectors({
    verify: () => Promise.resolve({ ok: false, code: "missing" } as never),
    runs: () => false, notRunning: () => undefined, call: () => Promise.reject(new Error("no call")),
  }, { host: "127.0.0.1", port: 0 });
  listeners.set("connector server", { port: connectors.port, path: "/openfief.connector.v1.ConnectorService/Sync", close: () => connectors.close() });
  const state = { synced: () => true, lastSuccessfulList: () => new Date(), electionStarted: () => true, isLeader: () => true };
  const operatorHealth = await startHealthServer(0, state, {}, "127.0.0.1");
  listeners.set("operator's health", { port: (operatorHealth.address() as AddressInfo).port, path: "/healthz", close: closing(operatorHealth) });
  const hostHealth = healthServer(new HostMetrics(), () => true);
  await new Promise<void>((resolve) => hostHealth.listen(0, "127.0.0.1", () => resolve()));
  listeners.set("plugin host's health and metrics", { port: (hostHealth.address() as AddressInfo).port, path: "/healthz", close: closing(hostHealth) });
});

afterAll(async () => {
  restore();
  for (const l of listeners.values()) await l.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("every listener has the same limits", () => {
  const names = ["console and API", "views' plugin proxy", "views' gateway", "connector server", "operator's health", "plugin host's health and metrics"];

  it.each(names)("%s: a client slow with its headers is answered 408 and cut at the headers timeout", async (name) => {
    const l = listeners.get(name);
    if (l === undefined) throw new Error(`${name} did not start`);
    const r = await raw(l.port, `GET ${l.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
    expect(r.closedAfterMs).not.toBeNull();
    expect(r.closedAfterMs).toBeLessThan(2_500);
    expect(r.answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it.each(names)("%s: a head over the size limit is answered 431", async (name) => {
    const l = listeners.get(name);
    if (l === undefined) throw new Error(`${name} did not start`);
    const r = await raw(l.port, `GET ${l.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: ${"a".repeat(LIMITS.maxHeaderBytes + 100)}\r\n\r\n`);
    expect(r.answer).toMatch(/^HTTP\/1\.1 431/);
  });

  it.each(names)("%s: an idle kept-alive connection is closed at the keep-alive limit", async (name) => {
    const l = listeners.get(name);
    if (l === undefined) throw new Error(`${name} did not start`);
    const r = await raw(l.port, `GET ${l.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    expect(r.answer).toMatch(/^HTTP\/1\.1 \d{3}/);
    expect(r.closedAfterMs).not.toBeNull();
    expect(r.closedAfterMs).toBeLessThan(2_000);
  });
});

describe("the plumbing", () => {
  const req = (headers: Record<string, string>, chunks: string[] = []): IncomingMessage => Object.assign(Readable.from(chunks.map((c) => Buffer.from(c))), { headers }) as unknown as IncomingMessage;
  const json = { types: ["application/json"], maxBytes: 10 };

  it("has the listeners' limits by default, and a server made by it carries them", async () => {
    expect(LISTENER_LIMITS).toMatchObject({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, maxHeaderBytes: 16 * 1024, maxHeadersCount: 100 });
    const undo = overrideListenerLimits({});
    undo();
    const s = createListener();
    expect([s.headersTimeout, s.requestTimeout, s.keepAliveTimeout, s.maxHeadersCount]).toEqual([LIMITS.headersTimeoutMs, LIMITS.requestTimeoutMs, LIMITS.keepAliveTimeoutMs, LIMITS.maxHeadersCount]);
  });

  it("refuses a body a route does not take before reading it: 413 for none or too large, 415 for another media type", () => {
    expect(refuseBody(req({}), NO_BODY)).toBeNull();
    expect(refuseBody(req({ "content-length": "0" }), NO_BODY)).toBeNull();
    expect(refuseBody(req({ "content-length": "3" }), NO_BODY)).toMatchObject({ status: 413 });
    expect(refuseBody(req({ "transfer-encoding": "chunked" }), NO_BODY)).toMatchObject({ status: 413 });
    expect(refuseBody(req({ "content-length": "11", "content-type": "application/json" }), json)).toMatchObject({ status: 413, reason: "too_large" });
    expect(refuseBody(req({ "content-length": "1e3", "content-type": "application/json" }), json)).toMatchObject({ status: 413 });
    expect(refuseBody(req({ "content-length": "2", "content-type": "text/plain" }), json)).toMatchObject({ status: 415, reason: "unsupported_media_type" });
    expect(refuseBody(req({ "content-length": "2", "content-type": "Application/JSON; charset=utf-8" }), json)).toBeNull();
    expect(refuseBody(req({ "content-length": "2", "content-type": "text/plain" }), { ...json, unsupported: "send JSON" })).toMatchObject({ message: "send JSON" });
  });

  it("reads a body up to its limit, and stops at the first byte over it", async () => {
    expect(await readBody(req({}, ["{\"a\":", "1}"]), 10)).toMatchObject({ ok: true });
    expect(await readBody(req({}, ["0123456789", "x"]), 10)).toEqual({ ok: false, reason: "too_large" });
    expect(await readBody(req({ "content-length": "11" }, []), 10)).toEqual({ ok: false, reason: "too_large" });
  });

  it("gives each request a child logger naming its id: the client's when it is a short token, else a fresh one", () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (l: string) => { lines.push(l); } });
    const headers = new Map<string, string>();
    const res = { headersSent: false, setHeader: (k: string, v: string) => headers.set(k, v) };
    requestLogger(logger, req({ "x-request-id": "abc-123" }), res).info("one");
    expect(headers.get("X-Request-Id")).toBe("abc-123");
    requestLogger(logger, req({ "x-request-id": "not a token\n" }), res).info("two");
    expect(headers.get("X-Request-Id")).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ req: "abc-123", msg: "one" });
    expect(JSON.parse(lines[1] ?? "{}")).toMatchObject({ req: headers.get("X-Request-Id"), msg: "two" });
  });
});
