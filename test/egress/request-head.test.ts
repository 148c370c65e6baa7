/**
 * The proxy's own head reader on its port (ADR 0035), end to end: hostile heads over a real
 * socket are answered 400, logged once and counted by kind; a head in pieces with bytes pipelined
 * after it opens a tunnel that carries those bytes whole; the health check and the 405 answer
 * plain requests.
 */
import { connect as netConnect, createServer, type AddressInfo, type Server } from "node:net";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EgressMetrics } from "../../src/egress/metrics.js";
import type { Resolver } from "../../src/egress/resolver.js";
import { connectHead, rawRequest, startHarness, TOKENS, type Harness } from "./support/harness.js";

const resolver: Resolver = { resolve: (host) => (host === "api.example.com" ? { ok: true, addresses: ["8.8.4.4"] } : { ok: false, code: "dns_nxdomain" }) };

let echo: Server;
let h: Harness | undefined;
let metrics: EgressMetrics;

beforeAll(async () => {
  echo = createServer((s) => s.on("data", (d: Buffer) => s.write(d)).on("end", () => s.end()).on("error", () => s.destroy()));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
});
afterAll(() => echo.close());
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function harness(options: Parameters<typeof startHarness>[0]["options"] = {}): Promise<Harness> {
  metrics = new EgressMetrics(new Registry());
  h = await startHarness({ dnsServer: "127.0.0.1:1", allowLists: { alpha: "api.example.com:443\n" }, resolver, options, ports: { metrics } });
  h.routes.set("8.8.4.4", (echo.address() as AddressInfo).port);
  return h;
}

async function count(kind: string): Promise<number> {
  return (await metrics.parserRejections.get()).values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

/** Writes `pieces` one by one (a few ms apart, so each is its own read) and collects everything until the proxy closes. */
function exchange(port: number, pieces: Buffer[], thenEnd = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = netConnect({ host: "127.0.0.1", port });
    const got: Buffer[] = [];
    s.on("data", (d: Buffer) => got.push(d));
    s.on("error", reject);
    s.on("close", () => resolve(Buffer.concat(got).toString("latin1")));
    s.on("connect", () => {
      const next = (i: number): void => {
        if (s.destroyed) return;
        if (i >= pieces.length) {
          if (thenEnd) s.end();
          return;
        }
        s.write(pieces[i] as Buffer);
        setTimeout(() => next(i + 1), 2);
      };
      next(0);
    });
  });
}

const auth = `Proxy-Authorization: Basic ${Buffer.from(`plugin:${TOKENS.alpha}`).toString("base64")}`;

