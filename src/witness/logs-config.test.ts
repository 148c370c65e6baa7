import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { cosignerFromSeed } from "../tlog/index.js";
import { WitnessErrorCode } from "./errors.js";
import { collectLogs, LOGS_CAPS, logsFileLines, parseLogLine } from "./logs-config.js";
import { FakeLog, must } from "./test-support.js";

const a = new FakeLog("example.com/a");
const a2 = new FakeLog("example.com/a", { seed: "second key" });
const spaced = new FakeLog("example.com/log with spaces", { keyName: "example.com/spaced" });
const cosigner = must(cosignerFromSeed("witness.example/w1", new Uint8Array(32).fill(7)));

describe("a log line", () => {
  it.each([
    ["an origin and its key", a.line, a.origin],
    ["an origin with inner spaces (split at the last space)", spaced.line, spaced.origin],
  ])("takes %s", (_what, text, origin) => {
    const parsed = must(parseLogLine({ text, where: "--log" }));
    expect(parsed.origin).toBe(origin);
    expect(parsed.key).toBe(text.slice(text.lastIndexOf(" ") + 1));
  });

  it.each([
    ["no space", a.signer.verifierKey, "expected `<origin> <verifier key>`"],
    ["an empty origin", ` ${a.signer.verifierKey}`, "the origin is empty"],
    ["an origin ending in a space", `example.com/a  ${a.signer.verifierKey}`, "starts or ends with a space"],
    ["an origin with a control character", `example.com/\ta ${a.signer.verifierKey}`, "control character"],
    ["an origin over its cap", `${"o".repeat(LOGS_CAPS.maxOriginBytes + 1)} ${a.signer.verifierKey}`, "at most"],
    ["a key that does not parse", "example.com/a example.com/a+00000000+AAAA", "the verifier key does not parse"],
    ["a key whose key ID is not its own", `example.com/a ${a.signer.verifierKey.replace(/\+[0-9a-f]{8}\+/, "+00000000+")}`, "the verifier key does not parse"],
    ["a cosigner's key instead of a log's", `example.com/a ${cosigner.verifierKey}`, "Ed25519 note key"],
    ["a key followed by a carriage return", `${a.line}\r`, "the verifier key does not parse"],
  ])("refuses %s, saying where", (_what, text, why) => {
    const parsed = parseLogLine({ text, where: "logs.txt:4" });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error.code).toBe(WitnessErrorCode.BadLog);
    expect(parsed.error.message).toMatch(/^logs\.txt:4: /);
    expect(parsed.error.message).toContain(why);
  });
});

describe("the logs of a witness", () => {
  it("groups the keys of one origin, in the order given", () => {
    const logs = must(collectLogs([a.line, spaced.line, a2.line].map((text, i) => ({ text, where: `--log[${i}]` }))));
    expect(logs.map((l) => [l.origin, l.keys])).toEqual([
      [a.origin, [a.signer.verifierKey, a2.signer.verifierKey]],
      [spaced.origin, [spaced.signer.verifierKey]],
    ]);
  });

  it.each([
    ["the same key twice", [a.line, a.line], "given twice"],
    ["one line that does not parse among good ones", [a.line, "nonsense", spaced.line], "line 2"],
  ])("refuses %s", (_what, lines, why) => {
    const r = collectLogs(lines.map((text, i) => ({ text, where: `line ${i + 1}` })));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message).toContain(why);
  });

  it("reads a file's lines, skipping blank lines and # comments, each named by its line number", () => {
    const text = `# the logs\n\n${a.line}\n# another\n${spaced.line}\n`;
    const lines = must(logsFileLines(Buffer.from(text), "logs.txt"));
    expect(lines.map((l) => l.where)).toEqual(["logs.txt:3", "logs.txt:5"]);
    expect(must(collectLogs(lines)).map((l) => l.origin)).toEqual([a.origin, spaced.origin]);
  });

  it.each([
    ["a file over its cap", Buffer.alloc(LOGS_CAPS.maxFileBytes + 1, 0x23), "at most"],
    ["a file that is not UTF-8", Buffer.from([0x66, 0xff, 0x0a]), "UTF-8"],
  ])("refuses %s", (_what, bytes, why) => {
    const r = logsFileLines(bytes, "logs.txt");
    expect(r.ok).toBe(false);
    if (!r.ok) expect([r.error.code, r.error.message.includes(why)]).toEqual([WitnessErrorCode.BadLogsFile, true]);
  });

  it("refuses a whole file for its one bad line, naming that line", () => {
    const lines = must(logsFileLines(Buffer.from(`${a.line}\n${spaced.line}\nexample.com/c notakey\n`), "logs.txt"));
    const r = collectLogs(lines);
    expect(r.ok ? null : r.error.message).toMatch(/^logs\.txt:3: the verifier key does not parse/);
  });
});
