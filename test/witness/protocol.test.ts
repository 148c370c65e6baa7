/**
 * The witness over real HTTP on 127.0.0.1, as C2SP tlog-witness defines add-checkpoint: a fake log
 * (src/tlog's tree, checkpoints and proofs) asks for cosignatures, and each answer's status, content
 * type and body are the specification's. Cosignatures are checked with the witness's verifier key
 * through src/tlog's note verification, as a log's client would check them.
 */
import { Buffer } from "node:buffer";
import { request } from "node:http";
import { connect } from "node:net";
import type { ClientRequest } from "node:http";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openNote, parseCosignature, parseVerifierKey, WITNESS_CAPS } from "../../src/tlog/index.js";
import { KEY_FILE, listenWitness, openWitness, originHash } from "../../src/witness/index.js";
import type { AccessEntry, HttpLimits, ListeningWitness, OpenedWitness } from "../../src/witness/index.js";
import { FakeLog, must } from "../../src/witness/test-support.js";

const NOW = 1_750_000_000;
const log = new FakeLog("example.com/log").grow(8);
const other = new FakeLog("example.com/other").grow(3);
const impostor = new FakeLog("example.com/log", { seed: "not the log's key" }).grow(8);
const fork = new FakeLog("example.com/log", { fork: "forked " }).grow(8);
const WITNESS = "witness.example/w1";

let dir: string;
let opened: OpenedWitness | null = null;
let server: ListeningWitness | null = null;
let access: AccessEntry[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "witness-protocol-"));
  access = [];
});
afterEach(async () => {
  await stop();
  rmSync(dir, { recursive: true, force: true });
});

async function stop(): Promise<void> {
  await server?.close(1000);
  opened?.release();
  server = null;
  opened = null;
}

/** Starts a witness for `logs` on a free port of 127.0.0.1. */
async function start(logs: readonly FakeLog[], limits: Partial<HttpLimits> = {}): Promise<string> {
  const lines = logs.map((l, i) => ({ text: l.line, where: `--log[${i}]` }));
  const { collectLogs } = await import("../../src/witness/index.js");
  opened = must(openWitness({ dir, name: WITNESS, logs: must(collectLogs(lines)), clock: () => NOW }));
  server = await listenWitness(opened.service, { host: "127.0.0.1", port: 0 }, { limits, log: (e) => access.push(e) });
  return server.url;
}

interface Answer {
  readonly status: number;
  readonly type: string | null;
  readonly body: string;
}

async function post(url: string, body: string | Uint8Array, path = "/add-checkpoint", method = "POST"): Promise<Answer> {
  const r = await fetch(`${url}${path}`, { method, ...(method === "POST" ? { body } : {}) });
  return { status: r.status, type: r.headers.get("content-type"), body: await r.text() };
}

/** Opens a checkpoint with the answer's cosignature lines against the witness's key alone. */
function cosignedBy(checkpoint: string, lines: string): { timestamp: number }[] {
  const verifier = must(parseVerifierKey(opened?.service.verifierKey ?? ""));
  const note = must(openNote(`${checkpoint}${lines}`, [verifier]));
  return note.verified.map((s) => ({ timestamp: must(parseCosignature(s)).timestamp }));
}

