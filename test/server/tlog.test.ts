/**
 * The verifiable log as static files through real HTTP on 127.0.0.1: every tile, entry bundle and
 * the checkpoint a client fetches from the console's server equals what `export-tiles` wrote, with
 * tlog-tiles' content types and caching; what the checkpoint does not cover, and any path that is
 * not one exactly, is 404; none of it needs a session. And the schedule signs as events come.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { get } from "node:http";
import { gunzipSync } from "node:zlib";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportTiles, publishedPaths } from "../../src/app/index.js";
import { startControlPlane } from "../../src/compose/index.js";
import type { ControlPlane } from "../../src/compose/index.js";
import { acceptsGzip } from "../../src/server/tlog-routes.js";
import { openCheckpoint, parseVerifierKey, proveInclusion, rootOf, tileHashReader, verifyInclusion, parseTilePath, leafHash, decodeEntryBundle } from "../../src/tlog/index.js";
import type { Hash, TileId } from "../../src/tlog/index.js";
import { call } from "./support.js";

let dir: string;
let out: string;
let cp: ControlPlane;
let base: string;

const egress = (i: number) => ({ stream: "egress/echo", type: "egress.decision", actor: "egress", data: { plugin: "echo", host: `h${i}.example`, port: 443, allowed: i % 3 !== 0, reason: i % 3 === 0 ? "not_listed" : "listed", rules: 1 } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-tlog-"));
  out = mkdtempSync(join(tmpdir(), "openfief-tiles-"));
  cp = await startControlPlane({
    dataDir: dir, logger: pino({ level: "warn" }), egress: null, host: null, intervalMs: 60_000,
    server: { host: "127.0.0.1", port: 0 },
    // Signed only when the test asks: the log does not move under the comparison.
    checkpoints: { every: 1_000_000, intervalMs: 3_600_000 },
  });
  base = cp.server?.url as string;
  for (let b = 0; b < 7; b++) await cp.runtime.store.append(Array.from({ length: 100 }, (_, i) => egress(b * 100 + i)));
}, 60_000);

afterAll(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(out, { recursive: true, force: true });
});

describe("the /tlog files", () => {
  it("answer 404 before the first checkpoint, then serve exactly what export-tiles writes", async () => {
    const none = await call(base, "/tlog/checkpoint");
    // The schedule signs once at start (the log was empty then): nothing yet.
    expect(none.status).toBe(404);
    const c = await cp.checkpoints?.now();
    expect(c?.size).toBe(700);
    const exported = await exportTiles(cp.runtime.store, out);
    expect(exported).toMatchObject({ tiles: 4, bundles: 3, skipped: [] });
    const paths = publishedPaths(700);
    expect(paths).toEqual(["checkpoint", "tile/0/000", "tile/0/001", "tile/0/002.p/188", "tile/1/000.p/2", "tile/entries/000", "tile/entries/001", "tile/entries/002.p/188"]);
    for (const p of paths) {
      const r = await fetch(`${base}/tlog/${p}`);
      expect(r.status, p).toBe(200);
      const body = Buffer.from(await r.arrayBuffer());
      expect(body.equals(readFileSync(join(out, ...p.split("/")))), p).toBe(true);
      if (p === "checkpoint") {
        expect(r.headers.get("content-type")).toBe("text/plain; charset=utf-8");
        expect(r.headers.get("cache-control")).toBe("public, max-age=2");
      } else {
        expect(r.headers.get("content-type")).toBe("application/octet-stream");
        expect(r.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      }
      expect(r.headers.get("access-control-allow-origin")).toBe("*");
      expect(r.headers.get("cross-origin-resource-policy")).toBe("cross-origin");
    }
  });

  it("lets a client check an event's inclusion from the served files and the published key alone", async () => {
    const key = (await call(base, "/api/v1/log/key")).json<{ key: string }>().key;
    const verifier = parseVerifierKey(key);
    if (!verifier.ok) throw new Error(verifier.error.message);
    const note = await (await fetch(`${base}/tlog/checkpoint`)).text();
    const opened = openCheckpoint(note, [verifier.value]);
    if (!opened.ok) throw new Error(opened.error.message);
    const { size, root } = opened.value.checkpoint;
    const fetchTile = async (t: TileId): Promise<Uint8Array> => new Uint8Array(await (await fetch(`${base}/tlog/tile/${t.level}/${String(t.index).padStart(3, "0")}${t.width === 256 ? "" : `.p/${t.width}`}`)).arrayBuffer());
    const read = tileHashReader(size, fetchTile);
    const bundle = decodeEntryBundle(new Uint8Array(await (await fetch(`${base}/tlog/tile/entries/001`)).arrayBuffer()), 256);
    if (!bundle.ok) throw new Error(bundle.error.message);
    const index = 300;
    const proof = await proveInclusion(index, size, read);
    if (!proof.ok) throw new Error(proof.error.message);
    expect(verifyInclusion(leafHash(bundle.value[index - 256] as Uint8Array), index, size, proof.value, root).ok).toBe(true);
    // And the root is the tree of the entries the log holds, computed here.
    const leaves: Hash[] = [];
    for (const b of ["000", "001", "002.p/188"]) {
      const e = decodeEntryBundle(new Uint8Array(await (await fetch(`${base}/tlog/tile/entries/${b}`)).arrayBuffer()));
      if (!e.ok) throw new Error(e.error.message);
      leaves.push(...e.value.map((x) => leafHash(x)));
    }
    expect(Buffer.from(rootOf(leaves)).equals(Buffer.from(root))).toBe(true);
  });

  it.each([
    ["a tile past the checkpoint", "tile/0/003"],
    ["a partial tile wider than the checkpoint's", "tile/0/002.p/189"],
    ["a full tile the checkpoint has only partly", "tile/0/002"],
    ["a bundle past the checkpoint", "tile/entries/002"],
    ["a path with a leading zero", "tile/00/000"],
    ["an index not in 3-digit groups", "tile/0/1"],
    ["a width of 256", "tile/0/002.p/256"],
    ["a level above 63", "tile/64/000"],
    ["a percent-encoded path", "tile/0/%30%30%30"],
    ["an x000 group", "tile/0/x000/001"],
    ["an unknown file", "tile/0/000/extra/x/y/z"],
  ])("answers 404 to %s, without a session", async (_what, path) => {
    const r = await call(base, `/tlog/${path}`);
    expect(r.status, r.text).toBe(404);
    expect(r.headers["cache-control"]).toBe("no-store");
  });

  it("answers HEAD as GET without a body, and a narrower partial tile as a prefix", async () => {
    const head = await call(base, "/tlog/tile/0/000", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe("8192");
    expect(head.text).toBe("");
    const narrow = Buffer.from(await (await fetch(`${base}/tlog/tile/0/002.p/10`)).arrayBuffer());
    expect(narrow.equals(readFileSync(join(out, "tile", "0", "002.p", "188")).subarray(0, 320))).toBe(true);
    expect(parseTilePath("tile/0/002.p/10").ok).toBe(true);
  });

  it("sends an entry bundle gzipped to a client that accepts gzip, the same bundle once unzipped; tiles and checkpoints as they are", async () => {
    const raw = (path: string, acceptEncoding?: string): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> => new Promise((resolve, reject) => {
      get(`${base}/tlog/${path}`, { headers: acceptEncoding === undefined ? {} : { "accept-encoding": acceptEncoding } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      }).on("error", reject);
    });
    const exported = readFileSync(join(out, "tile", "entries", "000"));
    const zipped = await raw("tile/entries/000", "gzip, deflate, br");
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.headers["vary"]).toBe("Accept-Encoding");
    expect(zipped.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(Number(zipped.headers["content-length"])).toBe(zipped.body.length);
    expect(zipped.body.length).toBeLessThan(exported.length);
    expect(gunzipSync(zipped.body).equals(exported)).toBe(true);
    for (const enc of [undefined, "identity", "gzip;q=0", "br"]) {
      const plain = await raw("tile/entries/000", enc);
      expect(plain.headers["content-encoding"], String(enc)).toBeUndefined();
      expect(plain.body.equals(exported), String(enc)).toBe(true);
    }
    for (const p of ["tile/0/000", "checkpoint"]) expect((await raw(p, "gzip")).headers["content-encoding"], p).toBeUndefined();
    expect([acceptsGzip("GZIP;q=0.5"), acceptsGzip("*"), acceptsGzip("*, gzip;q=0"), acceptsGzip(["br", "x-gzip"]), acceptsGzip("gzip;q=abc"), acceptsGzip(undefined)]).toEqual([true, true, false, true, false, false]);
  });

  it("signs a new checkpoint as events come, covering the last one's record", async () => {
    await cp.runtime.store.append([egress(700)]);
    const c = await cp.checkpoints?.now();
    // 700 events, the first checkpoint's record (701), and one more.
    expect(c?.size).toBe(702);
    expect(await (await fetch(`${base}/tlog/checkpoint`)).text()).toBe(c?.note);
    expect((await call(base, "/tlog/tile/0/002.p/190")).status).toBe(200);
  });
});
