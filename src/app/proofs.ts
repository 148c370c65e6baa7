/**
 * Proofs an auditor takes away, and the checks that need nothing but them and public keys
 * (docs/adr/0153, 0154): `prove` (a C2SP tlog-proof of one event against a signed, cosigned
 * checkpoint), `export` (a run of events with what ties them to one), their offline verification,
 * and `verify-log --checkpoint/--previous` (the log as it is now against checkpoints kept
 * elsewhere: a log rebuilt wholesale, its newest events deleted, or a fork are caught).
 */
import { Buffer } from "node:buffer";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { chainBytes } from "../events/index.js";
import type { EventLog, StoredCheckpoint } from "../events/index.js";
import {
  ExportReader, exportEntryLine, exportHeadLines, exportTail, formatHash, formatKeyId, formatProof, hashEquals, KeyType, leafHash,
  MerkleTree, NOTE_CAPS, openCheckpoint, parseCheckpoint, parseProof, parseVerifierKey, proveConsistency,
  proveInclusion, rightEdge, signatureProblem, verifyProof,
} from "../tlog/index.js";
import type { Checkpoint, ExportReport, Hash, NoteVerifier, ProofReport } from "../tlog/index.js";
import { AppError } from "./errors.js";
import { LOG_KEY_ENV, LOG_KEY_FILE, readLogKey } from "./log-key.js";
import { cosignedCheckpoints } from "./witness-states.js";

/** The key types a log's key may have: Ed25519 note signatures. */
export const LOG_KEY_TYPES: readonly KeyType[] = [KeyType.Ed25519];
/** The key types a witness's key may have: cosignature/v1, or a plain Ed25519 note key. */
export const WITNESS_KEY_TYPES: readonly KeyType[] = [KeyType.CosignatureV1, KeyType.Ed25519];

/**
 * The verifier of this log's own key, for checking what it hands out: the key file
 * `OPENFIEF_LOG_KEY_FILE` names, else the data folder's. Refuses (`bad_setting`) when there is none.
 */
export function logVerifier(dataDir: string | null, env: Readonly<Record<string, string | undefined>>): NoteVerifier {
  const named = env[LOG_KEY_ENV];
  const path = named !== undefined && named !== "" ? named : dataDir === null ? null : join(dataDir, LOG_KEY_FILE);
  if (path === null || !existsSync(path)) throw new AppError("bad_setting", `the log's key is not here: name its file with ${LOG_KEY_ENV}, or use the data folder \`openfief up\` runs with`);
  return readLogKey(path).signer.verifier;
}

/** Refuses (`usage`, exit 2) a path that is not a readable file. */
export function requireFile(path: string, flag: string): void {
  try {
    if (!statSync(path).isFile()) throw new Error("not a file");
  } catch {
    throw new AppError("usage", `${flag}: no such file ${JSON.stringify(path)}`, flag);
  }
}

/** A verifier key text is one short line; a file said to hold one is never read past this. */
const MAX_KEY_TEXT = 1024;

/**
 * A verifier key given on the command line: the key text itself, or a file holding it (one line).
 * `type` is the key type expected (0x01 for a log, 0x04 for a witness's cosignatures; a witness may
 * also sign plain Ed25519 notes). Refuses (`usage`, exit 2) anything else, in one line.
 */
export function readVerifierKey(arg: string, flag: string, types: readonly KeyType[]): NoteVerifier {
  let text = arg;
  const looksLikeKey = /^[^\s+]+\+[0-9a-f]{8}\+[A-Za-z0-9+/=]+$/.test(arg);
  if (!looksLikeKey) {
    let size: number;
    try {
      const st = statSync(arg);
      if (!st.isFile()) throw new Error("not a file");
      size = st.size;
    } catch {
      throw new AppError("usage", `${flag} is neither a verifier key (<name>+<key ID>+<base64>) nor a file holding one: ${JSON.stringify(arg.slice(0, 80))}`, flag);
    }
    if (size > MAX_KEY_TEXT) throw new AppError("usage", `${flag} ${arg} is not a verifier key file (over ${MAX_KEY_TEXT} bytes)`, flag);
    text = readFileSync(arg, "utf8").trim();
  }
  const v = parseVerifierKey(text);
  if (!v.ok) throw new AppError("usage", `${flag}: not a verifier key (<name>+<key ID>+<base64>): ${v.error.message}`, flag);
  if (!types.includes(v.value.type as KeyType)) {
    throw new AppError("usage", `${flag}: ${v.value.name}'s key is of type 0x0${v.value.type}, not ${types.map((t) => `0x0${t}`).join(" or ")} as ${flag === "--key" ? "a log's key" : "a witness's key"} is`, flag);
  }
  return v.value;
}