describe("add-checkpoint over HTTP", () => {
  it("cosigns a first checkpoint: 200, one cosignature line that verifies with the witness's verifier key", async () => {
    const log = new FakeLog("example.com/log").grow(5);
    const url = await start([log]);
    const a = await post(url, log.body(0));
    expect([a.status, a.type]).toEqual([200, "text/plain; charset=utf-8"]);
    expect(a.body).toMatch(new RegExp(`^— ${WITNESS.replace(".", "\\.")} [A-Za-z0-9+/]+=*\\n$`));
    expect(cosignedBy(log.checkpoint(), a.body)).toEqual([{ timestamp: NOW }]);
  });

  it("cosigns each extension of the log with a consistency proof, and serves the latest to monitors", async () => {
    const log = new FakeLog("example.com/log").grow(1);
    const url = await start([log]);
    const monitorPath = `/${originHash(log.origin)}/checkpoint`;
    expect((await post(url, "", monitorPath, "GET")).status).toBe(404);
    let old = 0;
    for (const grow of [1, 2, 13, 1, 300]) {
      log.grow(grow);
      const a = await post(url, log.body(old));
      expect([a.status, cosignedBy(log.checkpoint(), a.body).length]).toEqual([200, 1]);
      old = log.size;
    }
    const m = await post(url, "", monitorPath, "GET");
    expect([m.status, m.type]).toEqual([200, "text/plain; charset=utf-8"]);
    // What monitors get: the log's signature the witness verified, and its cosignature.
    expect(must(openNote(m.body, [log.signer.verifier])).text).toBe(log.checkpoint().slice(0, log.checkpoint().indexOf("\n\n") + 1));
    expect(must(openNote(m.body, [must(parseVerifierKey(opened?.service.verifierKey ?? ""))])).verified).toHaveLength(1);
  });

  /** Requests after the witness cosigned `log` at 5 (from 0). */
  it.each<[string, () => string | Uint8Array, number, string, string | RegExp, number?]>([
    ["a stale old size gets 409 with the size it cosigned, as text/x.tlog.size", () => log.body(3, 8), 409, "text/x.tlog.size", "5\n"],
    ["a client starting from 0 learns the size it cosigned (409)", () => log.body(0, 8), 409, "text/x.tlog.size", "5\n"],
    ["a consistency proof that does not verify gets 422", () => `old 5\n${log.proof(5, 8).reverse().join("\n")}\n\n${log.checkpoint(8)}`, 422, "text/plain; charset=utf-8", /consistency proof does not verify/],
    ["no consistency proof between different sizes gets 422", () => `old 5\n\n${log.checkpoint(8)}`, 422, "text/plain; charset=utf-8", /does not verify/],
    ["another root for the size it cosigned (a fork) gets 422", () => fork.body(5, 5), 422, "text/plain; charset=utf-8", /different root for size 5/],
    ["a fork's larger checkpoint, with the fork's own proof, gets 422", () => `old 5\n${fork.proof(5, 8).join("\n")}\n\n${fork.checkpoint(8)}`, 422, "text/plain; charset=utf-8", /does not verify/],
    ["a checkpoint signed by a key it does not trust for the origin gets 403", () => impostor.body(5, 8), 403, "text/plain; charset=utf-8", /not signed by a trusted key/],
    ["a badly signed checkpoint by the log's key gets 403", () => log.body(5, 8).replace(/ ([A-Za-z0-9+/]{10})/, " AAAAAAAAAA"), 403, "text/plain; charset=utf-8", /not signed by a trusted key/],
    ["an origin it does not witness gets 404", () => new FakeLog("example.com/unknown").grow(2).body(0), 404, "text/plain; charset=utf-8", "unknown log\n"],
    ["a body that is not a request gets 400", () => "hello\n", 400, "text/plain; charset=utf-8", /old <size>/],
    ["an old size above the checkpoint's gets 400", () => log.body(5, 5).replace("old 5", "old 6"), 400, "text/plain; charset=utf-8", /larger than the checkpoint's/],
    ["an old size with a leading zero gets 400", () => log.body(5, 8).replace("old 5", "old 05"), 400, "text/plain; charset=utf-8", /without leading zeros/],
    ["more than 63 proof lines get 400", () => `old 5\n${`${log.proof(5, 8)[0] ?? ""}\n`.repeat(64)}\n${log.checkpoint(8)}`, 400, "text/plain; charset=utf-8", /at most 63/],
    ["a body over the cap gets 413 before it is read", () => Buffer.alloc(WITNESS_CAPS.maxBodyBytes + 1, 0x61), 413, "text/plain; charset=utf-8", /at most/],
    ["the same checkpoint again is cosigned again (200)", () => log.body(5, 5), 200, "text/plain; charset=utf-8", /^— witness\.example\/w1 /],
    ["the next checkpoint with its proof is cosigned (200)", () => log.body(5, 8), 200, "text/plain; charset=utf-8", /^— witness\.example\/w1 /, 8],
  ])("%s", async (...[, body, status, type, text, stands = 5]) => {
    const url = await start([log, other]);
    expect((await post(url, log.body(0, 5))).status).toBe(200);
    const a = await post(url, body());
    expect([a.status, a.type]).toEqual([status, type]);
    if (typeof text === "string") expect(a.body).toBe(text);
    else expect(a.body).toMatch(text);
    // Whatever was refused, the witness still stands where it did (or moved forward on a 200).
    expect((await post(url, log.body(0, 8))).body).toBe(`${stands}\n`);
  });

  it("never cosigns a fork of the log, whatever old size it claims, once it cosigned the log", async () => {
    const url = await start([log]);
    expect((await post(url, log.body(0, 4))).status).toBe(200);
    const answers = [];
    for (const [old, size] of [[4, 4], [4, 6], [4, 8], [0, 8], [5, 8]] as const) {
      const proof = old === 0 || old === size ? [] : fork.proof(old, size);
      answers.push((await post(url, `old ${old}\n${proof.map((p) => `${p}\n`).join("")}\n${fork.checkpoint(size)}`)).status);
    }
    expect(answers).toEqual([422, 422, 422, 409, 409]);
    expect((await post(url, log.body(4, 8))).status).toBe(200);
  });

  it.each([
    ["GET on add-checkpoint", 405, "/add-checkpoint", "GET"],
    ["a path it does not serve", 404, "/add-checkpoint/x", "POST"],
    ["a monitor's path that is no origin hash", 404, "/abc/checkpoint", "GET"],
  ])("answers %s with %i", async (_what, status, path, method) => {
    const url = await start([log]);
    expect((await post(url, log.body(0), path, method)).status).toBe(status);
  });
});

describe("one request at a time per log", () => {
  it("cosigns exactly one of many concurrent requests from one old size, and answers the others 409", async () => {
    const big = new FakeLog("example.com/log").grow(40);
    const url = await start([big]);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(url, big.body(0, i + 1))));
    const cosigned = answers.filter((a) => a.status === 200);
    expect(cosigned).toHaveLength(1);
    const refused = answers.filter((a) => a.status === 409);
    expect(refused).toHaveLength(19);
    // Every 409 names the one size that was cosigned.
    const size = answers.indexOf(cosigned[0] as Answer) + 1;
    expect(new Set(refused.map((a) => a.body))).toEqual(new Set([`${size}\n`]));
  });

  it("cosigns concurrent requests for different logs, each from its own state", async () => {
    const logs = Array.from({ length: 8 }, (_, i) => new FakeLog(`example.com/log${i}`).grow(i + 1));
    const url = await start(logs);
    const answers = await Promise.all(logs.map((l) => post(url, l.body(0))));
    expect(answers.map((a) => a.status)).toEqual(logs.map(() => 200));
    logs.forEach((l, i) => expect(cosignedBy(l.checkpoint(), answers[i]?.body ?? "")).toHaveLength(1));
  });
});

