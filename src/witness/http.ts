/**
 * The witness over HTTP (C2SP tlog-witness): `POST /add-checkpoint` and the monitors'
 * `GET /<origin hash>/checkpoint`. Every limit is checked before a body is read: the body's size
 * (by its Content-Length, then as it arrives), how many requests are in flight, how long headers
 * and the body may take, and a deadline on each request. One JSON access line per request names
 * the origin, the old size, the new size and the outcome; a request carries no token, and neither
 * the body nor the witness's key is ever logged.
 */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Buffer } from "node:buffer";
import type { WitnessAnswer, WitnessService } from "./service.js";

/** The server's limits; each has a default. */
export interface HttpLimits {
  /** Requests being answered at once; more get 503 before their body is read. */
  readonly maxInFlight: number;
  /** Open connections (idle keep-alive ones included). */
  readonly maxConnections: number;
  /** Time for a request's headers to arrive. */
  readonly headersTimeoutMs: number;
  /** Time for a whole request (headers and body) to arrive. */
  readonly requestTimeoutMs: number;
  /** Time from a request's start to its answer, waiting for its log's turn included. */
  readonly deadlineMs: number;
  readonly keepAliveTimeoutMs: number;
  /** Bytes of request headers. */
  readonly maxHeaderBytes: number;
}

export const DEFAULT_LIMITS: HttpLimits = {
  maxInFlight: 64,
  maxConnections: 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 20_000,
  deadlineMs: 25_000,
  keepAliveTimeoutMs: 30_000,
  maxHeaderBytes: 8 * 1024,
};

/** One access line: what a request asked and how it ended. */
export interface AccessEntry {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly outcome: string;
  readonly origin?: string;
  readonly old?: number;
  readonly size?: number;
  readonly ms: number;
}

/** Where access lines go (the CLI passes its JSON logger). */
export type AccessLog = (entry: AccessEntry) => void;

export interface ListeningWitness {
  /** `http://host:port`, as clients reach it. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /**
   * Stops accepting, lets requests in flight finish within `graceMs`, then closes every
   * connection; resolves once the server is closed and no state write is under way.
   */
  close(graceMs?: number): Promise<void>;
}

const TEXT = "text/plain; charset=utf-8";
const ADD = "/add-checkpoint";

type Reply = Pick<WitnessAnswer, "status" | "contentType" | "body"> & { readonly headers?: Readonly<Record<string, string>> };

function send(res: ServerResponse, r: Reply, close = false): void {
  if (res.headersSent) return;
  const body = Buffer.from(r.body, "utf8");
  res.writeHead(r.status, {
    "content-type": r.contentType,
    "content-length": String(body.length),
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    ...(close ? { connection: "close" } : {}),
    ...r.headers,
  });
  res.end(body);
}

const plain = (status: number, text: string, headers?: Record<string, string>): Reply => ({ status, contentType: TEXT, body: `${text}\n`, ...(headers === undefined ? {} : { headers }) });

