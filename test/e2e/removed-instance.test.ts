/**
 * A removed instance through the compiled bundle, as a user meets it: `up --demo` installs ecb-fx,
 * `import` keeps a delivery of it, `delete plugin ecb-fx --purge` uninstalls it; then every face
 * (`why`, `log --plugin`, `log`, `deliveries`, `deliveries get`, the API and the console's pages)
 * still shows what it did, as from removed instance ecb-fx (removed at …). A plain delete
 * (ledger-view) is a removed instance too, with its grant and Secrets kept.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, spawnOpenfief, startOpenfief } from "./support.js";
import type { Run, Started } from "./support.js";

const DAILY = join(ROOT, "plugins", "ecb-fx", "fixtures", "eurofxref-daily.xml");
/** How long `up` may take to do what a test waits for (sign a checkpoint, decide on a deletion). */
const SETTLE_MS = 30_000;
/** The words every face prints for ecb-fx's purge (the time and event read from the log). */
const MARK = /from removed instance ecb-fx \(removed at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC, event (\d+), uninstalled\)/;

let root: string;
let data: string;
let up: Started;
let url: string;
let cookie: string;
let batch: string;

async function run(args: readonly string[]): Promise<Run> {
  const r = await spawnOpenfief([...args, "--data", data]);
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r;
}

async function get(path: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`${url}${path}`, { headers: { cookie } });
  return { status: r.status, text: await r.text() };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "openfief-removed-"));
  data = join(root, "data");
  up = await startOpenfief(["up", "--demo", "--data", data, "--no-egress", "--no-views", "--listen", "127.0.0.1:0"]);
  const out = await up.waitFor(/openfief is up/, 150_000);
  const link = /(http:\/\/127\.0\.0\.1:\d+)\/signin\?code=\S+/.exec(out);
  if (link === null) throw new Error(`no sign-in link in ${out}`);
  url = link[1] ?? "";
  const signedIn = await fetch(link[0], { redirect: "manual" });
  cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  expect(cookie).toMatch(/=/);
  const imported = await run(["import", "ecb-fx", DAILY, "--media-type", "application/xml"]);
  batch = /as batch (import-[0-9a-f-]+)/.exec(imported.stdout)?.[1] ?? "";
  expect(batch).not.toBe("");
  await run(["delete", "plugin", "ecb-fx", "--purge"]);
}, 240_000);

afterAll(async () => {
  const r = await up.stop();
  expect(r.code, r.stderr).toBe(0);
  await rm(root, { recursive: true, force: true });
});

let removed: Promise<{ at: string; seq: string }> | null = null;

/** The removal's time and event, as `why --json` states them (read once). */
function removal(): Promise<{ at: string; seq: string }> {
  removed ??= (async () => {
    const why = await run(["why", "ecb-fx", "--json"]);
    const r = (JSON.parse(why.stdout) as { removed: { at: string; seq: number; how: string } }).removed;
    expect(r.how).toBe("uninstalled");
    return { at: r.at.replace("T", " ").replace(/\.\d+Z$|Z$/, ""), seq: String(r.seq) };
  })();
  return removed;
}