/** Reads a file that the command was given (capped first), refusing a missing one in one line. */
export function readInputFile(path: string, flag: string, cap: number): Buffer {
  requireFile(path, flag);
  const size = statSync(path).size;
  if (size > cap) throw new AppError("too_large", `${flag}: ${path} is over ${cap} bytes, more than any such file holds`, flag);
  return readFileSync(path);
}

const keyLabel = (v: NoteVerifier) => `${v.name}+${formatKeyId(v.keyId)}`;

/** The checkpoint that proves `seq`: the one covering it cosigned by the most witnesses, the newest of those. */
async function checkpointFor(store: EventLog, seq: number): Promise<{ checkpoint: StoredCheckpoint; note: string }> {
  const latest = await store.tree.latestCheckpoint();
  if (latest === null) throw new AppError("not_found", "the log has no signed checkpoint yet: `openfief up` signs one within seconds of the first event");
  if (seq > latest.size) throw new AppError("not_found", `event ${seq} is not covered by a signed checkpoint yet (the newest covers events 1 to ${latest.size}); the next one is signed within seconds while \`openfief up\` runs`, "seq");
  const cosigned = await cosignedCheckpoints(store);
  let best = { checkpoint: latest, note: cosigned.noteFor(latest), count: cosigned.countFor(latest.size) };
  for (const size of cosigned.sizes()) {
    if (size < seq || size === latest.size) continue;
    const c = await store.tree.checkpointAt(size);
    if (c === null) continue;
    const count = cosigned.countFor(size);
    if (count > best.count || (count === best.count && size > best.checkpoint.size)) best = { checkpoint: c, note: cosigned.noteFor(c), count };
  }
  return best;
}

/** What {@link proveEvent} made. */
export interface EventProof {
  readonly text: string;
  readonly seq: number;
  readonly size: number;
  readonly origin: string;
  /** The witnesses whose cosignatures the proof carries. */
  readonly cosigners: readonly string[];
}

/**
 * A self-contained proof of event `seq` (C2SP tlog-proof, the event's bytes in its `extra` line)
 * against a signed checkpoint that covers it, with the cosignatures kept for that checkpoint.
 * Checked against the log's own key before it is handed out.
 */
export async function proveEvent(store: EventLog, seq: number, logKey: NoteVerifier): Promise<EventProof> {
  const head = await store.head();
  if (seq < 1 || seq > head) throw new AppError("not_found", `the log has no event ${seq} (it holds events 1 to ${head})`, "seq");
  const { checkpoint, note } = await checkpointFor(store, seq);
  const entry = await store.tree.entry(seq);
  if (entry === null) throw new AppError("not_found", `the log has no event ${seq}`, "seq");
  const proof = await proveInclusion(seq - 1, checkpoint.size, store.tree.hashes);
  if (!proof.ok) throw new AppError("log_broken", `the tree over the log cannot prove event ${seq}: ${proof.error.message}`);
  const text = formatProof({ extra: entry, index: seq - 1, proof: proof.value, checkpoint: note });
  if (!text.ok) throw new AppError("internal", `the proof of event ${seq} cannot be written: ${text.error.message}`);
  // Fail closed: a proof that does not hold against the log's own key is never handed out.
  const check = verifyProof(parseProofOrThrow(text.value), logKey);
  if (!check.ok) throw new AppError("log_broken", `the proof of event ${seq} does not hold against the log's key: ${check.problems[0]?.message ?? "?"}; run \`openfief verify-log\``);
  const opened = openCheckpoint(note, [logKey]);
  const cosigners = opened.ok ? opened.value.note.unverified.map((s) => `${s.name}+${formatKeyId(s.keyId)}`) : [];
  return { text: text.value, seq, size: checkpoint.size, origin: opened.ok ? opened.value.checkpoint.origin : "", cosigners };
}

function parseProofOrThrow(text: string) {
  const p = parseProof(text);
  if (!p.ok) throw new AppError("internal", `the proof written does not parse: ${p.error.message}`);
  return p.value;
}

/** The event a leaf's bytes are (the hash chain's header and the event's data), when they read as one. */
export interface LeafEvent {
  readonly seq: number;
  readonly stream: string;
  readonly type: string;
  readonly time: string;
  readonly actor: string;
  readonly data: unknown;
}