describe("what the witness keeps", () => {
  it("answers after a restart on the same folder from what it cosigned before", async () => {
    const url = await start([log]);
    const key = opened?.service.verifierKey;
    expect((await post(url, log.body(0, 6))).status).toBe(200);
    await stop();
    const again = await start([log]);
    expect(opened?.service.verifierKey).toBe(key);
    expect(await post(again, log.body(0, 8))).toEqual({ status: 409, type: "text/x.tlog.size", body: "6\n" });
    expect((await post(again, fork.body(6, 6))).status).toBe(422);
    expect((await post(again, log.body(6, 8))).status).toBe(200);
  });

  it("writes one access line per request naming origin, old size, new size and outcome, and no secret", async () => {
    const url = await start([log]);
    await post(url, log.body(0, 5));
    await post(url, log.body(3, 8));
    await post(url, fork.body(5, 5));
    await post(url, "hello\n");
    // The line is written once the answer has gone out, which the client may see first.
    await vi.waitFor(() => expect(access).toHaveLength(4));
    expect(access.map(({ ms: _ms, ...e }) => e)).toEqual([
      { method: "POST", path: "/add-checkpoint", status: 200, outcome: "cosigned", origin: log.origin, old: 0, size: 5 },
      { method: "POST", path: "/add-checkpoint", status: 409, outcome: "old_size_mismatch", origin: log.origin, old: 3, size: 8 },
      { method: "POST", path: "/add-checkpoint", status: 422, outcome: "inconsistent", origin: log.origin, old: 5, size: 5 },
      { method: "POST", path: "/add-checkpoint", status: 400, outcome: "malformed_request" },
    ]);
    // PRIVATE+KEY+<name>+<key ID>+<base64>: the base64 may itself hold a "+" (or end in one).
    const secret = readFileSync(join(dir, KEY_FILE), "utf8").trim().split("+").slice(4).join("+");
    expect(secret.length).toBeGreaterThan(40);
    expect(JSON.stringify(access)).not.toContain(secret);
  });
});