describe("hostile heads on the proxy's port", () => {
  it.each([
    ["a folded header", `CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n${auth}\r\n continued\r\n\r\n`, "invalid_header"],
    ["a NUL in Proxy-Authorization", `CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n${auth}\u0000\r\n\r\n`, "invalid_header"],
    ["a CR injecting a second header", `CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\rX-Upstream-Https-Proxy: http://10.0.0.1\r\n${auth}\r\n\r\n`, "invalid_header"],
    ["a bare LF", `CONNECT api.example.com:443 HTTP/1.1\nHost: x\n${auth}\n\n`, "invalid_header"],
    ["an LF in the target (a bare LF ends the line)", "CONNECT api.example.com\n:443 HTTP/1.1\r\nHost: x\r\n\r\n", "invalid_header"],
    ["a space in the target", "CONNECT api.example.com :443 HTTP/1.1\r\nHost: x\r\n\r\n", "invalid_header"],
    ["a quote in the target", "CONNECT api.\"example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n", "invalid_target"],
    ["too many headers", `CONNECT api.example.com:443 HTTP/1.1\r\n${"X-A: b\r\n".repeat(101)}${auth}\r\n\r\n`, "header_overflow"],
    ["an oversized head", `CONNECT api.example.com:443 HTTP/1.1\r\n${`X-Pad: ${"a".repeat(4000)}\r\n`.repeat(5)}${auth}\r\n\r\n`, "header_overflow"],
    ["a long line", `CONNECT api.example.com:443 HTTP/1.1\r\nX-Pad: ${"a".repeat(9000)}\r\n${auth}\r\n\r\n`, "header_overflow"],
    ["a CONNECT over HTTP/1.0", `CONNECT api.example.com:443 HTTP/1.0\r\n${auth}\r\n\r\n`, "invalid_header"],
  ])("answers %s with 400, one log line and one count, and dials nothing", async (_what, text, kind) => {
    const p = await harness();
    const bytes = Buffer.from(text, "latin1");
    // In one write and, on a second connection, in pieces: the same answer.
    const pieces = Array.from({ length: Math.ceil(bytes.length / 1500) }, (_, i) => bytes.subarray(i * 1500, (i + 1) * 1500));
    for (const sent of [[bytes], pieces]) expect(await exchange(p.port, sent)).toBe("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    const lines = p.logs.filter((l) => l.includes("rejected by the HTTP parser")).map((l) => JSON.parse(l) as { kind: string; code: string });
    expect(lines.map((l) => l.kind)).toEqual([kind, kind]);
    expect(lines.every((l) => typeof l.code === "string")).toBe(true);
    expect(p.logs.join("\n")).not.toContain(TOKENS.alpha);
    expect(await count(kind)).toBe(2);
    expect(p.dials).toEqual([]);
  });

  it("refuses two Proxy-Authorization headers with the table's 407, not by reading either", async () => {
    const p = await harness();
    const a = await rawRequest(p.port, connectHead("api.example.com:443", TOKENS.alpha, [auth]));
    expect(a.status).toBe(407);
    expect(a.body.startsWith("bad_proxy_auth_duplicate:")).toBe(true);
    expect(p.reviewer.calls).toBe(0);
  });

  it("answers a head cut short by the client's end with 400, and counts and logs it", async () => {
    const p = await harness();
    const answer = await exchange(p.port, [Buffer.from(`CONNECT api.example.com:443 HTTP/1.1\r\n${auth}\r\n`)], true);
    expect(answer).toBe("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    expect(await count("other")).toBe(1);
    const lines = p.logs.filter((l) => l.includes("rejected by the HTTP parser")).map((l) => JSON.parse(l) as { code: string });
    expect(lines.map((l) => l.code)).toEqual(["truncated_head"]);
    expect(p.dials).toEqual([]);
  });

  it("closes a connection that ends without sending a byte, counting nothing", async () => {
    const p = await harness();
    expect(await exchange(p.port, [], true)).toBe("");
    expect((await metrics.parserRejections.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);
    expect(p.logs.filter((l) => l.includes("rejected by the HTTP parser"))).toEqual([]);
  });

  it("counts and logs a head that does not arrive in time, and cuts it off without an answer", async () => {
    const p = await harness({ headTimeoutMs: 150 });
    expect(await exchange(p.port, [Buffer.from("CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n")])).toBe("");
    expect(await count("timeout")).toBe(1);
    expect(p.logs.filter((l) => l.includes("rejected by the HTTP parser"))).toHaveLength(1);
  });
});

describe("a CONNECT head read in pieces", () => {
  it("opens the tunnel and carries the bytes pipelined after the head, whole and in order", async () => {
    const p = await harness();
    const head = Buffer.from(connectHead("api.example.com:443", TOKENS.alpha), "latin1");
    const after = Buffer.alloc(100_000);
    for (let i = 0; i < after.length; i++) after[i] = (i * 31) & 0xff;
    // The head one byte at a time for its first part, then its last byte with all the data.
    const pieces = [...Array.from({ length: 20 }, (_, i) => head.subarray(i, i + 1)), head.subarray(20, head.length - 1), Buffer.concat([head.subarray(head.length - 1), after])];
    const got = await new Promise<Buffer>((resolve, reject) => {
      const s = netConnect({ host: "127.0.0.1", port: p.port });
      const chunks: Buffer[] = [];
      s.on("data", (d: Buffer) => {
        chunks.push(d);
        if (Buffer.concat(chunks).length >= 39 + after.length) s.end();
      });
      s.on("error", reject);
      s.on("close", () => resolve(Buffer.concat(chunks)));
      s.on("connect", () => {
        const next = (i: number): void => {
          if (i >= pieces.length) return;
          s.write(pieces[i] as Buffer);
          setTimeout(() => next(i + 1), 2);
        };
        next(0);
      });
    });
    const established = "HTTP/1.1 200 Connection Established\r\n\r\n";
    expect(got.subarray(0, established.length).toString("latin1")).toBe(established);
    expect(got.subarray(established.length).equals(after)).toBe(true);
    expect(p.dials.map((d) => d.address)).toEqual(["8.8.4.4"]);
  });
});

describe("plain requests on the proxy's port", () => {
  it.each([
    ["GET /healthcheck over HTTP/1.1", "GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"],
    ["GET /healthcheck over HTTP/1.0", "GET /healthcheck HTTP/1.0\r\n\r\n", "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"],
    ["HEAD /healthcheck", "HEAD /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"],
    ["HEAD of anything else, without a body", "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 Method Not Allowed\r\nAllow: CONNECT\r\nContent-Type: text/plain\r\nContent-Length: 24\r\nConnection: close\r\n\r\n"],
    ["a GET with a body it never reads", "GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "HTTP/1.1 405 Method Not Allowed\r\nAllow: CONNECT\r\nContent-Type: text/plain\r\nContent-Length: 24\r\nConnection: close\r\n\r\nonly CONNECT is allowed\n"],
  ])("answers %s, then closes", async (_what, text, answer) => {
    const p = await harness();
    expect(await exchange(p.port, [Buffer.from(text, "latin1")])).toBe(answer);
    expect(p.dials).toEqual([]);
  });
});
