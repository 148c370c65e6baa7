/**
 * The verifiable log as static files (C2SP tlog-tiles; docs/adr/0143): `/tlog/checkpoint`, the
 * tiles `/tlog/tile/<L>/<N>[.p/<W>]` and the entry bundles `/tlog/tile/entries/<N>[.p/<W>]`, and
 * the log's verifier key at `/api/v1/log/key`. Public by design (they hold what anyone may check
 * the log with) and bounded: a tile path is parsed strictly before anything is read, and a tile is
 * served only as far as the newest signed checkpoint covers it. An entry bundle is sent gzipped
 * (`Content-Encoding: gzip`) to a client whose `Accept-Encoding` takes gzip, as tlog-tiles asks
 * ("SHOULD be compressed at the HTTP layer"); its bytes are the same bundle either way.
 */
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { AppError, tlogFile } from "../app/index.js";
import { BASE_STATUSES } from "./api.js";
import { sendJson } from "./http.js";
import type { RequestContext, Route } from "./routes.js";

/** The most path segments after `/tlog/tile/`: a level, five index groups, a width. */
const MAX_SEGMENTS = 7;

const gzipped = promisify(gzip);

/**
 * Whether an `Accept-Encoding` header takes gzip: `gzip` (or `x-gzip`, or `*` when gzip is not
 * named) with a weight above 0 (RFC 9110, section 12.5.3).
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const text = Array.isArray(header) ? header.join(",") : header ?? "";
  let star: boolean | null = null;
  for (const part of text.split(",")) {
    const [name = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    const takes = Number.isFinite(weight) && weight > 0;
    if (name === "gzip" || name === "x-gzip") return takes;
    if (name === "*") star = takes;
  }
  return star === true;
}

async function serve(ctx: RequestContext): Promise<void> {
  const path = ctx.url.pathname.slice("/tlog/".length);
  const file = await tlogFile(ctx.app.store, path);
  const bundle = path.startsWith("tile/entries/");
  const compress = bundle && file.status === 200 && acceptsGzip(ctx.req.headers["accept-encoding"]);
  const body = compress ? await gzipped(file.body) : file.body;
  ctx.res.writeHead(file.status, {
    "Content-Type": file.contentType,
    "Cache-Control": file.cacheControl,
    "Content-Length": body.byteLength,
    // A cache keeps the gzipped and the plain bundle apart.
    ...(bundle ? { Vary: "Accept-Encoding" } : {}),
    ...(compress ? { "Content-Encoding": "gzip" } : {}),
    // Any site may fetch the log's files (they are public), with no credentials.
    "Access-Control-Allow-Origin": "*",
    "Cross-Origin-Resource-Policy": "cross-origin",
  });
  ctx.res.end(body);
}

function file(path: string, summary: string): Route {
  return { method: "GET", path, kind: "asset", access: "public", summary, query: [], headers: [], statuses: [200, 404, ...BASE_STATUSES], handle: serve };
}

/** The `/tlog` routes and `/api/v1/log/key`. */
export function tlogRoutes(): Route[] {
  const tiles: Route[] = [];
  for (let n = 2; n <= MAX_SEGMENTS; n++) {
    const segments = Array.from({ length: n }, (_, i) => `{s${i}}`).join("/");
    tiles.push(file(`/tlog/tile/${segments}`, "a tile of the tree, or an entry bundle (C2SP tlog-tiles)"));
  }
  return [
    file("/tlog/checkpoint", "the newest signed checkpoint (C2SP tlog-checkpoint)"),
    ...tiles,
    {
      method: "GET", path: "/api/v1/log/key", kind: "api", access: "public", summary: "the log's verifier key and origin", query: [], headers: [], statuses: [200, 404, ...BASE_STATUSES],
      handle: ({ res, app }) => {
        const key = app.logKey ?? null;
        if (key === null) throw new AppError("not_found", "this control plane signs no checkpoints");
        sendJson(res, 200, { origin: key.origin, key: key.verifierKey });
      },
    },
  ];
}
