/**
 * The plugin proxy (seed 002, FUN-17 "Origin model", "The CSP confines outbound network calls"):
 * the origin view plugins' UIs run on, a different site from the console's. It serves
 *   - `/plugins/{name}/{version}/console/{path}`: the files of the UI bundle of the installation
 *     `{name}` (the Plugin's name) at version `{version}` (its image digest), only while that is
 *     the version a decision runs — so only verified bytes, which never change under one URL;
 *   - `/plugins/sdk/{version}/sdk.js`: the browser SDK, and beside it `context.js`, the origins
 *     of this deployment the SDK checks messages against;
 *   - `/installations/{id}/runtime/*` and `/controller/*`: an installation's routes, through the
 *     gateway's gates (it holds them);
 *   - `/csp-reports`: reserved (FUN-17: not wired in v1), answered 501.
 *
 * Every `/plugins/…` answer carries FUN-17's CSP exactly, `nosniff` and `no-referrer`; assets are
 * cached as immutable. GET and HEAD only. A path is taken in one spelling only: any `%`, backslash,
 * control character, empty, `.` or `..` segment is refused before anything is looked up, so no
 * encoding of `..` can reach outside a bundle (a bundle is a map of clean paths anyway). A request
 * for another host than the proxy's origin is refused (DNS rebinding would change what `'self'` is).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { isValidPluginName } from "../plugins/index.js";
import type { Gateway } from "./gateway.js";
import type { ViewMetrics } from "./metrics.js";
import type { Installations } from "./ports.js";
import { isBundlePath } from "./tar.js";
import type { UiBundles } from "./ui-bundles.js";

/** The three origins a view's page lives between. */
export interface ViewOrigins {
  /** The console, the only page that may frame a view (`frame-ancestors`). */
  readonly console: string;
  /** The plugin proxy itself. */
  readonly pluginProxy: string;
  /** The gateway: with the proxy, the only place a view may connect or post a form to. */
  readonly gateway: string;
}

/** The browser SDK as shipped: its version (the URL's) and its source. */
export interface BrowserSdk {
  readonly version: string;
  readonly source: Uint8Array;
}

/** What the plugin proxy needs. */
export interface PluginProxyOptions {
  readonly origins: ViewOrigins;
  readonly installations: Installations;
  readonly bundles: UiBundles;
  readonly sdk: BrowserSdk;
  /** The gateway whose gates hold the installation routes; without it those paths are 404. */
  readonly gateway?: Gateway;
  readonly logger?: Logger;
  readonly metrics?: ViewMetrics;
}

/** The plugin proxy's entry points, for an `http.Server`'s `request` and `upgrade` events. */
export interface PluginProxy {
  handle(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  attach(server: Server): void;
}

/** A year: assets under one URL never change (the version is the image's digest). */
export const IMMUTABLE = "public, max-age=31536000, immutable";
/** The longest request target read. */
const MAX_TARGET = 2048;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const SDK_VERSION = /^[0-9]+\.[0-9]+\.[0-9]+$/;

/** Content types by extension; anything else is `application/octet-stream` (and `nosniff` keeps it inert). */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json",
  map: "application/json",
  txt: "text/plain; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  ico: "image/x-icon",
  woff: "font/woff",
  woff2: "font/woff2",
  wasm: "application/wasm",
};

/** The content type of a bundle path. */
export function contentTypeOf(path: string): string {
  const dot = path.lastIndexOf(".");
  const ext = dot < 0 ? "" : path.slice(dot + 1).toLowerCase();
  return Object.prototype.hasOwnProperty.call(CONTENT_TYPES, ext) ? (CONTENT_TYPES[ext] as string) : "application/octet-stream";
}

/** Checks that each origin is written as one (`http://localhost:4781`, no path), and returns them. */
export function checkOrigins(o: ViewOrigins): ViewOrigins {
  for (const [k, v] of Object.entries(o)) {
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      throw new RangeError(`the ${k} origin ${JSON.stringify(v)} is not a URL`);
    }
    if ((u.protocol !== "http:" && u.protocol !== "https:") || u.origin !== v) throw new RangeError(`the ${k} origin must be written as an origin, such as ${u.origin}`);
  }
  return o;
}

