/**
 * The plugin host's face to the core (ADR 0081): `openfief.connector.v1.ConnectorService` over
 * Connect, h2c and HTTP/1.1 on one port, for every plugin the host runs. Each request's bearer
 * token is checked first (the core's, naming the instance by its one audience); only then does
 * Connect see the request, with the instance in its context values. `Sync` is the ABI's `sync`,
 * `ImportFile` its `import_file` with the header and the content, both as protobuf-JSON.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, createContextValues, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  ConnectorService,
  FileHeaderSchema,
  ImportFileResponseSchema,
  SyncRequestSchema,
  SyncResponseSchema,
  type ImportFileRequest,
} from "../gen/openfief/connector/v1/connector_pb.js";
import type { CallResult, CoreTokenRefusal, CoreTokenResult, JsonValue } from "../app/index.js";
import { http2Settings, listenerLimits, listenerOptions, requestLogger, withHttp2Limits, withLimits } from "../http/index.js";
import type { Logger } from "pino";

/** The largest file an ImportFile stream may carry to a plugin. */
export const MAX_IMPORT_BYTES = 8 * 1024 * 1024;
/** How long calls in flight may finish once shutdown starts. */
export const SHUTDOWN_GRACE_MS = 20_000;
/** The largest message the server reads. */
const READ_MAX_BYTES = MAX_IMPORT_BYTES + 64 * 1024;
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
const BEARER = /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)[ ]*$/i;
const INSTANCE = createContextKey<string>("", { description: "the instance the core's token names" });

/** What the server needs from the host. */
export interface ConnectorPorts {
  /** Checks a bearer token (undefined when the request has none). */
  verify(token: string | undefined): Promise<CoreTokenResult>;
  /** Whether the host runs the instance now (the ConfigMap lists it). */
  runs(instance: string): boolean;
  /** Records a call to an instance the host does not run, and answers it. */
  notRunning(instance: string, method: string): void;
  /** Calls the instance's module. */
  call(instance: string, method: string, params: JsonValue, signal: AbortSignal): Promise<CallResult>;
  /** Told every refused request's reason (metrics); never the token. */
  onRefused?(reason: CoreTokenRefusal | "not_running"): void;
  /** The server's logger: each request logs through a child naming its request id. */
  readonly logger?: Logger;
}

/** A running connector server. */
export interface ConnectorServer {
  readonly port: number;
  close(): Promise<void>;
}

const HOST_CODES: Readonly<Record<string, Code>> = {
  plugin_timed_out: Code.DeadlineExceeded,
  plugin_busy: Code.ResourceExhausted,
  plugin_not_approved: Code.PermissionDenied,
  plugin_not_installed: Code.Unavailable,
  invalid_request: Code.InvalidArgument,
  unknown_method: Code.Unimplemented,
  origin_not_approved: Code.FailedPrecondition,
  http_failed: Code.Unavailable,
};

/** A failed call as a Connect error: its code and the host's (already redacted) message. */
function callError(r: Extract<CallResult, { ok: false }>): ConnectError {
  return new ConnectError(`${r.error.code}: ${r.error.message}`, HOST_CODES[r.error.code] ?? Code.Internal);
}

async function readFile(requests: AsyncIterable<ImportFileRequest>): Promise<{ header: JsonValue; content: Buffer }> {
  let header: JsonValue | undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const m of requests) {
    if (m.payload.case === "header") {
      if (header !== undefined) throw new ConnectError("the header comes first, and only once", Code.InvalidArgument);
      header = toJson(FileHeaderSchema, m.payload.value) as JsonValue;
    } else if (m.payload.case === "chunk") {
      if (header === undefined) throw new ConnectError("the first message is the file's header", Code.InvalidArgument);
      size += m.payload.value.length;
      if (size > MAX_IMPORT_BYTES) throw new ConnectError(`the file is larger than ${MAX_IMPORT_BYTES} bytes`, Code.ResourceExhausted);
      chunks.push(Buffer.from(m.payload.value));
    }
  }
  if (header === undefined) throw new ConnectError("the stream carried no header", Code.InvalidArgument);
  return { header, content: Buffer.concat(chunks) };
}

