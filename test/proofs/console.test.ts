/**
 * The console's integrity page, through real HTTP: each witness with the newest size it cosigned
 * and its last answer (a refusal called out), and an event's proof as a download that verifies
 * offline with the log's key and the witness's.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "node:http";
import type { Server } from "node:http";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLogKey, parseWitnessTarget, Witnesses } from "../../src/app/index.js";
import { writeCheckpoint } from "../../src/events/index.js";
import type { StoredCheckpoint } from "../../src/events/index.js";
import { cosignerFromSeed, openCheckpoint } from "../../src/tlog/index.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";
import { openfief } from "../e2e/support.js";
import { call, cookieOf } from "../server/support.js";

let demo: ConsoleDemo;
let cookie: string;
let checkpoint: StoredCheckpoint;
let fake: Server;
let refusing: Server;
const cosigner = cosignerFromSeed("witness.test/console", new Uint8Array(32).fill(3));
if (!cosigner.ok) throw new Error(cosigner.error.message);
const w = cosigner.value;

/** A witness that cosigns whatever it is sent (the protocol's side is tested against the real one elsewhere). */
function serve(answer: (body: string) => [number, string]): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const [status, text] = answer(body);
      res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(text);
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
}

beforeAll(async () => {
  demo = await startConsoleDemo({ history: false, checkpoints: true });
  const link = new URL(await demo.signIn("bob", "viewer"));
  cookie = cookieOf(await call(demo.url, link.pathname + link.search));
  const store = demo.cp.runtime.store;
  const c = await writeCheckpoint(store, loadLogKey({ dataDir: demo.dir }).signer);
  if (c === null) throw new Error("no checkpoint");
  checkpoint = c;
  const good = await serve((body) => {
    const text = body.slice(body.indexOf("\n\n") + 2, body.lastIndexOf("\n\n") + 1);
    const line = w.sign(text, 1_700_000_000);
    return line.ok ? [200, `— ${line.value.name} ${line.value.base64}\n`] : [400, "bad"];
  });
  fake = good.server;
  const bad = await serve(() => [422, "the checkpoint is not consistent with the one cosigned\n"]);
  refusing = bad.server;
  const witnesses = await Witnesses.start(store, [parseWitnessTarget(`${good.url} ${w.verifierKey}`), parseWitnessTarget(bad.url)], { logger: pino({ level: "silent" }) });
  witnesses.submit(checkpoint);
  await witnesses.settled();
  await witnesses.stop();
}, 90_000);

afterAll(async () => {
  await demo.stop();
  await new Promise((r) => fake.close(r));
  await new Promise((r) => refusing.close(r));
});

describe("the integrity page", () => {
  it("shows each witness, the newest size it cosigned, and calls out a refusal", async () => {
    const r = await call(demo.url, "/integrity", { headers: { cookie } });
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/<h2>Witnesses /);
    expect(r.text).toContain(`witness.test/console+${w.verifierKey.split("+")[1] ?? ""}`);
    expect(r.text).toMatch(new RegExp(`<td data-label="Newest size cosigned">${checkpoint.size}</td>\\s*<td data-label="Last answer">cosigned the newest checkpoint it was sent`));
    // On a phone, one card per witness (the table does not widen the page).
    expect(r.text).toMatch(/<div class="table-wrap"><table class="cards"><thead><tr><th>Witness<\/th>/);
    expect(r.text).toMatch(/A witness refused a checkpoint of this log/);
    expect(r.text).toMatch(/<strong>refused a checkpoint<\/strong><br><span class="small">the witness refuses the checkpoint of \d+ events as inconsistent/);
    expect(r.text).toMatch(/<form method="get" action="\/integrity\/proof"/);
  });

  it("offers an event's proof as a download that verifies offline, with the witness's cosignature", async () => {
    const r = await call(demo.url, "/integrity/proof?seq=2", { headers: { cookie } });
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(r.headers["content-disposition"]).toBe('attachment; filename="event-2.tlog-proof"');
    expect(r.text).toMatch(/^c2sp\.org\/tlog-proof@v1\nextra /);
    const note = r.text.slice(r.text.indexOf("\n\n") + 2);
    expect(openCheckpoint(note, [w.verifier]).ok).toBe(true);
    const file = join(demo.dir, "downloaded.tlog-proof");
    writeFileSync(file, r.text);
    const v = await openfief(["verify-proof", file, "--key", loadLogKey({ dataDir: demo.dir }).verifierKey, "--witness", w.verifierKey]);
    expect([v.code, v.stderr]).toEqual([0, ""]);
  });

  it("answers an event past the newest checkpoint, or no number, with an error page", async () => {
    const past = await call(demo.url, `/integrity/proof?seq=${checkpoint.seq + 5}`, { headers: { cookie } });
    expect(past.status).toBe(404);
    const none = await call(demo.url, "/integrity/proof?seq=x", { headers: { cookie } });
    expect(none.status).toBe(400);
    const anonymous = await call(demo.url, "/integrity/proof?seq=2");
    expect(anonymous.status).toBe(401);
  });
});