/** FUN-17's Content-Security-Policy for a view's files, in its order. */
export function pluginProxyCsp(o: ViewOrigins): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `connect-src ${o.gateway} ${o.pluginProxy}`,
    `form-action ${o.gateway} ${o.pluginProxy}`,
    `frame-ancestors ${o.console}`,
    "base-uri 'none'",
    "object-src 'none'",
  ].join("; ");
}

/** The SDK's `context.js`: the origins it checks `postMessage` against, as module constants. */
export function sdkContextModule(o: ViewOrigins): string {
  return [
    "// The origins of this OpenFief deployment, served by its plugin proxy.",
    `export const CONSOLE_ORIGIN = ${JSON.stringify(o.console)};`,
    `export const PLUGIN_PROXY_ORIGIN = ${JSON.stringify(o.pluginProxy)};`,
    `export const GATEWAY_ORIGIN = ${JSON.stringify(o.gateway)};`,
    "",
  ].join("\n");
}

type Asset =
  | { readonly kind: "sdk"; readonly version: string; readonly file: string }
  | { readonly kind: "bundle"; readonly name: string; readonly version: string; readonly path: string };

/** Why a request got no file. */
interface Miss {
  readonly status: number;
  readonly outcome: string;
  readonly message: string;
}

const miss = (status: number, outcome: string, message: string): Miss => ({ status, outcome, message });

/** An SDK file (`/plugins/sdk/<version>/sdk.js` or `context.js`), or why the path names none. */
function sdkAsset(segs: readonly string[]): Asset | Miss {
  const [, , , version = "", file = ""] = segs;
  if (!SDK_VERSION.test(version) || segs.length !== 5 || (file !== "sdk.js" && file !== "context.js")) return miss(404, "not_found", "no such SDK file");
  return { kind: "sdk", version, file };
}

/** Splits an asset path (raw, query already cut) into what it names, or says why it names nothing. */
export function parseAssetPath(rawPath: string): Asset | Miss {
  const segs = rawPath.split("/");
  // "", "plugins", name, version, "console", path…
  if (segs[1] !== "plugins" || segs.length < 5) return miss(404, "not_found", "no such file");
  const [, , name = "", version = "", kind = ""] = segs;
  if (name === "sdk" && kind !== "console") return sdkAsset(segs);
  if (kind !== "console") return miss(404, "not_found", "no such file");
  const path = segs.slice(5).join("/");
  if (path === "") return miss(404, "not_found", "name a file of the bundle");
  // One spelling per file: nothing encoded, no backslash, no dot segment, nothing empty.
  if (!isBundlePath(path)) return miss(400, "bad_path", "the path is not a clean path of a bundle");
  if (!isValidPluginName(name) || !DIGEST.test(version)) return miss(404, "not_found", "no such plugin version");
  return { kind: "bundle", name, version, path };
}

