import { Buffer } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { signCheckpoint } from "./checkpoint.js";
import { cosignerFromSeed } from "./cosignature.js";
import { TlogErrorCode } from "./errors.js";
import { formatHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { noteSignerFromSeed, parseVerifierKey } from "./keys.js";
import { proveConsistencySync, proveInclusionSync, rootAtSync } from "./proof.js";
import { formatProof, MAX_PROOF_FILE_BYTES, parseProof, PROOF_HEADER, verifyProof } from "./proof-file.js";
import type { ProofFile } from "./proof-file.js";
import { ExportReader, exportEntryLine, exportHeadLines, exportTail } from "./export-file.js";
import { rightEdge } from "./tree.js";
import { storedTree, utf8, value } from "./test-support.js";

const ORIGIN = "example.org/log";
const seed = (n: number) => new Uint8Array(32).fill(n);
const log = value(noteSignerFromSeed(ORIGIN, seed(1)));
const w1 = value(cosignerFromSeed("w1.example", seed(2)));
const w2 = value(cosignerFromSeed("w2.example", seed(3)));
const other = value(noteSignerFromSeed(ORIGIN, seed(9)));
const N = 70;
const stored = storedTree(N);
const entry = (i: number) => utf8(`leaf ${i}`);

/** The log's checkpoint at `size`, cosigned by the witnesses at a fixed time. */
function checkpointAt(size: number, signers = [log, w1.at(1_700_000_000), w2.at(1_700_000_001)]): string {
  return value(signCheckpoint({ origin: ORIGIN, size, root: value(rootAtSync(size, stored.read)), extensions: [] }, signers));
}

function proofFile(index: number, size: number): ProofFile {
  return { extra: entry(index), index, proof: value(proveInclusionSync(index, size, stored.read)), checkpoint: checkpointAt(size) };
}

const flip = (b: Uint8Array, bit: number): Uint8Array => {
  const c = Uint8Array.from(b);
  const at = Math.floor(bit / 8) % c.length;
  c[at] = (c[at] as number) ^ (1 << (bit % 8));
  return c;
};

describe("tlog-proof files", () => {
  it("write the C2SP layout: header, extra, index, hashes, empty line, checkpoint", () => {
    const text = value(formatProof(proofFile(5, 9)));
    const lines = text.split("\n");
    expect(lines[0]).toBe(PROOF_HEADER);
    expect(lines[1]).toBe(`extra ${Buffer.from("leaf 5").toString("base64")}`);
    expect(lines[2]).toBe("index 5");
    expect(lines.slice(3, 7).every((l) => l.length === 44)).toBe(true);
    expect(lines[7]).toBe("");
    expect(text.endsWith(checkpointAt(9))).toBe(true);
    expect(value(formatProof(value(parseProof(text))))).toBe(text);
  });

  it("verify for every index and size, with the log's key and the witnesses asked for", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: N }).chain((n) => fc.tuple(fc.integer({ min: 0, max: n - 1 }), fc.constant(n))), ([i, n]) => {
      const r = verifyProof(value(parseProof(value(formatProof(proofFile(i, n))))), log.verifier, [w1.verifier, w2.verifier]);
      expect(r.problems).toEqual([]);
      expect(r.ok).toBe(true);
      expect(r.checkpoint?.size).toBe(n);
      expect(r.witnesses).toEqual([{ witness: `w1.example+${w1.verifierKey.split("+")[1]}`, cosigned: true, timestamp: 1_700_000_000 }, { witness: expect.stringMatching(/^w2\.example\+/), cosigned: true, timestamp: 1_700_000_001 }]);
    }));
  });

  it("fail when any bit of the proof, the root, a signature, the entry or the index changes", () => {
    fc.assert(fc.property(fc.integer({ min: 2, max: N }).chain((n) => fc.tuple(fc.integer({ min: 0, max: n - 1 }), fc.constant(n))), fc.nat(), fc.constantFrom("proof", "root", "log signature", "witness signature", "entry", "index"), ([i, n], bit, what) => {
      const p = proofFile(i, n);
      let bad: ProofFile;
      if (what === "proof") {
        if (p.proof.length === 0) return;
        const k = bit % p.proof.length;
        bad = { ...p, proof: p.proof.map((h, j) => (j === k ? (flip(h, bit >> 6) as Hash) : h)) };
      } else if (what === "root") {
        const [origin, size, root, ...rest] = p.checkpoint.split("\n");
        bad = { ...p, checkpoint: [origin, size, formatHash(flip(Buffer.from(root as string, "base64"), bit) as Hash), ...rest].join("\n") };
      } else if (what === "log signature" || what === "witness signature") {
        const lines = p.checkpoint.split("\n");
        const at = lines.findIndex((l) => l.startsWith(`— ${what === "log signature" ? ORIGIN : "w1.example"} `));
        const [dash, name, b64] = (lines[at] as string).split(" ");
        const raw = Buffer.from(b64 as string, "base64");
        lines[at] = `${dash} ${name} ${Buffer.from(flip(raw.subarray(4), bit)).length === 0 ? "" : Buffer.concat([raw.subarray(0, 4), flip(raw.subarray(4), bit)]).toString("base64")}`;
        bad = { ...p, checkpoint: lines.join("\n") };
      } else if (what === "entry") bad = { ...p, extra: flip(p.extra as Uint8Array, bit) };
      else bad = { ...p, index: p.index ^ (1 << (bit % 7)) };
      const parsed = parseProof(value(formatProof(bad)));
      if (!parsed.ok) return; // a file that no longer parses fails too
      const r = verifyProof(parsed.value, log.verifier, [w1.verifier, w2.verifier]);
      expect(r.ok).toBe(false);
      expect(r.problems.length).toBeGreaterThan(0);
    }));
  });

  it("report each problem on its own: another log's key, a witness that did not cosign, a tampered entry", () => {
    const p = { ...proofFile(3, 10), checkpoint: checkpointAt(10, [log, w1.at(5)]) };
    const r = verifyProof({ ...p, extra: utf8("leaf 4") }, other.verifier, [w1.verifier, w2.verifier]);
    expect(r.problems.map((x) => x.message)).toEqual([
      expect.stringMatching(/^the checkpoint is not signed by the log's key example\.org\/log\+[0-9a-f]{8}$/),
      expect.stringMatching(/^witness w2\.example\+[0-9a-f]{8} did not cosign the checkpoint$/),
      "the entry is not proved at index 3 of the checkpoint: the proof leads to another root",
    ]);
  });

  it("refuse an index past the checkpoint and a file without its entry", () => {
    expect(verifyProof({ ...proofFile(3, 10), index: 10 }, log.verifier).problems[0]?.message).toBe("entry 10 is not in the checkpointed tree of 10 entries");
    expect(verifyProof({ ...proofFile(3, 10), extra: null }, log.verifier).problems[0]?.code).toBe(TlogErrorCode.MalformedProofFile);
  });

  it("refuse a file over the cap before reading it, and garbage, with stable codes", () => {
    expect(parseProof(new Uint8Array(MAX_PROOF_FILE_BYTES + 1)).ok).toBe(false);
    expect((parseProof(new Uint8Array(MAX_PROOF_FILE_BYTES + 1)) as { error: { code: string } }).error.code).toBe(TlogErrorCode.ProofFileTooLarge);
    for (const garbage of ["", "hello\n", `${PROOF_HEADER}\nindex 01\n\nx\n`, `${PROOF_HEADER}\nindex 1\nnot-a-hash\n\nx\n`, `${PROOF_HEADER}\nextra !!\nindex 1\n\nx\n`, `${PROOF_HEADER}\nindex 1\n\n`]) {
      const r = parseProof(garbage);
      expect(r.ok, garbage).toBe(false);
    }
    expect(parseProof(Buffer.from([0xff, 0xfe, 0x0a, 0x0a])).ok).toBe(false);
    expect(value(parseVerifierKey(log.verifierKey)).keyId).toBe(log.keyId);
  });
});