/** Reads a leaf's bytes as an event: `JSON([prev, seq, stream, version, type, schema, time, actor, cause])\n<data>`. */
export function leafEvent(bytes: Uint8Array): LeafEvent | null {
  const text = Buffer.from(bytes).toString("utf8");
  const nl = text.indexOf("\n");
  if (nl < 0) return null;
  try {
    const head: unknown = JSON.parse(text.slice(0, nl));
    if (!Array.isArray(head) || head.length !== 9) return null;
    const [, seq, stream, , type, , time, actor] = head as unknown[];
    if (typeof seq !== "number" || typeof stream !== "string" || typeof type !== "string" || typeof time !== "string" || typeof actor !== "string") return null;
    return { seq, stream, type, time, actor, data: JSON.parse(text.slice(nl + 1)) as unknown };
  } catch {
    return null;
  }
}

/** What `verify-proof` found. */
export interface ProofVerdict extends ProofReport {
  /** The event the entry is, when it reads as one of this log's events. */
  readonly event: LeafEvent | null;
  readonly lines: readonly string[];
}

/** Checks a proof file offline: nothing but its bytes and the keys. A file that is not a proof is refused (`invalid_resource`). */
export function verifyProofFile(bytes: Uint8Array, logKey: NoteVerifier, witnesses: readonly NoteVerifier[]): ProofVerdict {
  const parsed = parseProof(bytes);
  if (!parsed.ok) throw new AppError(parsed.error.code === "proof_file_too_large" ? "too_large" : "invalid_resource", parsed.error.message, parsed.error.path);
  const report = verifyProof(parsed.value, logKey, witnesses);
  const event = report.entry === null ? null : leafEvent(report.entry);
  const problems = [...report.problems.map((p) => p.message)];
  // The log's leaves carry their seq: a leaf that says another than its place is not this log's.
  if (event !== null && event.seq !== report.index + 1) problems.push(`the entry says it is event ${event.seq}, but it is proved at index ${report.index} (event ${report.index + 1})`);
  return { ...report, ok: problems.length === 0, event, lines: problems };
}

/** Where an export is written: one line at a time (the caller adds the newline and handles back-pressure). */
export type LineSink = (line: string) => Promise<void> | void;

/** What {@link exportLog} wrote. */
export interface ExportSummary {
  readonly from: number;
  readonly to: number;
  readonly size: number;
  readonly cosigners: number;
}

/** The newest checkpoint and the run `since`..`until` it covers, or a refusal saying why not. */
async function exportRange(store: EventLog, since: number, until: number | null): Promise<number> {
  const latest = await store.tree.latestCheckpoint();
  if (latest === null) throw new AppError("not_found", "the log has no signed checkpoint yet: `openfief up` signs one within seconds of the first event");
  const to = until ?? latest.size;
  if (since < 1) throw new AppError("usage", "--since is a sequence number from 1", "since");
  if (to > latest.size) throw new AppError("not_found", `event ${to} is not covered by a signed checkpoint yet (the newest covers events 1 to ${latest.size})`, "until");
  if (since > to) throw new AppError("usage", `--since ${since} is after the last event exported (${to})`, "since");
  return to;
}

/** The stored hash of a node, or a refusal (`log_broken`). */
async function nodeOf(store: EventLog, level: number, index: number): Promise<Hash> {
  const h = await store.tree.hashes(level, index);
  if (h instanceof Uint8Array) return h;
  if (!h.ok) throw new AppError("log_broken", `the tree over the log has no node (${level}, ${index}): ${h.error.message}`);
  return h.value;
}

/** The consistency proof from `size` to `to` (none for equal sizes), or a refusal (`log_broken`). */
async function consistency(store: EventLog, size: number, to: number): Promise<readonly Hash[]> {
  if (size === to) return [];
  const p = await proveConsistency(size, to, store.tree.hashes);
  if (!p.ok) throw new AppError("log_broken", `the tree over the log cannot prove events up to ${size}: ${p.error.message}`);
  return p.value;
}

/**
 * Writes events `since` to `until` (default: the newest checkpoint's size) with what proves them:
 * the hashes left of the run, each event's bytes, the consistency proof from the run's end to a
 * signed checkpoint, and that checkpoint with its cosignatures (docs/adr/0154).
 */
