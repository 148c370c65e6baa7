import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EMPTY_ROOT, formatHash } from "../tlog/index.js";
import { WitnessErrorCode } from "./errors.js";
import { encodeState, originHash, STATE_FORMAT, StateStore } from "./state-store.js";
import type { CosignedState } from "./state-store.js";
import { FakeLog, must } from "./test-support.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "witness-state-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const log = new FakeLog("example.com/log").grow(7);
const stateAt = (size: number, l: FakeLog = log): CosignedState => ({ origin: l.origin, size, root: l.root(size), checkpoint: l.checkpoint(size) });
const fileOf = (origin: string) => join(dir, `${originHash(origin)}.json`);

/** A gate a test opens when it chooses. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

describe("the state store", () => {
  it.each([
    ["a first state", [3]],
    ["a state written over another", [3, 7]],
    ["the same state twice", [5, 5]],
  ])("reads back %s after a restart, as written", async (_what, sizes) => {
    const store = must(StateStore.open(dir));
    for (const size of sizes) await store.update(log.origin, () => ({ value: null, next: stateAt(size) }));
    const reopened = must(StateStore.open(dir));
    const want = stateAt(sizes.at(-1) as number);
    const got = reopened.get(log.origin);
    expect(got === undefined ? null : encodeState(got)).toBe(encodeState(want));
    expect(reopened.getByHash(originHash(log.origin))?.checkpoint).toBe(want.checkpoint);
    expect(readFileSync(fileOf(log.origin), "utf8")).toBe(encodeState(want));
  });

  it("keeps each state file its owner's only and leaves no temporary file", async () => {
    const store = must(StateStore.open(dir));
    await store.update(log.origin, () => ({ value: null, next: stateAt(2) }));
    expect(statSync(fileOf(log.origin)).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual([`${originHash(log.origin)}.json`]);
  });

  it("knows no state for a log it never cosigned, and writes nothing for a step that returns none", async () => {
    const store = must(StateStore.open(dir));
    const seen = await store.update(log.origin, (current) => ({ value: current }));
    expect(seen).toBeUndefined();
    expect(readdirSync(dir)).toEqual([]);
  });

  it("removes what an interrupted write left (never renamed, so never answered) and keeps the state", async () => {
    const store = must(StateStore.open(dir));
    await store.update(log.origin, () => ({ value: null, next: stateAt(4) }));
    writeFileSync(`${fileOf(log.origin)}.tmp`, encodeState(stateAt(6)).slice(0, 40));
    const reopened = must(StateStore.open(dir));
    expect(reopened.get(log.origin)?.size).toBe(4);
    expect(readdirSync(dir)).toEqual([`${originHash(log.origin)}.json`]);
  });

  const good = JSON.parse(encodeState(stateAt(5))) as Record<string, unknown>;
  const other = new FakeLog("example.com/other").grow(5);
  it.each<[string, string | null]>([
    ["an empty file", ""],
    ["a file cut short", encodeState(stateAt(5)).slice(0, 60)],
    ["text that is not JSON", "size=5\n"],
    ["a JSON array", "[]"],
    ["another format", JSON.stringify({ ...good, format: "openfief-witness-state/v2" })],
    ["an unknown field", JSON.stringify({ ...good, note: "x" })],
    ["another log's origin than its name's", JSON.stringify({ ...good, origin: "example.com/other" })],
    ["a negative size", JSON.stringify({ ...good, size: -1 })],
    ["a size that is not an integer", JSON.stringify({ ...good, size: 4.5 })],
    ["a size past 2^53 - 1", JSON.stringify({ ...good, size: 2 ** 53 })],
    ["a root that is not base64", JSON.stringify({ ...good, root: "not a hash" })],
    ["a root that is not its checkpoint's", JSON.stringify({ ...good, root: formatHash(log.root(4)) })],
    ["a size that is not its checkpoint's", JSON.stringify({ ...good, size: 4 })],
    ["another log's checkpoint", JSON.stringify({ ...good, checkpoint: other.checkpoint(5), root: formatHash(other.root(5)) })],
    ["a checkpoint without signatures", JSON.stringify({ ...good, checkpoint: "example.com/log\n5\n" })],
    ["size 0 with a root other than the empty tree's", JSON.stringify({ ...good, size: 0, root: formatHash(log.root(1)) })],
    ["a folder in place of the file", null],
  ])("refuses to open on %s, naming the file, rather than forget what it cosigned", (_what, text) => {
    if (text === null) mkdirSync(fileOf(log.origin));
    else writeFileSync(fileOf(log.origin), text);
    const opened = StateStore.open(dir);
    expect(opened.ok).toBe(false);
    if (opened.ok) return;
    expect(opened.error.code).toBe(WitnessErrorCode.CorruptState);
    expect(opened.error.path).toBe(fileOf(log.origin));
    expect(opened.error.message).toContain(fileOf(log.origin));
    expect(opened.error.message.split("\n")).toHaveLength(1);
  });

  it("opens a size-0 state with the empty tree's root", () => {
    const empty = new FakeLog("example.com/log");
    writeFileSync(fileOf(log.origin), encodeState({ origin: log.origin, size: 0, root: EMPTY_ROOT, checkpoint: empty.checkpoint(0) }));
    expect(must(StateStore.open(dir)).get(log.origin)?.size).toBe(0);
  });

  it("names its format in every file, so a later one is refused rather than misread", async () => {
    const store = must(StateStore.open(dir));
    await store.update(log.origin, () => ({ value: null, next: stateAt(1) }));
    expect(JSON.parse(readFileSync(fileOf(log.origin), "utf8"))).toMatchObject({ format: STATE_FORMAT, origin: log.origin, size: 1 });
  });
});

describe("updates of the state store", () => {
  it("runs one log's updates one at a time, each seeing the state the one before it wrote", async () => {
    const store = must(StateStore.open(dir));
    const first = gate();
    const calls: string[] = [];
    const a = store.update(log.origin, async (current) => {
      calls.push(`a saw ${String(current?.size)}`);
      await first.wait;
      return { value: "a", next: stateAt(3) };
    });
    const b = store.update(log.origin, (current) => {
      calls.push(`b saw ${String(current?.size)}`);
      return { value: "b", next: stateAt(current === undefined ? 1 : current.size + 2) };
    });
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual(["a saw undefined"]);
    first.open();
    expect(await Promise.all([a, b])).toEqual(["a", "b"]);
    expect(calls).toEqual(["a saw undefined", "b saw 3"]);
    expect(must(StateStore.open(dir)).get(log.origin)?.size).toBe(5);
  });

  it("lets another log's update finish while one log's update waits", async () => {
    const store = must(StateStore.open(dir));
    const other = new FakeLog("example.com/other").grow(2);
    const held = gate();
    let aDone = false;
    const a = store.update(log.origin, async () => {
      await held.wait;
      return { value: null, next: stateAt(2) };
    }).then(() => (aDone = true));
    await store.update(other.origin, () => ({ value: null, next: stateAt(2, other) }));
    expect(aDone).toBe(false);
    expect(store.get(other.origin)?.size).toBe(2);
    held.open();
    await a;
    expect(store.get(log.origin)?.size).toBe(2);
  });

  it("runs the next update after one whose step threw", async () => {
    const store = must(StateStore.open(dir));
    const failed = store.update(log.origin, () => {
      throw new Error("no");
    });
    const next = store.update(log.origin, (current) => ({ value: current?.size ?? 0, next: stateAt(1) }));
    await expect(failed).rejects.toThrow("no");
    expect(await next).toBe(0);
  });

  it("does not run a step whose deadline passed while it waited, and writes nothing for it", async () => {
    const store = must(StateStore.open(dir));
    const held = gate();
    const a = store.update(log.origin, async () => {
      await held.wait;
      return { value: null };
    });
    const deadline = new AbortController();
    let ran = false;
    const b = store.update(log.origin, () => ((ran = true), { value: null, next: stateAt(6) }), deadline.signal);
    deadline.abort();
    held.open();
    await a;
    await expect(b).rejects.toThrow();
    expect(ran).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("rejects when the write fails, and keeps the state that is on disk", async () => {
    const store = must(StateStore.open(dir));
    await store.update(log.origin, () => ({ value: null, next: stateAt(2) }));
    // A folder where the temporary file goes: the write fails before anything is renamed.
    mkdirSync(`${fileOf(log.origin)}.tmp`);
    await expect(store.update(log.origin, () => ({ value: null, next: stateAt(6) }))).rejects.toThrow();
    expect(store.get(log.origin)?.size).toBe(2);
    rmSync(`${fileOf(log.origin)}.tmp`, { recursive: true });
    expect(await store.update(log.origin, (current) => ({ value: current?.size }))).toBe(2);
    expect(must(StateStore.open(dir)).get(log.origin)?.size).toBe(2);
  });
});
