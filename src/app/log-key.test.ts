import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseVerifierKey } from "../tlog/index.js";
import { AppError } from "./errors.js";
import { loadLogKey, LOG_KEY_ENV, newLogSignerKey } from "./log-key.js";

const dir = mkdtempSync(join(tmpdir(), "openfief-log-key-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refusal = (fn: () => unknown): { code: string; message: string } => {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("no refusal");
};

describe("the log's key", () => {
  it("is made in the data folder on first use, its owner's only, and read back the same after", () => {
    expect(refusal(() => loadLogKey({ dataDir: dir, create: false })).code).toBe("not_found");
    const made = loadLogKey({ dataDir: dir });
    expect(made.created).toBe(true);
    expect(statSync(made.path).mode & 0o777).toBe(0o600);
    expect(made.origin).toMatch(/^openfief\/log\/[0-9a-f]{16}$/);
    expect(parseVerifierKey(made.verifierKey).ok).toBe(true);
    const again = loadLogKey({ dataDir: dir });
    expect(again).toMatchObject({ created: false, verifierKey: made.verifierKey });
    expect(loadLogKey({ dataDir: dir, create: false }).verifierKey).toBe(made.verifierKey);
  });

  it("is read from the file named, or the environment's, before the data folder's", () => {
    const file = join(dir, "named");
    writeFileSync(file, `${newLogSignerKey("log.example.com/audit")}\n`, { mode: 0o600 });
    expect(loadLogKey({ file, dataDir: dir }).origin).toBe("log.example.com/audit");
    expect(loadLogKey({ env: { [LOG_KEY_ENV]: file }, dataDir: dir }).origin).toBe("log.example.com/audit");
  });

  it("refuses a key others may read, and a file that is no key, without repeating what it holds", () => {
    const open = join(dir, "open");
    writeFileSync(open, `${newLogSignerKey()}\n`);
    chmodSync(open, 0o644);
    expect(refusal(() => loadLogKey({ file: open }))).toMatchObject({ code: "bad_setting", message: expect.stringMatching(/may be read by others .* chmod 600/) });
    const bad = join(dir, "bad");
    const secret = "PRIVATE+KEY+x+00000000+AAAA";
    writeFileSync(bad, `${secret}\n`, { mode: 0o600 });
    const r = refusal(() => loadLogKey({ file: bad }));
    expect(r.code).toBe("bad_setting");
    expect(r.message).not.toContain("AAAA");
    expect(readFileSync(bad, "utf8")).toContain(secret);
  });
});
