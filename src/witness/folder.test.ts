import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseVerifierKey } from "../tlog/index.js";
import { WitnessErrorCode } from "./errors.js";
import { checkWitnessName, defaultWitnessName, KEY_FILE, LOCK_FILE, lockWitnessFolder, openWitnessFolder, STATE_DIR } from "./folder.js";
import { must } from "./test-support.js";

let root: string;
let dir: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "witness-folder-"));
  dir = join(root, "data");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const mode = (p: string) => statSync(p).mode & 0o777;

describe("the witness's data folder", () => {
  it("is made its owner's only, with a key only its owner may read, on first open", () => {
    const opened = must(openWitnessFolder(dir, "witness.example/w1", { lock: false }));
    expect([mode(dir), mode(join(dir, STATE_DIR)), mode(join(dir, KEY_FILE))]).toEqual([0o700, 0o700, 0o600]);
    expect(opened.created).toBe(true);
    expect(opened.notes).toEqual([`made a new witness key in ${join(dir, KEY_FILE)}`]);
    const verifier = must(parseVerifierKey(opened.signer.verifierKey));
    expect([verifier.name, verifier.type]).toEqual(["witness.example/w1", 0x04]);
  });

  it("keeps its key: the second open has the same verifier key, and makes none", () => {
    const first = must(openWitnessFolder(dir, "witness.example/w1", { lock: false }));
    const second = must(openWitnessFolder(dir, undefined, { lock: false }));
    expect(second.signer.verifierKey).toBe(first.signer.verifierKey);
    expect([second.created, second.notes]).toEqual([false, []]);
  });

  it("tightens a folder others could enter, and says so", () => {
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const opened = must(openWitnessFolder(dir, "w", { lock: false }));
    expect(mode(dir)).toBe(0o700);
    expect(opened.notes[0]).toBe(`made ${dir} private to its owner (it was 0755)`);
  });

  it("never writes the key into a note or an error", () => {
    must(openWitnessFolder(dir, "w", { lock: false }));
    const secret = readFileSync(join(dir, KEY_FILE), "utf8").trim();
    writeFileSync(join(dir, KEY_FILE), `${secret}x\n`, { mode: 0o600 });
    const r = openWitnessFolder(dir, undefined, { lock: false });
    expect(r.ok ? "" : r.error.message).toContain("is not a witness key");
    expect(JSON.stringify(r)).not.toContain(secret.slice(20));
  });

  it.each<[string, (d: string) => void, string, string]>([
    ["a key others may read", (d) => chmodSync(join(d, KEY_FILE), 0o644), WitnessErrorCode.BadKeyFile, "chmod 600"],
    ["a key file that is not a key", (d) => writeFileSync(join(d, KEY_FILE), "hello\n"), WitnessErrorCode.BadKeyFile, "is not a witness key"],
    ["a note signing key instead of a cosigner key", (d) => writeFileSync(join(d, KEY_FILE), "PRIVATE+KEY+w+00000000+AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"), WitnessErrorCode.BadKeyFile, "is not a witness key"],
    ["a key whose state folder is gone", (d) => rmSync(join(d, STATE_DIR), { recursive: true }), WitnessErrorCode.CorruptState, "refuses to start"],
  ])("refuses %s", (_what, spoil, code, why) => {
    must(openWitnessFolder(dir, "w", { lock: false }));
    spoil(dir);
    const r = openWitnessFolder(dir, undefined, { lock: false });
    expect(r.ok ? null : [r.error.code, r.error.message.includes(why)]).toEqual([code, true]);
  });

  it("refuses another name than its key's: a witness keeps its name", () => {
    must(openWitnessFolder(dir, "witness.example/w1", { lock: false }));
    const r = openWitnessFolder(dir, "witness.example/w2", { lock: false });
    expect(r.ok ? null : r.error.code).toBe(WitnessErrorCode.NameMismatch);
  });

  it("refuses a file where the folder should be", () => {
    writeFileSync(dir, "");
    const r = openWitnessFolder(dir, "w", { lock: false });
    expect(r.ok ? null : r.error.code).toBe(WitnessErrorCode.BadDataFolder);
  });
});

describe("witness names", () => {
  it.each([
    ["witness.example.com/w1", true],
    ["w", true],
    ["", false],
    ["two words", false],
    ["a+b", false],
    ["tab\there", false],
  ])("%j is %s as a name", (name, good) => {
    expect(checkWitnessName(name).ok).toBe(good);
  });

  it.each([
    ["Build-Host", "build-host/witness"],
    ["bad host", null],
    ["", null],
  ])("makes a default name of the host name %j: %j", (host, want) => {
    expect(defaultWitnessName(host)).toBe(want);
  });

  it("defaults to this host's name when none is given", () => {
    expect(must(openWitnessFolder(dir, undefined, { lock: false })).signer.name).toBe(defaultWitnessName(hostname()));
  });
});

describe("the folder's lock", () => {
  it("refuses a second holder while the first holds it, and lets it go when released", () => {
    mkdirSync(dir);
    const first = must(lockWitnessFolder(dir));
    const second = lockWitnessFolder(dir);
    expect(second.ok ? null : second.error.code).toBe(WitnessErrorCode.FolderInUse);
    expect(second.ok ? "" : second.error.message).toContain(`pid ${process.pid}`);
    first.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    must(lockWitnessFolder(dir)).release();
  });

  it("takes over a lock left by a process that is gone (killed outright)", () => {
    mkdirSync(dir);
    const gone = spawnSync(process.execPath, ["-e", ""]).pid as number;
    writeFileSync(join(dir, LOCK_FILE), `${JSON.stringify({ pid: gone, host: hostname(), since: "2026-01-01T00:00:00.000Z" })}\n`);
    const lock = must(lockWitnessFolder(dir));
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8"))).toMatchObject({ pid: process.pid });
    lock.release();
  });

  it("is taken before the folder is opened, and released when opening fails", () => {
    must(openWitnessFolder(dir, "w", { lock: false }));
    rmSync(join(dir, STATE_DIR), { recursive: true });
    expect(openWitnessFolder(dir, undefined, { lock: true }).ok).toBe(false);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });
});