/** The export of entries [start, end) against the checkpoint at `size`, as lines. */
function exportLines(start: number, end: number, size: number, note = checkpointAt(size)): string[] {
  const left = rightEdge(start).map((n) => stored.read(n.level, n.index) as Hash);
  const entries = Array.from({ length: end - start }, (_, k) => value(exportEntryLine(entry(start + k))));
  const proof = end === 0 || end === size ? [] : value(proveConsistencySync(end, size, stored.read));
  return [...exportHeadLines({ start, left }), ...entries, ...exportTail(proof, note).split("\n")].slice(0, -1);
}

function readExport(lines: readonly string[]) {
  const reader = new ExportReader(log.verifier, [w1.verifier]);
  const entries: string[] = [];
  for (const l of lines) {
    const r = reader.line(l);
    if (!r.ok) return r;
    if (r.value !== null) entries.push(Buffer.from(r.value).toString());
  }
  const done = reader.finish();
  return done.ok ? { ...done, entries } : done;
}

const ranges = fc.integer({ min: 1, max: N }).chain((size) => fc.integer({ min: 1, max: size }).chain((end) => fc.tuple(fc.integer({ min: 0, max: end - 1 }), fc.constant(end), fc.constant(size))));

describe("log exports", () => {
  it("verify every run of entries against every later checkpoint, in one pass", () => {
    fc.assert(fc.property(ranges, ([start, end, size]) => {
      const r = readExport(exportLines(start, end, size));
      if (!r.ok) throw new Error(r.error.message);
      expect(r.value.problems).toEqual([]);
      expect(r.value).toMatchObject({ ok: true, start, end });
      expect(r.entries).toEqual(Array.from({ length: end - start }, (_, k) => `leaf ${start + k}`));
    }));
  });

  it("fail when an entry, a left hash, a proof hash or the root changes, or an entry is left out", () => {
    fc.assert(fc.property(ranges, fc.nat(), ([start, end, size], bit) => {
      const lines = exportLines(start, end, size);
      const candidates = lines.map((l, i) => [l, i] as const).filter(([l]) => /^(entry|left|proof) /.test(l));
      const cpAt = lines.indexOf("") + 1;
      const targets = [...candidates.map(([, i]) => i), cpAt + 2];
      const at = targets[bit % targets.length] as number;
      const line = lines[at] as string;
      const [word, b64] = at === cpAt + 2 ? [null, line] : line.split(" ");
      const raw = Buffer.from(b64 as string, "base64");
      const changed = raw.length === 0 ? Buffer.from("x") : Buffer.from(flip(raw, bit >> 3));
      const bad = [...lines];
      bad[at] = `${word === null ? "" : `${word} `}${changed.toString("base64")}`;
      const r = readExport(bad);
      expect(r.ok && r.value.ok).toBe(false);
      if (end > start) {
        const dropped = lines.filter((_, i) => i !== lines.findIndex((l) => l.startsWith("entry ")));
        const d = readExport(dropped);
        expect(d.ok && d.value.ok).toBe(false);
      }
    }), { numRuns: 200 });
  });

  it("say the export runs past its checkpoint, and refuse a truncated or foreign file", () => {
    const lines = exportLines(2, 9, 9);
    const past = [...lines.slice(0, lines.indexOf("")), value(exportEntryLine(utf8("extra"))), ...lines.slice(lines.indexOf(""))];
    const r = readExport(past);
    expect(r.ok && r.value.problems.map((p) => p.message)).toEqual(["the export runs to entry 9, past the checkpoint's 9 entries"]);
    expect(readExport(lines.slice(0, 5)).ok).toBe(false);
    const none = readExport(exportLines(3, 3, 9));
    expect(none.ok && none.value.problems.map((p) => p.message)).toEqual(["the export holds no entries: it proves nothing"]);
    expect(readExport(["hello"]).ok).toBe(false);
    expect(readExport([lines[0] as string, "start 2", "entry AAAA"]).ok).toBe(false); // no left hashes for start 2
  });
});
