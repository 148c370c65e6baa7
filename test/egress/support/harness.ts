/**
 * Builds a real proxy on 127.0.0.1 with a real DNS server, a recording connect function that maps
 * "public" addresses to local listeners (nothing ever dials a non-loopback address), a reviewer of
 * synthetic tokens, a memory allow-list source, and a pino logger whose lines are captured.
 */
import { connect as netConnect, Socket } from "node:net";
import { Writable } from "node:stream";
import { pino } from "pino";
import { decodeAllowLists } from "../../../src/plugins/allowlist.js";
import { MemoryAllowListSource } from "../../../src/egress/allowlist-source.js";
import { BatchingDecisionRecorder, type DecisionRecorder } from "../../../src/egress/recorder.js";
import type { EgressDecisionRecord } from "../../../src/egress/decision.js";
import { createEgressProxy, type DialAddress, type EgressProxy, type EgressProxyOptions, type EgressProxyPorts } from "../../../src/egress/proxy.js";
import { DnsResolver, type Resolver } from "../../../src/egress/resolver.js";
import type { ReviewResult, TokenReviewer } from "../../../src/egress/reviewer.js";

/** Synthetic tokens; long and distinctive so a grep for them is meaningful. */
export const TOKENS = {
  alpha: "eyJhbGciOiJFUzI1NiJ9.c2VjcmV0LWFscGhhLXRva2Vu.QUxQSEEtU0VDUkVULVNJRw",
  beta: "eyJhbGciOiJFUzI1NiJ9.c2VjcmV0LWJldGEtdG9rZW4.QkVUQS1TRUNSRVQtU0lH",
  core: "eyJhbGciOiJFUzI1NiJ9.Y29yZS10b2tlbg.Q09SRS1TRUNSRVQ",
  notPlugin: "eyJhbGciOiJFUzI1NiJ9.bm90LWEtcGx1Z2lu.Tk9UQVBMVUdJTg",
} as const;

/** A reviewer that knows the synthetic tokens. */
export class FakeReviewer implements TokenReviewer {
  calls = 0;
  behaviour: "normal" | "throw" | "hang" = "normal";
  async review(token: string): Promise<ReviewResult> {
    this.calls++;
    if (this.behaviour === "throw") throw new Error("API server unreachable");
    if (this.behaviour === "hang") return new Promise(() => undefined);
    if (token === TOKENS.alpha) return { ok: true, username: "system:serviceaccount:openfief:plugin-alpha" };
    if (token === TOKENS.beta) return { ok: true, username: "system:serviceaccount:openfief:plugin-beta" };
    if (token === TOKENS.notPlugin) return { ok: true, username: "system:serviceaccount:kube-system:default" };
    return { ok: false, code: "token_refused" };
  }
}

export interface Harness {
  proxy: EgressProxy;
  port: number;
  dials: DialAddress[];
  records: EgressDecisionRecord[];
  logs: string[];
  reviewer: FakeReviewer;
  allowLists: MemoryAllowListSource;
  recorderFails: { value: boolean };
  /** Address → local port. Anything unmapped fails to connect (and is still recorded). */
  routes: Map<string, number>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  dnsServer: string;
  allowLists?: Record<string, string> | null;
  options?: EgressProxyOptions;
  resolver?: Resolver;
  recorder?: DecisionRecorder;
  connect?: (addr: DialAddress) => Socket | Promise<Socket>;
  /** More ports (metrics, the refusal limits). */
  ports?: Partial<Pick<EgressProxyPorts, "metrics" | "metricsRegistry" | "anonymousLimits" | "reviewer" | "clock">>;
}

export async function startHarness(h: HarnessOptions): Promise<Harness> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(...chunk.toString("utf8").split("\n").filter((l) => l !== ""));
      cb();
    },
  });
  const logger = pino({ level: "debug" }, sink);
  const dials: DialAddress[] = [];
  const records: EgressDecisionRecord[] = [];
  const routes = new Map<string, number>();
  const recorderFails = { value: false };
  const reviewer = new FakeReviewer();
  const allowLists = new MemoryAllowListSource(null, logger);
  if (h.allowLists !== undefined && h.allowLists !== null) {
    const decoded = decodeAllowLists(h.allowLists);
    if (!decoded.ok) throw new Error("test allow-lists do not decode");
    allowLists.set(decoded.value);
  }
  const recorder =
    h.recorder ??
    new BatchingDecisionRecorder((batch) => {
      if (recorderFails.value) throw new Error("disk full");
      records.push(...batch);
    });
  const connect =
    h.connect ??
    ((addr: DialAddress): Socket => {
      dials.push(addr);
      const local = routes.get(addr.address);
      if (local === undefined) {
        const s = new Socket();
        process.nextTick(() => s.destroy(new Error("no route in test")));
        return s;
      }
      return netConnect({ host: "127.0.0.1", port: local });
    });
  const proxy = createEgressProxy({
    reviewer,
    allowLists,
    resolver: h.resolver ?? new DnsResolver({ servers: [h.dnsServer], timeoutMs: h.options?.dnsTimeoutMs ?? 2000 }),
    connect: (addr) => {
      if (h.connect !== undefined) dials.push(addr);
      return connect(addr);
    },
    recorder,
    logger,
    env: {},
    options: { host: "127.0.0.1", port: 0, ...(h.options ?? {}) },
    ...(h.ports ?? {}),
  });
  const { port } = await proxy.listen();
  return {
    proxy, port, dials, records, logs, reviewer, allowLists, recorderFails, routes,
    close: () => proxy.close(),
  };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  socket: Socket;
}

/** Sends a raw request head (and optional bytes right after it) and reads the answer head. */
export function rawRequest(port: number, head: string, after: Buffer = Buffer.alloc(0)): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: "127.0.0.1", port });
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (): void => {
      const text = buf.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) return;
      const lines = text.slice(0, end).split("\r\n");
      const status = Number((lines[0] ?? "").split(" ")[1]);
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const c = l.indexOf(":");
        headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim();
      }
      if (status === 200) {
        done = true;
        socket.off("data", onData);
        const rest = buf.subarray(end + 4);
        if (rest.length > 0) socket.unshift(rest);
        resolve({ status, headers, body: "", socket });
        return;
      }
      const len = Number(headers["content-length"] ?? "0");
      if (buf.length - end - 4 >= len) {
        done = true;
        socket.off("data", onData);
        resolve({ status, headers, body: buf.subarray(end + 4, end + 4 + len).toString("utf8"), socket });
      }
    };
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      finish();
    };
    socket.on("data", onData);
    socket.on("error", (e) => {
      if (!done) reject(e);
    });
    socket.on("close", () => {
      if (!done) reject(new Error(`closed before an answer: ${buf.toString("latin1")}`));
    });
    socket.on("connect", () => socket.write(Buffer.concat([Buffer.from(head, "latin1"), after])));
  });
}

/** A CONNECT head with the given token (Basic, user "plugin") and extra header lines. */
export function connectHead(target: string, token: string | null, extra: string[] = []): string {
  const lines = [`CONNECT ${target} HTTP/1.1`, `Host: ${target}`];
  if (token !== null) lines.push(`Proxy-Authorization: Basic ${Buffer.from(`plugin:${token}`).toString("base64")}`);
  lines.push(...extra);
  return `${lines.join("\r\n")}\r\n\r\n`;
}