export async function exportLog(store: EventLog, since: number, until: number | null, sink: LineSink): Promise<ExportSummary> {
  const to = await exportRange(store, since, until);
  const { checkpoint, note } = await checkpointFor(store, to);
  const left: Hash[] = [];
  for (const n of rightEdge(since - 1)) left.push(await nodeOf(store, n.level, n.index));
  for (const l of exportHeadLines({ start: since - 1, left })) await sink(l);
  for await (const page of store.rawPages({ afterSeq: since - 1, toSeq: to, pageSize: 512 })) {
    for (const row of page) {
      const line = exportEntryLine(chainBytes(row));
      if (!line.ok) throw new AppError("internal", `event ${row.seq} is over 65,535 bytes, more than an export holds`);
      await sink(line.value);
    }
  }
  const tail = exportTail(await consistency(store, to, checkpoint.size), note).split("\n");
  for (const l of tail.slice(0, -1)) await sink(l);
  const cosigners = (note.match(/\n\u2014 /g)?.length ?? 1) - 1;
  return { from: since, to, size: checkpoint.size, cosigners };
}

/** What `verify-export` found, and the events it read (handed to `onEvent` as they are read, unverified until the end). */
export interface ExportVerdict extends ExportReport {
  readonly lines: readonly string[];
}

/** Checks an export line by line; `onEntry` sees each entry as read (trust it only once the verdict is ok). */
export class ExportCheck {
  readonly #reader: ExportReader;
  readonly #problems: string[] = [];
  readonly #onEntry: ((e: LeafEvent | null, bytes: Uint8Array) => void) | undefined;
  /** The seq the next entry should be, once the `start` line is read. */
  #next: number | null = null;

  constructor(logKey: NoteVerifier, witnesses: readonly NoteVerifier[], onEntry?: (e: LeafEvent | null, bytes: Uint8Array) => void) {
    this.#reader = new ExportReader(logKey, witnesses);
    this.#onEntry = onEntry;
  }

