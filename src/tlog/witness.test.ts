import { Buffer } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { signCheckpoint } from "./checkpoint.js";
import { cosignerFromSeed } from "./cosignature.js";
import { EMPTY_ROOT, formatHash, leafHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { TlogErrorCode } from "./errors.js";
import { ed25519NoteVerifier, noteSignerFromSeed, parseVerifierKey } from "./keys.js";
import { openNote, signNote } from "./note.js";
import { proveConsistencySync, rootAtSync } from "./proof.js";
import type { SyncHashReader } from "./proof.js";
import { MerkleTree } from "./tree.js";
import { addCheckpoint, decideAddCheckpoint, parseAddCheckpointRequest, WITNESS_CAPS } from "./witness.js";
import type { AddCheckpointAnswer, WitnessedLog } from "./witness.js";
import { storedTree, toHex, utf8, value } from "./test-support.js";

// The sigsum log, its checkpoints and the requests of github.com/FiloSottile/litetlog
// cmd/litewitness/testdata/litewitness.txt, with the witness key of internal/witness/witness_test.go
// and the final root that test expects (commit 3195373f7620fde5e62977689fbaabd0e43e255d). The
// log's seed is the first 32 bytes of HKDF-SHA256 of the gentest seed b4e385f4…f0c4 with the salt
// "litewitness gentest", as cmd/litewitness/testdata/gentest/sigsum.go derives it (the next 32 are
// the witness seed below).
const ORIGIN = "sigsum.org/v1/tree/4d6d8825a6bb689d459628312889dfbb0bcd41b5211d9e1ce768b0ff0309e562";
const LOG_PUBLIC = Buffer.from("ffdc2d4d98e4124d3feaf788c0c2f9abfd796083d1f0495437f302ec79cf100f", "hex");
const LOG_SEED = Buffer.from("b530aa8b9dc78a551b183d23a2ac44cba31162cbcc23056fff1d062b3ae149ef", "hex");
const WITNESS_SEED = Buffer.from("31ffc2116ecbe003acaa800ab70757bd7d53206e3febef6a6d0796d95530b34f", "hex");
const CP1 = `${ORIGIN}\n1\nKgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— ${ORIGIN} UgIom7fPZTqpxWWhyjWduBvTvGVqsokMbqTArsQilegKoFBJQjUFAmQ0+YeSPM3wfUQMFSzVnnNuWRTYrajXpNUbIQY=\n`;
const CP3 = `${ORIGIN}\n3\nRcCI1Nk56ZcSmIEfIn0SleqtV7uvrlXNccFx595Iwl0=\n\n— ${ORIGIN} UgIom2VbtIcdFbwFAy1n7s6IkAxIY6J/GQOTuZF2ORV39d75cbAj2aQYwyJre36kezNobZs4SUUdrcawfAB8WVrx6go=\n`;
const CP5 = `${ORIGIN}\n5\nQrtXrQZCCvpIgsSmOsah7HdICzMLLyDfxToMql9WTjY=\n\n— ${ORIGIN} UgIomw/EOJmWi0i1FQsOj+etB7F8IccFam/jgd6wzRns4QPVmyEZtdvl1U2KEmLOZ/ASRcWJi0tW90dJWAShei7sDww=\n`;
const P = ["KgEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "KgIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="];
const SEQUENCE: [string, string, number, string | null][] = [
  ["cosigns the first checkpoint from old size 0", `old 0\n\n${CP1}`, 200, null],
  ["refuses a known key's bad signature", `old 1\n${P[0]}\n${P[1]}\n\n${CP3.replace("6go=\n", "6gx=\n")}`, 403, null],
  ["does not know another origin", `old 1\n${P[0]}\n${P[1]}\n\n${CP3.replaceAll("e562", "e563").replace("6go=\n", "6go=\n")}`, 404, null],
  ["refuses a missing consistency proof", `old 1\n\n${CP3}`, 422, null],
  ["refuses a wrong consistency proof", `old 1\n${P[0]}\nKgIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABA=\n\n${CP3}`, 422, null],
  ["cosigns size 3 with a good proof", `old 1\n${P[0]}\n${P[1]}\n\n${CP3}`, 200, null],
  ["answers 409 with the size it cosigned to an old size it did not", `old 1\n${P[0]}\n+fUDV+k970B4I3uKrqJM4aP1lloPZP8mvr2Z4wRw2LI=\nKgQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n${CP5}`, 409, "3\n"],
  ["cosigns size 5 from 3", `old 3\nKgIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nKgMAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nwgiIFdZfYNv6WU1OllBKsWnLYIS/DBMqt8Uh/S4OukE=\nKgQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n${CP5}`, 200, null],
  ["answers 409 with size 5 to a client that starts from 0", `old 0\n\n${CP5}`, 409, "5\n"],
];

const NOW = 1_700_000_000;

/** Every node of the tree of `leaves`, readable by (level, index). */
function treeOf(leaves: readonly Hash[]): { read: SyncHashReader } {
  const nodes = new Map<string, Hash>();
  const tree = new MerkleTree();
  for (const h of leaves) for (const n of tree.append(h).nodes) nodes.set(`${n.level}/${n.index}`, n.hash);
  return { read: (l, i) => nodes.get(`${l}/${i}`) as Hash };
}
const witness = () => ({ cosigners: [value(cosignerFromSeed("example.com/witness", WITNESS_SEED))], now: NOW });

/** A witness store of one log: it applies a 200's state only if the size is still the request's old size. */
function store(origin: string, verifier: ReturnType<typeof ed25519NoteVerifier>) {
  let state: WitnessedLog = { origin, verifiers: [value(verifier)], size: 0, root: EMPTY_ROOT };
  return {
    get: () => state,
    post(body: string | Uint8Array, now = NOW): AddCheckpointAnswer {
      const answer = addCheckpoint(typeof body === "string" ? utf8(body) : body, (o) => (o === state.origin ? state : undefined), { ...witness(), now });
      if (answer.status === 200) {
        const old = value(parseAddCheckpointRequest(typeof body === "string" ? utf8(body) : body)).oldSize;
        if (old === state.size) state = { ...state, size: answer.cosigned.size, root: answer.cosigned.root };
      }
      return answer;
    },
  };
}

describe("add-checkpoint, as litewitness is tested", () => {
  it("holds the sigsum log's key and reproduces its signed checkpoints byte for byte", () => {
    const log = value(noteSignerFromSeed(ORIGIN, LOG_SEED));
    expect(toHex(log.publicKey)).toBe(LOG_PUBLIC.toString("hex"));
    for (const cp of [CP1, CP3, CP5]) expect(value(signNote(cp.slice(0, cp.indexOf("\n\n") + 1), [log]))).toBe(cp);
  });

  it("answers each request of the sequence as the specification says", () => {
    const w = store(ORIGIN, ed25519NoteVerifier(ORIGIN, LOG_PUBLIC));
    const got = SEQUENCE.map(([, body]) => w.post(body));
    expect(got.map((a) => a.status)).toEqual(SEQUENCE.map(([, , status]) => status));
    got.forEach((a, i) => {
      const want = SEQUENCE[i]?.[3];
      if (want != null) expect([a.contentType, a.body]).toEqual(["text/x.tlog.size", want]);
    });
    expect(toHex(w.get().root)).toBe("42bb57ad06420afa4882c4a63ac6a1ec77480b330b2f20dfc53a0caa5f564e36");
    expect(w.get().size).toBe(5);
  });

  it("answers a cosignature line that verifies on the checkpoint with the witness's key", () => {
    const w = store(ORIGIN, ed25519NoteVerifier(ORIGIN, LOG_PUBLIC));
    const answer = w.post(`old 0\n\n${CP1}`);
    if (answer.status !== 200) throw new Error(`expected 200, got ${answer.status}`);
    expect(answer.body).toMatch(/^— example\.com\/witness [A-Za-z0-9+/]{102}==\n$/);
    const witnessKey = value(parseVerifierKey(witness().cosigners[0]?.verifierKey as string));
    expect(value(openNote(CP1 + answer.body, [witnessKey])).verified.map((s) => s.name)).toEqual(["example.com/witness"]);
    const monitored = value(openNote(answer.cosigned.checkpoint, [witnessKey, value(ed25519NoteVerifier(ORIGIN, LOG_PUBLIC))]));
    expect(monitored.verified.map((s) => s.name)).toEqual([ORIGIN, "example.com/witness"]);
  });

  it("cosigns a real checkpoint of the Go checksum database for a witness that trusts its key", () => {
    // github.com/FiloSottile/litetlog cmd/litewitness/testdata/sumdb.txt, same commit.
    const note =
      "go.sum database tree\n35225469\nvt5T6GaLCXvyHFl9VUvvItR43XZxfLgftEcTyO3eJCQ=\n\n— sum.golang.org Az3grpukl5AXaVfYkLiDGORx/DN2nlcS5kZHR5uYOBV2KA2HgXpD+gu9HHONebHLAyaKbbTM75QTtPydhKCExixSfwQ=\n";
    const sumdb: WitnessedLog = { origin: "go.sum database tree", verifiers: [value(parseVerifierKey("sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"))], size: 0, root: EMPTY_ROOT };
    const answer = addCheckpoint(utf8(`old 0\n\n${note}`), () => sumdb, witness());
    expect(answer.status).toBe(200);
    if (answer.status === 200) expect(answer.cosigned.size).toBe(35_225_469);
  });
});

describe("add-checkpoint, case by case", () => {
  const logSigner = value(noteSignerFromSeed("example.com/log", new Uint8Array(32).fill(7)));
  const { read } = storedTree(64);
  const rootAt = (n: number): Hash => value(rootAtSync(n, read));
  const cp = (size: number, root: Hash = rootAt(size), extensions: string[] = []) => value(signCheckpoint({ origin: "example.com/log", size, root, extensions }, [logSigner]));
  const proofLines = (m: number, n: number) => (m === 0 || m === n ? "" : value(proveConsistencySync(m, n, read)).map((h) => `${formatHash(h)}\n`).join(""));
  const at = (size: number): WitnessedLog => ({ origin: "example.com/log", verifiers: [logSigner.verifier], size, root: rootAt(size) });
  const post = (body: string, log: WitnessedLog = at(5)) => addCheckpoint(utf8(body), () => log, witness());

  it.each([
    ["cosigns a tree that grew, with its proof", () => post(`old 5\n${proofLines(5, 9)}\n${cp(9)}`), 200, null],
    ["cosigns the same checkpoint again", () => post(`old 5\n\n${cp(5)}`), 200, null],
    ["cosigns a checkpoint with extension lines", () => post(`old 5\n${proofLines(5, 9)}\n${cp(9, rootAt(9), ["ext"])}`), 200, null],
    ["cosigns a first checkpoint of size 0", () => post(`old 0\n\n${cp(0)}`, at(0)), 200, null],
    ["cosigns from size 0 without a proof", () => post(`old 0\n\n${cp(9)}`, at(0)), 200, null],
    ["does not know the origin", () => addCheckpoint(utf8(`old 5\n\n${cp(5)}`), () => undefined, witness()), 404, TlogErrorCode.UnknownLog],
    ["refuses a checkpoint signed only by an unknown key", () => post(`old 5\n\n${value(signCheckpoint({ origin: "example.com/log", size: 5, root: rootAt(5), extensions: [] }, [value(noteSignerFromSeed("example.com/log", new Uint8Array(32).fill(8)))]))}`), 403, TlogErrorCode.Unauthenticated],
    ["refuses a different root for the size it cosigned (a fork)", () => post(`old 5\n\n${cp(5, leafHash(utf8("fork")))}`), 422, TlogErrorCode.Inconsistent],
    ["refuses a proof between equal sizes", () => post(`old 5\n${formatHash(rootAt(5))}\n\n${cp(5)}`), 422, TlogErrorCode.Inconsistent],
    ["refuses a proof from size 0", () => post(`old 0\n${formatHash(rootAt(5))}\n\n${cp(9)}`, at(0)), 422, TlogErrorCode.Inconsistent],
    ["refuses a size-0 checkpoint without the empty root", () => post(`old 0\n\n${cp(0, leafHash(utf8("x")))}`, at(0)), 422, TlogErrorCode.Inconsistent],
    ["refuses a grown tree that forks from the one it cosigned", () => post(`old 5\n${proofLines(5, 9)}\n${cp(9, leafHash(utf8("fork")))}`), 422, TlogErrorCode.Inconsistent],
    ["answers 409 to an old size it did not cosign", () => post(`old 4\n${proofLines(4, 9)}\n${cp(9)}`), 409, TlogErrorCode.OldSizeMismatch],
    ["refuses an old size above the checkpoint's", () => post(`old 9\n\n${cp(5)}`), 400, TlogErrorCode.MalformedRequest],
    ["refuses an old size with a leading zero", () => post(`old 05\n\n${cp(5)}`), 400, TlogErrorCode.MalformedRequest],
    ["refuses a negative old size", () => post(`old -1\n\n${cp(5)}`), 400, TlogErrorCode.MalformedRequest],
    ["refuses a first line that is not the old size", () => post(`new 5\n\n${cp(5)}`), 400, TlogErrorCode.MalformedRequest],
    ["refuses a body without lines", () => post("old 5"), 400, TlogErrorCode.MalformedRequest],
    ["refuses a proof line that is not a hash", () => post(`old 5\nnot a hash\n\n${cp(9)}`), 400, TlogErrorCode.MalformedRequest],
    ["refuses 64 proof lines", () => post(`old 5\n${`${formatHash(EMPTY_ROOT)}\n`.repeat(64)}\n${cp(9)}`), 400, TlogErrorCode.MalformedRequest],
    ["refuses a checkpoint without the empty line before it", () => post(`old 5\n${cp(5)}`), 400, TlogErrorCode.MalformedRequest],
    ["refuses a body without a checkpoint", () => post("old 5\n\n"), 400, TlogErrorCode.MalformedRequest],
    ["refuses a checkpoint without signatures", () => post("old 5\n\nexample.com/log\n5\n"), 400, TlogErrorCode.MalformedNote],
    ["refuses a signed text that is not a checkpoint", () => post(`old 5\n\n${value(signNote("example.com/log\nfive\n", [logSigner]))}`), 400, TlogErrorCode.MalformedCheckpoint],
    ["refuses a body over its cap before reading it", () => post(`old 5\n\n${cp(5)}${"x".repeat(WITNESS_CAPS.maxBodyBytes)}`), 400, TlogErrorCode.RequestTooLarge],
  ] as const)("%s", (_what, run, status, code) => {
    const answer = run();
    expect([answer.status, answer.status === 200 ? null : answer.error.code]).toEqual([status, code]);
    expect(answer.body.endsWith("\n")).toBe(true);
  });

  it("accepts at most 63 proof lines, and a proof of 63 lines is only refused if it does not verify", () => {
    const answer = post(`old 5\n${`${formatHash(EMPTY_ROOT)}\n`.repeat(63)}\n${cp(9)}`);
    expect(answer.status).toBe(422);
  });

  it("refuses to decide without a key or with a time of 0", () => {
    const request = value(parseAddCheckpointRequest(utf8(`old 5\n\n${cp(5)}`)));
    expect(() => decideAddCheckpoint(request, at(5), { cosigners: [], now: NOW })).toThrow(RangeError);
    expect(() => decideAddCheckpoint(request, at(5), { ...witness(), now: 0 })).toThrow(RangeError);
  });

  it("never cosigns two roots for one size, whatever a log sends (property)", () => {
    // An honest tree and one that forks from it after leaf `forkAt`; requests pick either, any sizes.
    const honest = storedTree(40);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 39 }),
        fc.array(fc.record({ size: fc.integer({ min: 0, max: 40 }), forked: fc.boolean(), claimed: fc.option(fc.integer({ min: 0, max: 40 })) }), { maxLength: 12 }),
        (forkAt, requests) => {
          const forkedLeaves = honest.leaves.map((h, i) => (i >= forkAt ? leafHash(utf8(`fork ${i}`)) : h));
          const trees = [honest, treeOf(forkedLeaves)];
          const log: WitnessedLog[] = [{ origin: "example.com/log", verifiers: [logSigner.verifier], size: 0, root: EMPTY_ROOT }];
          const cosigned = new Map<number, string>();
          for (const r of requests) {
            const state = log[log.length - 1] as WitnessedLog;
            const t = trees[r.forked ? 1 : 0] as (typeof trees)[number];
            const old = Math.min(r.claimed ?? state.size, r.size);
            const proof = old === 0 || old === r.size ? "" : value(proveConsistencySync(old, r.size, t.read)).map((h) => `${formatHash(h)}\n`).join("");
            const root = value(rootAtSync(r.size, t.read));
            const answer = addCheckpoint(utf8(`old ${old}\n${proof}\n${cp(r.size, root)}`), () => state, witness());
            if (answer.status !== 200) continue;
            const seen = cosigned.get(answer.cosigned.size);
            expect(seen === undefined || seen === toHex(answer.cosigned.root)).toBe(true);
            cosigned.set(answer.cosigned.size, toHex(answer.cosigned.root));
            expect(answer.cosigned.size).toBeGreaterThanOrEqual(state.size);
            log.push({ ...state, size: answer.cosigned.size, root: answer.cosigned.root });
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

