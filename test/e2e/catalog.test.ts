/**
 * Verified plugins end to end, through the bundle users run: the demo's first-party plugins, which
 * the shipped catalog pins with the release key as publisher, show as verified in `get plugins` and
 * `why` says since when; a catalog change is a `catalog.observed` event (a catalog with the same
 * entries keeps "since", one that drops an entry starts it over); a catalog whose entry names a
 * wrong digest or a wrong publisher shows what does not match and never "verified"; a catalog with
 * a pattern, an unknown field or trailing data is refused whole, with its code and field path, and
 * nothing is recorded.
 */
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshBundle, json, ok, openfief, ROOT, spawnOpenfief } from "./support.js";

interface CatalogWord { standing: string; entry: string; publisher: string; since?: string; sinceEvent?: number; listed?: string; digest: string }
interface Row { name: string; verdict: string | null; signature: { outcome: string; catalog: CatalogWord | null } | null }
interface Entry { name: string; image: string; publisher: Record<string, string> }

const SHIPPED = join(ROOT, "catalog", "plugins.json");
const LAYOUT = join(ROOT, "examples", "oci");
const SIGNERS = join(ROOT, "examples", "trusted-signers.json");
const V1 = "sha256:32a155bf13262adffa93e0d7023b17306472f1dcb8d93c686bfe850e9dc594cb";
const V2 = "sha256:ac327d8f7783deccfac561eb6d7231f9a77c219bb934886e9e9e04dd2193321d";

let dir: string;
const shipped = (JSON.parse(readFileSync(SHIPPED, "utf8")) as { plugins: Entry[] }).plugins;
let counter = 0;