describe("a removed instance on every face", () => {
  it("why says it is a removed instance, when it went and what went with it", async () => {
    const { at, seq } = await removal();
    const first = (await run(["why", "ecb-fx"])).stdout.split("\n")[0];
    expect(first).toBe(`ecb-fx is a removed instance: it was uninstalled at ${at} UTC (event ${seq}), removing its objects and allow-list entry, its grant, module ${first?.match(/module ([0-9a-f]{12})/)?.[1] ?? "?"}. Its decisions and deliveries stay in the log, shown as from a removed instance.`);
  });

  it("get plugins says what the status deleted means", async () => {
    const out = (await run(["get", "plugins"])).stdout;
    expect(out).toMatch(/^ecb-fx\s+deleted\s/m);
    expect(out).toContain("STATUS \"deleted\": a removed instance; what it did stays in the log, marked as from a removed instance (openfief why NAME says how it went).");
  });

  it("log --plugin keeps its history (exit 0, never 'unknown plugin') and marks what it did, in the same words", async () => {
    const { at, seq } = await removal();
    const lines = (await run(["log", "--plugin", "ecb-fx"])).stdout.trim().split("\n");
    const imported = lines.find((l) => l.includes("import.delivered"));
    expect(imported).toContain(batch);
    expect(MARK.exec(imported ?? "")?.slice(1)).toEqual([at, seq]);
    // The removal itself, and what came after it, are not marked.
    expect(lines.filter((l) => /plugin\.uninstall\.requested|plugin\.uninstalled/.test(l)).some((l) => MARK.test(l))).toBe(false);
    // The whole log marks it too.
    expect((await run(["log"])).stdout.split("\n").filter((l) => l.includes("import.delivered")).every((l) => MARK.test(l))).toBe(true);
  });

  it("deliveries lists its delivery, marked; deliveries get and --json name the removal", async () => {
    const { at, seq } = await removal();
    const table = (await run(["deliveries"])).stdout;
    expect(table).toMatch(new RegExp(`^${batch}\\s+ecb-fx \\(removed\\)\\s+import\\s`, "m"));
    expect(table).toContain(`ecb-fx (removed): from removed instance ecb-fx (removed at ${at} UTC, event ${seq}, uninstalled)`);
    const listed = JSON.parse((await run(["deliveries", "ecb-fx", "--json"])).stdout) as { deliveries: { batchId: string; removed: { name: string; how: string; seq: number; text: string } | null }[] };
    expect(listed.deliveries).toEqual([expect.objectContaining({ batchId: batch, removed: expect.objectContaining({ name: "ecb-fx", how: "uninstalled", seq: Number(seq), text: expect.stringMatching(MARK) }) })]);
    const one = JSON.parse((await run(["deliveries", "get", batch])).stdout) as { batchId: string; removed: { text: string } | null; delivery: { fxRates: unknown[] } };
    expect(one.delivery.fxRates.length).toBeGreaterThan(0);
    expect(one.removed?.text).toMatch(MARK);
  });

  it("the API names the removal on the plugin, its why, and its deliveries", async () => {
    const plugin = await get("/api/v1/plugins/ecb-fx");
    expect(plugin.status).toBe(200);
    expect((JSON.parse(plugin.text) as { removed: { how: string; text: string } }).removed).toMatchObject({ how: "uninstalled", text: expect.stringMatching(MARK) });
    const why = JSON.parse((await get("/api/v1/plugins/ecb-fx/why")).text) as { sentences: string[]; removed: { how: string } };
    expect(why.removed.how).toBe("uninstalled");
    expect(why.sentences[0]).toMatch(/^ecb-fx is a removed instance: it was uninstalled at /);
    const deliveries = JSON.parse((await get("/api/v1/deliveries?plugin=ecb-fx")).text) as { deliveries: { batchId: string; removed: { text: string } | null }[] };
    expect(deliveries.deliveries.map((d) => [d.batchId, MARK.test(d.removed?.text ?? "")])).toEqual([[batch, true]]);
    const one = await get(`/api/v1/deliveries/${batch}`);
    expect(one.status).toBe(200);
    expect((JSON.parse(one.text) as { removed: { text: string } }).removed.text).toMatch(MARK);
    expect((await get("/api/v1/deliveries/no-such-batch")).status).toBe(404);
    // A page of the log names the removal of each event from the removed instance, and only those.
    const events = JSON.parse((await get("/api/v1/events?plugin=ecb-fx&limit=500")).text) as { events: { seq: number; type: string }[]; removed: Record<string, { text: string }> };
    const imported = events.events.find((e) => e.type === "import.delivered");
    expect(events.removed[String(imported?.seq)]?.text).toMatch(MARK);
    const uninstalled = events.events.find((e) => e.type === "plugin.uninstalled");
    expect(events.removed[String(uninstalled?.seq)]).toBeUndefined();
  });

  it("the console's plugin page and log page say removed instance", async () => {
    const page = await get("/plugins/ecb-fx");
    expect(page.status).toBe(200);
    expect(page.text).toContain("removed instance</span>");
    expect(page.text).toMatch(/<section class="card callout bad" id="removed"/);
    // The deliveries card lists the delivery, marked with the same words.
    const card = page.text.slice(page.text.indexOf('id="deliveries"'));
    expect(card).toContain(batch);
    expect(card).toMatch(/class="small removed-from"><span aria-hidden="true">✕ <\/span>from removed instance ecb-fx \(removed at /);
    // Its timeline says it once, above, not on every row; the log page marks each row.
    const timeline = page.text.slice(page.text.indexOf("<h2>Timeline</h2>"));
    expect(timeline).toContain("imported by owner:cli as batch");
    expect(timeline).not.toContain("— from removed instance");
    const log = await get("/log?plugin=ecb-fx");
    expect(log.status).toBe(200);
    expect(log.text).toMatch(/imported by owner:cli as batch import-[^<]*— from removed instance ecb-fx \(removed at /);
  });

  it("the console's integrity page offers a proof only for the events the newest signed checkpoint covers, and serves it", async () => {
    // `up` signs a checkpoint within seconds of the log growing; the wait is by the clock, within
    // the test's own time, so a loaded machine's slower fetches do not end the test first.
    let size = 0;
    for (const until = Date.now() + SETTLE_MS; size === 0 && Date.now() < until; ) {
      const r = await fetch(`${url}/tlog/checkpoint`);
      if (r.ok) size = Number((await r.text()).split("\n")[1]);
      if (size === 0) await new Promise((done) => setTimeout(done, 200));
    }
    expect(size).toBeGreaterThan(0);
    const page = await get("/integrity");
    expect(page.status).toBe(200);
    const max = Number(/<input id="proof-seq" type="number" name="seq" min="1" max="(\d+)"/.exec(page.text)?.[1]);
    // The newest checkpoint when the page was made: at least the one just fetched.
    expect(max).toBeGreaterThanOrEqual(size);
    expect(page.text).toMatch(new RegExp(`Events 1 to ${max} have one|Every event so far \\(1 to ${max}\\) has one`));
    const proof = await get(`/integrity/proof?seq=${max}`);
    expect(proof.status).toBe(200);
    expect(proof.text).toMatch(/^c2sp\.org\/tlog-proof@v1\n/);
  }, 2 * SETTLE_MS);

  it("a plain delete is a removed instance too, with its grant and Secrets kept", async () => {
    await run(["delete", "plugin", "ledger-view"]);
    const first = (await run(["why", "ledger-view"])).stdout.split("\n")[0];
    expect(first).toMatch(/^ledger-view is a removed instance: its Plugin was deleted at \S+ \S+ UTC \(event \d+\); nothing else was removed \(its grant and Secrets go only when it is uninstalled\), and applying it again brings it back/);
    // The running control plane decides on the deletion in a moment; each look is a command of its
    // own, so the wait is by the clock.
    let decided: string[] = [];
    for (const until = Date.now() + SETTLE_MS; !(decided.at(-1) ?? "").includes("runs nothing") && Date.now() < until; ) {
      if (decided.length > 0) await new Promise((resolve) => setTimeout(resolve, 250));
      decided = (await run(["log", "--plugin", "ledger-view", "--type", "rollout.decided"])).stdout.trim().split("\n");
    }
    // Its decisions before the deletion are marked; the decision the deletion caused is not.
    expect(decided.slice(0, -1).every((l) => /from removed instance ledger-view \(removed at .*, its Plugin deleted\)/.test(l))).toBe(true);
    expect(decided.at(-1)).not.toContain("from removed instance");
  }, 2 * SETTLE_MS);
});