  /** Takes one line (without its newline); refuses (`invalid_resource`) a file that is not an export. */
  line(text: string): void {
    const r = this.#reader.line(text);
    if (!r.ok) throw new AppError("invalid_resource", r.error.message, r.error.path);
    if (this.#next === null && text.startsWith("start ")) this.#next = Number(text.slice(6)) + 1;
    if (r.value === null) return;
    const e = leafEvent(r.value);
    const want = this.#next ?? 0;
    // The log's leaves carry their seq: one that says another than its place is not this log's.
    if (e !== null && e.seq !== want && this.#problems.length < 16) this.#problems.push(`the export's entry for event ${want} says it is event ${e.seq}`);
    this.#next = want + 1;
    this.#onEntry?.(e, r.value);
  }

  finish(): ExportVerdict {
    const r = this.#reader.finish();
    if (!r.ok) throw new AppError("invalid_resource", r.error.message, r.error.path);
    const lines = [...r.value.problems.map((p) => p.message), ...this.#problems];
    return { ...r.value, ok: lines.length === 0, lines };
  }
}

/** One finding of {@link verifyLogAgainst}. */
export interface CheckpointFinding {
  /** `checkpoint` or `previous`. */
  readonly which: "checkpoint" | "previous";
  readonly size: number;
  readonly ok: boolean;
  /** One line each: what does not hold. */
  readonly problems: readonly string[];
}

/** What `verify-log --checkpoint [--previous]` found. */
export interface LogAgainstCheckpoints {
  readonly ok: boolean;
  readonly head: number;
  readonly findings: readonly CheckpointFinding[];
  /** Two checkpoints of one size with different roots, both signed by the log's key. */
  readonly fork: boolean;
  readonly lines: readonly string[];
}

/** A checkpoint file opened against the log's key; a file that is not a signed checkpoint is refused (exit 2). */
export function readCheckpointFile(path: string, flag: string, logKey: NoteVerifier): { checkpoint: Checkpoint; signed: boolean; problem: string | null } {
  const bytes = readInputFile(path, flag, NOTE_CAPS.maxBytes);
  const opened = openCheckpoint(bytes, [logKey]);
  if (opened.ok) return { checkpoint: opened.value.checkpoint, signed: true, problem: null };
  const text = bytes.toString("utf8");
  const at = text.lastIndexOf("\n\n");
  const parsed = at < 0 ? null : parseCheckpoint(text.slice(0, at + 1));
  if (parsed === null || !parsed.ok) throw new AppError("invalid_resource", `${flag}: ${path} is not a signed checkpoint (C2SP tlog-checkpoint in a signed note)`, flag);
  return { checkpoint: parsed.value, signed: false, problem: `${flag} ${path}: ${signatureProblem(opened.error, logKey)}` };
}

/** A checkpoint file given to `verify-log`, opened. */
type GivenCheckpoint = { which: "checkpoint" | "previous"; path: string } & ReturnType<typeof readCheckpointFile>;

/** The roots of the tree computed afresh from the events themselves, at each of `sizes` the log reaches. */
async function computedRoots(store: EventLog, sizes: ReadonlySet<number>): Promise<Map<number, Hash>> {
  const roots = new Map<number, Hash>();
  if (sizes.size === 0) return roots;
  const tree = new MerkleTree();
  for await (const page of store.rawPages({ afterSeq: 0, toSeq: Math.max(...sizes), pageSize: 4096 })) {
    for (const row of page) {
      tree.append(leafHash(chainBytes(row)));
      if (sizes.has(tree.size)) roots.set(tree.size, tree.root());
    }
  }
  return roots;
}

/** What does not hold of one checkpoint against the log now, one line each. */
async function checkpointProblems(store: EventLog, f: GivenCheckpoint, head: number, computed: Hash | undefined, logKey: NoteVerifier): Promise<string[]> {
  const problems: string[] = f.problem === null ? [] : [f.problem];
  const flag = f.which === "checkpoint" ? "--checkpoint" : "--previous";
  const { size, root, origin } = f.checkpoint;
  if (origin !== logKey.name) problems.push(`${flag}: the checkpoint is of the log ${JSON.stringify(origin)}, not of ${JSON.stringify(logKey.name)}`);
  if (size > head) return [...problems, `${flag}: the checkpoint covers ${size} events but the log holds ${head}: the newest ${size - head} were deleted (or this is another log)`];
  if (computed === undefined) return problems;
  if (!hashEquals(computed, root)) {
    problems.push(`${flag}: the log's first ${size} events do not have the checkpoint's root: the log was rewritten (events changed, removed or inserted before event ${size + 1}), even if its hash chain holds`);
  }
  const stored = (await store.tree.size()) >= size ? await store.tree.root(size).catch(() => null) : null;
  if (stored !== null && !hashEquals(stored, computed)) problems.push(`${flag}: the tree stored beside the log does not match its events at size ${size}`);
  return problems;
}

/** What the two checkpoints say of each other: a fork, an order mixed up, a log that does not extend the older. */
function pairLines(files: readonly GivenCheckpoint[], findings: readonly CheckpointFinding[], logKey: NoteVerifier): { fork: boolean; first: string[]; last: string[] } {
  const [a, b] = files;
  if (a === undefined || b === undefined) return { fork: false, first: [], last: [] };
  if (a.signed && b.signed && a.checkpoint.size === b.checkpoint.size && !hashEquals(a.checkpoint.root, b.checkpoint.root)) {
    return { fork: true, first: [`fork: two checkpoints of size ${a.checkpoint.size} signed by ${keyLabel(logKey)} with different roots (${formatHash(a.checkpoint.root)} and ${formatHash(b.checkpoint.root)}): the log showed two histories`], last: [] };
  }
  if (b.checkpoint.size > a.checkpoint.size) return { fork: false, first: [], last: [`--previous covers ${b.checkpoint.size} events, more than --checkpoint's ${a.checkpoint.size}: give the older checkpoint as --previous`] };
  const [now, prev] = findings;
  const extends_ = prev === undefined || prev.ok || now?.ok !== true;
  return { fork: false, first: [], last: extends_ ? [] : [`the current log does not extend the previous checkpoint of size ${prev.size}`] };
}

/**
 * The log as it is now against checkpoints kept elsewhere: the tree is computed afresh from the
 * events themselves (not from the stored tiles, which whoever rewrote the log could rebuild too),
 * and its root at each checkpoint's size must be the checkpoint's. The stored tree is compared
 * with it as well.
 */
export async function verifyLogAgainst(store: EventLog, given: readonly { which: "checkpoint" | "previous"; path: string }[], logKey: NoteVerifier): Promise<LogAgainstCheckpoints> {
  const files: GivenCheckpoint[] = given.map((g) => ({ ...g, ...readCheckpointFile(g.path, g.which === "checkpoint" ? "--checkpoint" : "--previous", logKey) }));
  const head = await store.head();
  const roots = await computedRoots(store, new Set(files.map((f) => f.checkpoint.size).filter((s) => s <= head)));
  const findings: CheckpointFinding[] = [];
  for (const f of files) {
    const problems = await checkpointProblems(store, f, head, roots.get(f.checkpoint.size), logKey);
    findings.push({ which: f.which, size: f.checkpoint.size, ok: problems.length === 0, problems });
  }
  const pair = pairLines(files, findings, logKey);
  const lines = [...pair.first, ...findings.flatMap((f) => f.problems), ...pair.last];
  return { ok: lines.length === 0, head, findings, fork: pair.fork, lines };
}