beforeAll(freshBundle, 180_000);
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-catalog-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function catalogFile(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

/** A fresh data folder with the demo's plugins applied. */
async function folder(): Promise<string[]> {
  const data = ["--data", join(dir, `data-${++counter}`)];
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
  return data;
}

async function reconcile(data: string[], catalog: string): Promise<void> {
  await ok(["reconcile", ...data, "--oci-layout", LAYOUT, "--trusted-signers", SIGNERS, "--catalog", catalog]);
}

async function rows(data: string[]): Promise<Map<string, Row>> {
  return new Map((await json<Row[]>(["get", "plugins", ...data])).map((r) => [r.name, r]));
}

describe("the demo through the bundle", () => {
  it("shows the catalog's plugins as verified in get plugins, and why says since when", async () => {
    const data = await folder();
    // ibkr-flex, installed apart from the quick start's plugins (it needs the owner's IBKR Secret).
    await ok(["apply", "-f", join(ROOT, "examples", "ibkr-flex"), ...data]);
    await reconcile(data, SHIPPED);
    const table = await spawnOpenfief(["get", "plugins", ...data]);
    expect(table.code).toBe(0);
    for (const name of ["ecb-fx", "ibkr-flex", "ledger-view", "nbp-fx"]) {
      expect(table.stdout.split("\n").find((l) => l.startsWith(`${name} `))).toMatch(/ in the catalog \(openfief-release\) /);
    }
    const why = await spawnOpenfief(["why", "nbp-fx", ...data]);
    expect(why.code).toBe(0);
    expect(why.stdout).toMatch(new RegExp(`^The catalog pins nbp-fx at ${V1} by openfief-release, who signed it: verified since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC \\(event \\d+\\)\\.$`, "m"));
    const ibkr = await spawnOpenfief(["why", "ibkr-flex", ...data]);
    expect(ibkr.stdout).toMatch(/^The catalog pins ibkr-flex at sha256:[0-9a-f]{64} by openfief-release, who signed it: verified since /m);
    expect((await rows(data)).get("ibkr-flex")?.signature?.outcome).toBe("verified");
    const log = await spawnOpenfief(["log", "--type", "catalog.observed", ...data]);
    expect(log.stdout).toMatch(/trust +catalog\.observed +reconciler +the catalog [0-9a-f]{12} was observed, pinning ecb-fx, ibkr-flex, ledger-view and nbp-fx/);
  }, 60_000);
});

describe("a catalog change is an event", () => {
  it("keeps since when for an entry a new catalog keeps, and starts it over after a catalog without it", async () => {
    const data = await folder();
    await reconcile(data, SHIPPED);
    const first = (await rows(data)).get("nbp-fx")?.signature?.catalog;
    expect(first).toMatchObject({ standing: "verified", entry: "nbp-fx", publisher: "openfief-release", digest: V1 });
    // The same entries in other bytes: a new catalog event, and the entry is verified since the first.
    await reconcile(data, await catalogFile("same.json", JSON.stringify({ plugins: shipped })));
    expect((await rows(data)).get("nbp-fx")?.signature?.catalog).toEqual(first);
    // Recorded again only when it changes: a pass with the same catalog appends no catalog event.
    await reconcile(data, join(dir, "same.json"));
    const observed = (await ok(["log", "--type", "catalog.observed", "--json", ...data])).trim().split("\n");
    expect(observed).toHaveLength(2);
    // Without nbp-fx, then with it again: verified since the catalog that brought it back.
    await reconcile(data, await catalogFile("without.json", JSON.stringify({ plugins: shipped.filter((e) => e.name !== "nbp-fx") })));
    expect((await rows(data)).get("nbp-fx")).toMatchObject({ verdict: "unverified", signature: { catalog: null } });
    await reconcile(data, SHIPPED);
    const again = (await rows(data)).get("nbp-fx")?.signature?.catalog;
    expect(again).toMatchObject({ standing: "verified" });
    expect(again?.sinceEvent).toBeGreaterThan(first?.sinceEvent ?? Infinity);
    // Each verdict cites the catalog it was decided with.
    const verdicts = (await ok(["log", "--type", "signature.verdict", "--json", ...data])).trim().split("\n").map((l) => JSON.parse(l) as { data: { catalogEvent?: number } });
    expect(verdicts.every((v) => typeof v.data.catalogEvent === "number")).toBe(true);
    expect((await openfief(["check-decisions", ...data])).code).toBe(0);
  }, 90_000);
});

describe("a catalog entry that does not match is never verified", () => {
  it("a wrong digest: says which digest the catalog lists and which this image is", async () => {
    const data = await folder();
    const wrong = shipped.map((e) => (e.name === "nbp-fx" ? { ...e, image: e.image.replace(V1, V2) } : e));
    await reconcile(data, await catalogFile("wrong-digest.json", JSON.stringify({ plugins: wrong })));
    expect((await rows(data)).get("nbp-fx")).toMatchObject({ verdict: "unverified", signature: { catalog: { standing: "other_digest", listed: V2, digest: V1 } } });
    const table = await spawnOpenfief(["get", "plugins", ...data]);
    expect(table.stdout).toContain("nbp-fx: catalog lists nbp-fx at sha256:ac327d8f7783 by openfief-release; this image is sha256:32a155bf1326; not verified.");
    expect(table.stdout.split("\n").find((l) => l.startsWith("nbp-fx "))).toMatch(/signed by demo-owner,openfief-release \(not as the catalog lists nbp-fx\)/);
    expect((await spawnOpenfief(["why", "nbp-fx", ...data])).stdout).toContain(`The catalog lists nbp-fx at ${V2} by openfief-release; this image is ${V1}; so it is not verified.`);
  }, 60_000);

  it("verify says which catalog entry an image does not match, and still never calls it verified", async () => {
    const v2 = await openfief(["verify", "--plugin", join(ROOT, "examples", "upgrade", "nbp-fx-v2.yaml"), "--oci-layout", LAYOUT, "--trusted-signers", SIGNERS]);
    expect(v2.code).toBe(0);
    expect(v2.stdout).toContain(`trusted: localhost/openfief-demo/nbp-fx@${V2}: signed by demo-owner, a signer you trust; catalog lists nbp-fx at ${V1} by openfief-release; this image is ${V2}\n`);
    const refused = await openfief(["verify", "--plugin", join(ROOT, "examples", "upgrade", "nbp-fx-v2.yaml"), "--oci-layout", LAYOUT]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^refused: .*\(untrusted_signer\); catalog lists nbp-fx at sha256:32a1/);
    const v1 = await openfief(["verify", "--plugin", join(ROOT, "examples", "plugins", "nbp-fx.yaml"), "--oci-layout", LAYOUT]);
    expect(v1.stdout).toMatch(/^verified: .*: signed by openfief-release, the catalog's publisher; in the catalog as entry nbp-fx\n/);
  }, 60_000);

  it("a wrong publisher: says the image is not signed by the catalog's publisher", async () => {
    const data = await folder();
    const other = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" }).toString();
    const wrong = shipped.map((e) => (e.name === "nbp-fx" ? { ...e, publisher: { name: "someone-else", publicKey: other } } : e));
    await reconcile(data, await catalogFile("wrong-publisher.json", JSON.stringify({ plugins: wrong })));
    expect((await rows(data)).get("nbp-fx")).toMatchObject({ verdict: "unverified", signature: { catalog: { standing: "other_publisher", publisher: "someone-else", digest: V1 } } });
    expect((await spawnOpenfief(["why", "nbp-fx", ...data])).stdout).toContain(`The catalog lists nbp-fx at ${V1} by someone-else; this image is not signed by someone-else; so it is not verified.`);
  }, 60_000);
});

describe("a bad catalog is refused whole", () => {
  const entry = (over: Record<string, unknown>) => ({ name: "nbp-fx", image: `localhost/openfief-demo/nbp-fx@${V1}`, publisher: { name: "p", issuer: "https://token.actions.githubusercontent.com", subject: "https://github.com/x/y/.github/workflows/r.yml@refs/heads/main" }, ...over });
  it.each([
    ["a pattern publisher", JSON.stringify({ plugins: [entry({ publisher: { name: "p", issuer: "https://token.actions.githubusercontent.com", subjectPattern: ".*" } })] }), /plugins\[0\]\.publisher\.subjectPattern: .*never a pattern.* \(invalid_catalog\)/],
    ["an unknown field", JSON.stringify({ plugins: [entry({ verified: true })] }), /plugins\[0\]\.verified: unknown field "verified" \(unknown_field\)/],
    ["trailing data", `${JSON.stringify({ plugins: [entry({})] })}\n{}`, /\(invalid_json\)/],
    ["a wrong digest among good entries", JSON.stringify({ plugins: [...shipped, entry({ name: "other", image: "x/y@sha256:abc" })] }), /plugins\[4\]\.image: .*\(invalid_image_ref\)/],
  ])("%s: reconcile and verify refuse it with its code and path, and nothing is recorded", async (_what, text, error) => {
    const data = await folder();
    const before = (await ok(["log", "--json", ...data])).trim().split("\n").length;
    const bad = await catalogFile(`bad-${++counter}.json`, text);
    const r = await spawnOpenfief(["reconcile", ...data, "--oci-layout", LAYOUT, "--catalog", bad]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^openfief: invalid catalog /);
    expect(r.stderr).toMatch(error);
    expect((await ok(["log", "--json", ...data])).trim().split("\n")).toHaveLength(before);
    const v = await openfief(["verify", "--plugin", join(ROOT, "examples", "plugins", "nbp-fx.yaml"), "--oci-layout", LAYOUT, "--catalog", bad]);
    expect(v.code).toBe(2);
    expect(v.stderr).toMatch(error);
  }, 60_000);
});