/** A POST whose body is sent only in part, held open until `finish`. */
function heldPost(url: string, body: string): { req: ClientRequest; answer: Promise<Answer>; finish: () => void } {
  const bytes = Buffer.from(body);
  const req = request(`${url}/add-checkpoint`, { method: "POST", headers: { "content-length": String(bytes.length) } });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.on("data", (d: Buffer) => (text += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, type: res.headers["content-type"] ?? null, body: text }));
    });
    req.on("error", reject);
  });
  req.write(bytes.subarray(0, 10));
  return { req, answer, finish: () => req.end(bytes.subarray(10)) };
}

/** Waits until the witness has taken `n` requests in (their first bytes arrived). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 50));
}

describe("the witness's limits", () => {
  it("answers 503 with Retry-After, before reading its body, a request past the limit in flight", async () => {
    const url = await start([log], { maxInFlight: 1 });
    const held = heldPost(url, log.body(0, 5));
    await settle();
    const a = await fetch(`${url}/add-checkpoint`, { method: "POST", body: log.body(0, 6) });
    expect([a.status, a.headers.get("retry-after")]).toEqual([503, "1"]);
    held.finish();
    expect((await held.answer).status).toBe(200);
  });

  it("answers 503 to a request whose body does not arrive before its deadline, and cosigns nothing for it", async () => {
    const url = await start([log], { deadlineMs: 300 });
    const held = heldPost(url, log.body(0, 5));
    const a = await held.answer;
    expect([a.status, a.body]).toEqual([503, "the witness did not answer in time; retry\n"]);
    held.req.destroy();
    expect(await post(url, log.body(3, 6))).toMatchObject({ status: 409, body: "0\n" });
  });

  it("answers 408 and closes a connection whose headers do not arrive in time", async () => {
    const url = await start([log], { headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const { port } = new URL(url);
    const text = await new Promise<string>((resolve, reject) => {
      let got = "";
      const socket = connect(Number(port), "127.0.0.1", () => socket.write("POST /add-checkpoint HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
      socket.on("data", (d: Buffer) => (got += d.toString()));
      socket.on("close", () => resolve(got));
      socket.on("error", reject);
    });
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("refuses a body sent in chunks once it passes the cap (413)", async () => {
    const url = await start([log]);
    const a = await new Promise<number>((resolve, reject) => {
      const req = request(`${url}/add-checkpoint`, { method: "POST" });
      req.on("response", (res) => resolve(res.statusCode ?? 0));
      req.on("error", reject);
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      for (let sent = 0; sent <= WITNESS_CAPS.maxBodyBytes; sent += chunk.length) req.write(chunk);
    });
    expect(a).toBe(413);
  });

  it("finishes a request in flight when asked to stop, and takes no new one", async () => {
    const url = await start([log]);
    const held = heldPost(url, log.body(0, 5));
    await settle();
    const closing = server?.close(5000);
    held.finish();
    expect((await held.answer).status).toBe(200);
    await closing;
    await expect(fetch(`${url}/add-checkpoint`, { method: "POST", body: log.body(5, 6) })).rejects.toThrow();
    server = null;
  });
});
