import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { UiBundles } from "./ui-bundles.js";
import type { BlobRead, UiBlobSource } from "./ui-bundles.js";

/** A tar of one file (header, data, two zero blocks): enough for the bundle cache. */
function bundle(name: string, content: string): Buffer {
  const h = Buffer.alloc(512, 0);
  h.write(name, 0);
  h.write("0000644\0", 100);
  h.write(`${Buffer.byteLength(content).toString(8).padStart(11, "0")}\0`, 124);
  h.write("0", 156);
  h.write("ustar\0", 257);
  h.write("        ", 148);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  const body = Buffer.from(content);
  return Buffer.concat([h, body, Buffer.alloc((512 - (body.length % 512)) % 512), Buffer.alloc(1024)]);
}

const digestOf = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const IMAGE = `localhost/demo/ledger-view@sha256:${"1".repeat(64)}`;

/** A source over a table of blobs, counting reads; `answer` may replace what it gives. */
function source(blobs: Record<string, Uint8Array>, answer?: (digest: string) => BlobRead | Promise<BlobRead>) {
  const reads: Array<{ image: string; digest: string; max: number }> = [];
  const s: UiBlobSource = {
    async read(image, digest, max) {
      reads.push({ image, digest, max });
      if (answer !== undefined) return answer(digest);
      const b = blobs[digest];
      return b === undefined ? { ok: false, retry: false, message: "not found" } : { ok: true, bytes: b };
    },
  };
  return { s, reads };
}

describe("UiBundles", () => {
  const a = bundle("index.html", "<p>a</p>");
  const b = bundle("index.html", "<p>b</p>");

  it("reads a bundle once and serves its files from the cache after", async () => {
    const { s, reads } = source({ [digestOf(a)]: a });
    const bundles = new UiBundles(s);
    for (let i = 0; i < 3; i++) {
      const r = await bundles.get(IMAGE, digestOf(a));
      expect(r.ok && Buffer.from(r.files.get("index.html") ?? []).toString()).toBe("<p>a</p>");
    }
    expect(reads).toEqual([{ image: IMAGE, digest: digestOf(a), max: 16 * 1024 * 1024 }]);
  });

  it("shares one read between requests that come while it is under way", async () => {
    let release: (r: BlobRead) => void = () => undefined;
    const { s, reads } = source({}, () => new Promise<BlobRead>((r) => { release = r; }));
    const bundles = new UiBundles(s);
    const all = Promise.all([bundles.get(IMAGE, digestOf(a)), bundles.get(IMAGE, digestOf(a)), bundles.get(IMAGE, digestOf(a))]);
    await new Promise((r) => setImmediate(r));
    release({ ok: true, bytes: a });
    expect((await all).every((r) => r.ok)).toBe(true);
    expect(reads).toHaveLength(1);
  });

  const notTar = Buffer.from("not a tar at all");
  it.each([
    ["bytes that are not the digest's", digestOf(a), (): BlobRead => ({ ok: true, bytes: b }), "does not match its digest"],
    ["bytes that are not a tar", digestOf(notTar), (): BlobRead => ({ ok: true, bytes: notTar }), "not a clean tar"],
  ])("answers 502 for %s, and keeps that answer (the digest names those bytes forever)", async (_what, digest, answer, reason) => {
    const { s, reads } = source({}, answer);
    const bundles = new UiBundles(s);
    for (let i = 0; i < 2; i++) {
      const r = await bundles.get(IMAGE, digest);
      expect(r.ok === false && r.status).toBe(502);
      expect(r.ok === false && r.reason).toContain(reason);
    }
    expect(reads).toHaveLength(1);
  });

  it("answers 502 for a refusal of the source (not found, too large, a registry's 500) and asks the source again next time", async () => {
    const { s, reads } = source({}, (): BlobRead => ({ ok: false, retry: false, message: "too large" }));
    const bundles = new UiBundles(s);
    for (let i = 0; i < 2; i++) {
      const r = await bundles.get(IMAGE, digestOf(a));
      expect(r.ok === false && r.status).toBe(502);
      expect(r.ok === false && r.reason).toContain("cannot be read");
    }
    expect(reads).toHaveLength(2);
  });

  it("refuses a tar that is a clean digest match but unsafe inside (a link)", async () => {
    const link = bundle("evil", "");
    link.write("2", 156);
    link.write("        ", 148);
    let sum = 0;
    for (const x of link.subarray(0, 512)) sum += x;
    link.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
    const { s } = source({ [digestOf(link)]: link });
    const r = await new UiBundles(s).get(IMAGE, digestOf(link));
    expect(r.ok === false && r.reason).toContain("unsupported_entry");
  });

  it("answers 503 when the source cannot be reached, and asks again next time", async () => {
    const { s, reads } = source({}, () => ({ ok: false, retry: true, message: "registry unreachable" }));
    const bundles = new UiBundles(s);
    expect(await bundles.get(IMAGE, digestOf(a))).toMatchObject({ ok: false, status: 503 });
    expect(await bundles.get(IMAGE, digestOf(a))).toMatchObject({ ok: false, status: 503 });
    expect(reads).toHaveLength(2);
  });

  it("answers 503 when the source throws instead of answering", async () => {
    const s: UiBlobSource = { read: () => Promise.reject(new Error("boom")) };
    expect(await new UiBundles(s).get(IMAGE, digestOf(a))).toMatchObject({ ok: false, status: 503 });
  });

  it("answers 504 when the read does not finish within the deadline", async () => {
    const s: UiBlobSource = { read: () => new Promise<BlobRead>(() => undefined) };
    expect(await new UiBundles(s, { deadlineMs: 5 }).get(IMAGE, digestOf(a))).toMatchObject({ ok: false, status: 504 });
  });

  it("refuses bytes over the cap even when a source gives them", async () => {
    const { s, reads } = source({ [digestOf(a)]: a });
    const r = await new UiBundles(s, { maxBundleBytes: 1024, cacheBytes: 4096 }).get(IMAGE, digestOf(a));
    expect(r.ok === false && r.reason).toContain("too large");
    expect(reads[0]?.max).toBe(1024);
  });

  it("keeps at most its byte budget, letting the least recently used bundle go first", async () => {
    const c = bundle("index.html", "<p>c</p>");
    const { s, reads } = source({ [digestOf(a)]: a, [digestOf(b)]: b, [digestOf(c)]: c });
    // Room for two bundles of this size.
    const bundles = new UiBundles(s, { maxBundleBytes: a.length, cacheBytes: 2 * a.length });
    await bundles.get(IMAGE, digestOf(a));
    await bundles.get(IMAGE, digestOf(b));
    await bundles.get(IMAGE, digestOf(a));
    await bundles.get(IMAGE, digestOf(c));
    expect(bundles.heldBytes).toBe(2 * a.length);
    await bundles.get(IMAGE, digestOf(a));
    await bundles.get(IMAGE, digestOf(b));
    expect(reads.map((r) => r.digest)).toEqual([digestOf(a), digestOf(b), digestOf(c), digestOf(b)]);
  });
});