/** Reads a body of at most `max` bytes; `null` once it is longer (the rest is not read). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > max) {
        req.off("data", onData);
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks, size)));
    req.once("error", reject);
    req.once("close", () => {
      if (!req.complete) reject(new Error("the client went away"));
    });
  });
}

interface Counters {
  inFlight: number;
  stopping: boolean;
  drained: (() => void) | null;
}

/** Serves a witness on `host:port` (port 0: a free one); resolves once it listens. */
export async function listenWitness(service: WitnessService, where: { host: string; port: number }, options: { limits?: Partial<HttpLimits>; log?: AccessLog } = {}): Promise<ListeningWitness> {
  const limits: HttpLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const log = options.log ?? (() => undefined);
  const counters: Counters = { inFlight: 0, stopping: false, drained: null };
  // Node checks the header and request timeouts every `connectionsCheckingInterval` (30 s unless told).
  const timeouts = { requestTimeout: limits.requestTimeoutMs, headersTimeout: limits.headersTimeoutMs, keepAliveTimeout: limits.keepAliveTimeoutMs, connectionsCheckingInterval: 1000 };
  const server = createServer({ maxHeaderSize: limits.maxHeaderBytes, ...timeouts }, (req, res) => {
    const started = performance.now();
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const done = (r: Reply, seen: Partial<WitnessAnswer> = {}, close = false): void => {
      // One answer and one access line per request: a deadline may have answered already.
      if (res.headersSent) return;
      send(res, r, close);
      const { origin, oldSize, size } = seen;
      log({
        method: req.method ?? "",
        path: path.length > 100 ? `${path.slice(0, 100)}…` : path,
        status: r.status,
        outcome: seen.outcome ?? (r.status === 200 ? "ok" : `http_${r.status}`),
        ...(origin === undefined ? {} : { origin }),
        ...(oldSize === undefined ? {} : { old: oldSize }),
        ...(size === undefined ? {} : { size }),
        ms: Math.round((performance.now() - started) * 10) / 10,
      });
    };
    if (counters.stopping) return done(plain(503, "the witness is stopping"), {}, true);
    if (path === ADD) {
      if (req.method !== "POST") return done(plain(405, "add-checkpoint is a POST", { allow: "POST" }));
      return void addCheckpoint(req, res, { service, limits, counters }, done);
    }
    if (req.method === "GET" || req.method === "HEAD") return done(monitor(service, path));
    return done(plain(404, "not found"));
  });
  server.maxConnections = limits.maxConnections;
  // A request that could not be parsed (bad framing, headers too large or too slow) gets Node's own 400/408/431.
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(where.port, where.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostText = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return { url: `http://${hostText}:${address.port}`, host: address.address, port: address.port, close: (graceMs = 10_000) => close(server, service, counters, graceMs) };
}

/** `GET /<origin hash>/checkpoint`: the latest checkpoint cosigned for that log, or 404. */
function monitor(service: WitnessService, path: string): Reply {
  const parts = path.split("/");
  if (parts.length !== 3 || parts[0] !== "" || parts[2] !== "checkpoint") return plain(404, "not found");
  const checkpoint = service.checkpoint(parts[1] ?? "");
  return checkpoint === undefined ? plain(404, "no checkpoint of this log was cosigned") : { status: 200, contentType: TEXT, body: checkpoint };
}

interface Serving {
  readonly service: WitnessService;
  readonly limits: HttpLimits;
  readonly counters: Counters;
}

async function addCheckpoint(req: IncomingMessage, res: ServerResponse, { service, limits, counters }: Serving, done: (r: Reply, seen?: Partial<WitnessAnswer>, close?: boolean) => void): Promise<void> {
  const max = service.maxBodyBytes;
  if (counters.inFlight >= limits.maxInFlight) return done(plain(503, "the witness is busy; retry", { "retry-after": "1" }), { outcome: "busy" }, true);
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > max) return done(plain(413, `a request body is at most ${max} bytes`), { outcome: "too_large" }, true);
  counters.inFlight++;
  const deadline = new AbortController();
  const timer = setTimeout(() => {
    deadline.abort();
    done(plain(503, "the witness did not answer in time; retry"), { outcome: "deadline" }, true);
  }, limits.deadlineMs);
  try {
    const body = await readBody(req, max);
    if (body === null) return done(plain(413, `a request body is at most ${max} bytes`), { outcome: "too_large" }, true);
    if (deadline.signal.aborted) return;
    const answer = await service.addCheckpoint(body, deadline.signal);
    if (!res.headersSent) done(answer, answer);
  } catch (_err) {
    // The client went away: there is no one to answer.
    if (!res.headersSent) res.destroy();
  } finally {
    clearTimeout(timer);
    counters.inFlight--;
    if (counters.inFlight === 0) counters.drained?.();
  }
}

async function close(server: Server, service: WitnessService, counters: Counters, graceMs: number): Promise<void> {
  counters.stopping = true;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const drained = counters.inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (counters.drained = resolve));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all([drained, service.idle()]), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
  clearTimeout(timer);
  server.closeAllConnections();
  await closed;
  // A write under way finishes (its answer may be gone): what is on disk is then whole.
  await service.idle();
}