function routes(p: ConnectorPorts): (router: ConnectRouter) => void {
  const answer = async <T>(ctx: HandlerContext, method: string, params: JsonValue, read: (result: JsonValue) => T): Promise<T> => {
    const r = await p.call(ctx.values.get(INSTANCE), method, params, ctx.signal);
    if (!r.ok) throw callError(r);
    try {
      return read(r.result);
    } catch {
      throw new ConnectError(`the plugin's answer to ${method} is not the contract's message`, Code.Internal);
    }
  };
  return (router) => {
    router.service(ConnectorService, {
      sync: (request, ctx) => answer(ctx, "sync", toJson(SyncRequestSchema, request) as JsonValue, (v) => fromJson(SyncResponseSchema, v)),
      async importFile(requests, ctx) {
        const { header, content } = await readFile(requests);
        return answer(ctx, "import_file", { header, contentBase64: content.toString("base64") }, (v) => fromJson(ImportFileResponseSchema, v));
      },
    });
  };
}

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;
type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

function refuse(res: AnyResponse, status: 401 | 403, message: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json", ...(status === 401 ? { "www-authenticate": "Bearer" } : {}) });
  res.end(JSON.stringify({ code: status === 401 ? "unauthenticated" : "permission_denied", message }));
}

/** The method a Connect path names, for the refusal record (`sync`, `import_file`, or the path's last part). */
function methodOf(url: string | undefined): string {
  const last = (url ?? "").split("?")[0]?.split("/").at(-1) ?? "";
  return last === "Sync" ? "sync" : last === "ImportFile" ? "import_file" : last.slice(0, 64) || "-";
}

/** Serves the connector contract for every plugin the host runs, until `close()`. */
export async function serveConnectors(p: ConnectorPorts, listen: { readonly host: string; readonly port: number }): Promise<ConnectorServer> {
  const instances = new WeakMap<AnyRequest, string>();
  const connect = connectNodeAdapter({
    routes: routes(p),
    readMaxBytes: READ_MAX_BYTES,
    contextValues: (req) => createContextValues().set(INSTANCE, instances.get(req) ?? ""),
  });
  let closing = false;
  let inflight = 0;
  let drained: (() => void) | undefined;
  const gate = (req: AnyRequest, res: AnyResponse): void => {
    if (closing) {
      req.resume();
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: "unavailable", message: "the plugin host is shutting down" }));
      return;
    }
    inflight++;
    const log = p.logger === undefined ? undefined : requestLogger(p.logger, req, res);
    res.once("close", () => {
      inflight--;
      if (inflight === 0) drained?.();
    });
    const header = req.headers.authorization;
    const token = typeof header === "string" ? BEARER.exec(header)?.[1] : undefined;
    void p.verify(token).then((who) => {
      if (!who.ok) {
        p.onRefused?.(who.code);
        log?.debug({ reason: who.code }, "connector call refused: the core's token");
        req.resume();
        return refuse(res, 401, "the core's token was refused");
      }
      if (!p.runs(who.instance)) {
        p.onRefused?.("not_running");
        log?.debug({ instance: who.instance }, "connector call refused: not running here");
        p.notRunning(who.instance, methodOf(req.url));
        req.resume();
        return refuse(res, 403, `the plugin host does not run ${who.instance}`);
      }
      instances.set(req, who.instance);
      connect(req as never, res as never);
    }).catch((err: unknown) => {
      log?.error({ err: err instanceof Error ? err.message : String(err) }, "connector call failed");
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ code: "internal", message: "the request could not be served" }));
    });
  };
  // The limits every listener has (src/http), on both protocols the one port speaks.
  const h1 = withLimits(http.createServer(listenerOptions(), gate));
  const h2 = withHttp2Limits(http2.createServer({ settings: http2Settings() }, gate));
  const { headersTimeoutMs } = listenerLimits();
  // h1 never listens itself (the front hands it connections), so its timeouts' periodic check, which
  // Node starts when a server starts listening, is started here; closing h1 stops it.
  h1.emit("listening");
  const sockets = new Set<net.Socket>();
  const front = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    // A client that sends nothing is cut like one slow with its headers; once handed on, the server's limits apply.
    socket.setTimeout(headersTimeoutMs, () => socket.destroy());
    let seen = Buffer.alloc(0);
    const sniff = (chunk: Buffer): void => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, H2_PREFACE.length);
      const h2c = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (h2c && seen.length < H2_PREFACE.length) return;
      socket.off("data", sniff);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(seen);
      if (h2c) h2.emit("connection", socket);
      else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", sniff);
  });
  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    front.listen(listen.port, listen.host, () => {
      front.off("error", reject);
      resolve();
    });
  });
  const port = (front.address() as net.AddressInfo).port;
  return {
    port,
    close: async () => {
      closing = true;
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      // Calls in flight may finish within the grace period (seed 000: up to 20 s), then the rest go.
      if (inflight > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, SHUTDOWN_GRACE_MS);
          timer.unref();
          drained = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      for (const s of sockets) s.destroy();
      h1.close();
      await closed;
    },
  };
}
