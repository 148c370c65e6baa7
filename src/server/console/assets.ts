/**
 * The console's static files: htmx (2.0.x, read once from node_modules), the stylesheet, the
 * icon and the script that frames views, each at a URL that names its content, so browsers may
 * keep them for good.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { AppError, shippedFile } from "../../app/index.js";
import type { Route } from "../routes.js";
import { STYLESHEET } from "./stylesheet.js";

interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0b3d5c"/><path d="M9 23V9h13v3.5h-9v2.6h8v3.4h-8V23z" fill="#fff"/></svg>`;

function named(stem: string, ext: string, body: Buffer): string {
  return `${stem}-${createHash("sha256").update(body).digest("hex").slice(0, 12)}.${ext}`;
}

/** The URLs of the console's assets. */
export interface AssetUrls {
  readonly htmx: string;
  readonly css: string;
  readonly icon: string;
  /** The console's half of a view (`view-frame.js`, a module). */
  readonly viewFrame: string;
}

function load(): { files: ReadonlyMap<string, Asset>; urls: AssetUrls } {
  const require = createRequire(import.meta.url);
  const htmx = readFileSync(require.resolve("htmx.org/dist/htmx.min.js"));
  const css = Buffer.from(STYLESHEET, "utf8");
  const icon = Buffer.from(ICON, "utf8");
  // A file beside this module in the sources; found through the product's folder from the CLI's bundle too.
  const viewFrame = readFileSync(shippedFile("src", "server", "console", "view-frame.js"));
  const names = { htmx: named("htmx", "js", htmx), css: named("console", "css", css), icon: named("icon", "svg", icon), viewFrame: named("view-frame", "js", viewFrame) };
  const files = new Map<string, Asset>([
    [names.htmx, { type: "text/javascript; charset=utf-8", body: htmx }],
    [names.css, { type: "text/css; charset=utf-8", body: css }],
    [names.icon, { type: "image/svg+xml", body: icon }],
    [names.viewFrame, { type: "text/javascript; charset=utf-8", body: viewFrame }],
  ]);
  return { files, urls: { htmx: `/assets/${names.htmx}`, css: `/assets/${names.css}`, icon: `/assets/${names.icon}`, viewFrame: `/assets/${names.viewFrame}` } };
}

let loaded: ReturnType<typeof load> | null = null;

/** The assets, read on first use. */
function assets(): ReturnType<typeof load> {
  loaded ??= load();
  return loaded;
}

/** The URLs a page links to. */
export function assetUrls(): AssetUrls {
  return assets().urls;
}

/** `GET /assets/{file}`. */
export function assetRoutes(): Route[] {
  return [{
    method: "GET", path: "/assets/{file}", kind: "asset", access: "public", summary: "the console's scripts, stylesheet and icon", query: [], headers: [], statuses: [200, 404],
    handle: ({ res, params }) => {
      const a = assets().files.get(params.file ?? "");
      if (a === undefined) throw new AppError("not_found", "no such asset");
      res.writeHead(200, { "Content-Type": a.type, "Content-Length": a.body.length, "Cache-Control": "public, max-age=31536000, immutable" });
      res.end(a.body);
    },
  }];
}