/** Builds the plugin proxy. */
export function createPluginProxy(o: PluginProxyOptions): PluginProxy {
  const origins = checkOrigins(o.origins);
  const csp = pluginProxyCsp(origins);
  const host = new URL(origins.pluginProxy).host.toLowerCase();
  const context = Buffer.from(sdkContextModule(origins), "utf8");
  const security = { "content-security-policy": csp, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };

  const count = (outcome: string): void => o.metrics?.assets.inc({ outcome });

  const answer = (req: IncomingMessage, res: ServerResponse, status: number, headers: Record<string, string>, body: Uint8Array): void => {
    res.writeHead(status, { ...security, ...headers, "content-length": String(body.length) });
    res.end(req.method === "HEAD" ? undefined : body);
  };

  const refuse = (req: IncomingMessage, res: ServerResponse, m: Miss, extra: Record<string, string> = {}): void => {
    count(m.outcome);
    const body = Buffer.from(`${JSON.stringify({ error: { code: m.outcome, message: m.message } })}\n`, "utf8");
    answer(req, res, m.status, { "content-type": "application/json", "cache-control": "no-store", ...extra }, body);
  };

  const serveFile = (req: IncomingMessage, res: ServerResponse, type: string, cache: string, body: Uint8Array): void => {
    count("served");
    answer(req, res, 200, { "content-type": type, "cache-control": cache }, body);
  };

  async function serveBundle(req: IncomingMessage, res: ServerResponse, a: Extract<Asset, { kind: "bundle" }>): Promise<void> {
    const installation = await o.installations.byName(a.name);
    if (installation === null || installation.ui === null || installation.pluginVersion !== a.version) {
      return refuse(req, res, miss(404, "not_found", "no view of this plugin runs at this version"));
    }
    const bundle = await o.bundles.get(`${installation.pluginName}@${installation.pluginVersion}`, installation.ui.bundle);
    if (!bundle.ok) {
      o.logger?.warn({ plugin: a.name, bundle: installation.ui.bundle, status: bundle.status, reason: bundle.reason }, "plugin proxy: a UI bundle cannot be served");
      return refuse(req, res, miss(bundle.status, bundle.status === 502 ? "bundle_unusable" : "unavailable", bundle.reason));
    }
    const file = bundle.files.get(a.path);
    if (file === undefined) return refuse(req, res, miss(404, "not_found", "the bundle has no such file"));
    serveFile(req, res, contentTypeOf(a.path), IMMUTABLE, file);
  }

  function serveAsset(req: IncomingMessage, res: ServerResponse, rawPath: string): Promise<void> | void {
    if (req.method !== "GET" && req.method !== "HEAD") return refuse(req, res, miss(405, "method", "GET and HEAD only"), { allow: "GET, HEAD" });
    const a = parseAssetPath(rawPath);
    if (!("kind" in a)) return refuse(req, res, a);
    if (a.kind === "bundle") return serveBundle(req, res, a);
    if (a.version !== o.sdk.version) return refuse(req, res, miss(404, "not_found", `this proxy serves SDK ${o.sdk.version}`));
    // context.js names this deployment's origins: it changes with the configuration, the SDK does not.
    if (a.file === "context.js") return serveFile(req, res, CONTENT_TYPES["js"] as string, "no-cache", context);
    serveFile(req, res, CONTENT_TYPES["js"] as string, IMMUTABLE, o.sdk.source);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const target = req.url ?? "/";
    const rawPath = target.split("?")[0] ?? "";
    if (target.length > MAX_TARGET) return refuse(req, res, miss(414, "too_long", "the request target is too long"));
    if ((req.headers.host ?? "").toLowerCase() !== host) return refuse(req, res, miss(421, "wrong_host", "this is not the plugin proxy's host"));
    if (rawPath.startsWith("/plugins/")) {
      void Promise.resolve(serveAsset(req, res, rawPath)).catch((err: unknown) => {
        o.logger?.error({ err: err instanceof Error ? err.message : String(err) }, "plugin proxy: request failed");
        if (!res.headersSent) refuse(req, res, miss(503, "unavailable", "the plugin proxy could not answer"));
        else res.destroy();
      });
      return;
    }
    if (rawPath.startsWith("/installations/") && o.gateway !== undefined) return o.gateway.handle(req, res);
    if (rawPath === "/csp-reports" || rawPath.startsWith("/csp-reports/")) return refuse(req, res, miss(501, "reserved", "CSP reports are not collected yet (the path is reserved for them)"));
    refuse(req, res, miss(404, "not_found", "the plugin proxy serves /plugins/… and /installations/…"));
  }

  function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const rawPath = (req.url ?? "/").split("?")[0] ?? "";
    if (rawPath.startsWith("/installations/") && o.gateway !== undefined && (req.headers.host ?? "").toLowerCase() === host) {
      o.gateway.handleUpgrade(req, socket, head);
      return;
    }
    socket.on("error", () => socket.destroy());
    socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
  }

  return {
    handle,
    handleUpgrade,
    attach(server) {
      server.on("request", handle);
      server.on("upgrade", handleUpgrade);
    },
  };
}
