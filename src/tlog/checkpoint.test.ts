import { describe, expect, it } from "vitest";
import { EMPTY_ROOT, formatHash, leafHash } from "./hash.js";
import { TlogErrorCode } from "./errors.js";
import { formatCheckpoint, openCheckpoint, parseCheckpoint, parseDecimalSize, signCheckpoint } from "./checkpoint.js";
import { noteSignerFromSeed, parseVerifierKey } from "./keys.js";
import { toHex, utf8, value } from "./test-support.js";

const ROOT = "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=";

describe("checkpoint text", () => {
  it("writes and reads the Go checksum database's tree note", () => {
    // golang.org/x/mod sumdb/tlog note_test.go TestFormatTree (github.com/golang/mod, commit fe2ec04f7c3c3aa6fad97631aafcff6e49e2d1db).
    const c = { origin: "go.sum database tree", size: 123_456_789_012, root: leafHash(utf8("hello world")), extensions: [] };
    const golden = `go.sum database tree\n123456789012\n${ROOT}\n`;
    expect(value(formatCheckpoint(c))).toBe(golden);
    const parsed = value(parseCheckpoint(golden));
    expect({ ...parsed, root: toHex(parsed.root) }).toEqual({ ...c, root: toHex(c.root) });
  });

  it("reads the example of the tlog-checkpoint specification, and extension lines", () => {
    const c = value(parseCheckpoint("example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"));
    expect([c.origin, c.size, formatHash(c.root), c.extensions]).toEqual(["example.com/behind-the-sofa", 20_852_163, "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", []]);
    expect(value(parseCheckpoint(`log\n3\n${ROOT}\nJOE\nlots of lines\n`)).extensions).toEqual(["JOE", "lots of lines"]);
    expect(value(parseCheckpoint(`origin with spaces and + signs\n0\n${formatHash(EMPTY_ROOT)}\n`)).size).toBe(0);
  });

  it.each([
    ["a size in hexadecimal", `go.sum database tree\n0xabcdef\n${ROOT}\n`, "checkpoint.size"],
    ["a root hash too big", "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n", "checkpoint.root"],
    ["junk after the last newline", `go.sum database tree\n1\n${ROOT}\nJOE`, "checkpoint"],
    ["a 7-byte root", "Log\n123\nYmFuYW5hcw==\n", "checkpoint.root"],
    ["two lines", "Head\n9944\n", "checkpoint"],
    ["an empty origin", `\n9944\n${ROOT}\n`, "checkpoint.origin"],
    ["no newline after the root", `Log\n123\n${ROOT}`, "checkpoint"],
    ["an empty extension line", `Log\n123\n${ROOT}\n\n`, "checkpoint.extensions[0]"],
    ["an empty line between extensions", `Log\n123\n${ROOT}\na\n\nb\n`, "checkpoint.extensions[1]"],
    ["a leading zero", `Log\n0123\n${ROOT}\n`, "checkpoint.size"],
    ["a size of 00", `Log\n00\n${ROOT}\n`, "checkpoint.size"],
    ["a sign", `Log\n+1\n${ROOT}\n`, "checkpoint.size"],
    ["a negative size", `Log\n-1\n${ROOT}\n`, "checkpoint.size"],
    ["an exponent", `Log\n1e3\n${ROOT}\n`, "checkpoint.size"],
    ["a space", `Log\n 1\n${ROOT}\n`, "checkpoint.size"],
    ["a size past 2^53 - 1", `Log\n9007199254740992\n${ROOT}\n`, "checkpoint.size"],
    ["a root with non-zero padding bits", `Log\n1\n${ROOT.slice(0, 42)}1=\n`, "checkpoint.root"],
    ["a carriage return", `Log\r\n1\n${ROOT}\n`, "checkpoint"],
  ])("refuses a checkpoint with %s", (_why, text, path) => {
    const r = parseCheckpoint(text);
    expect(r.ok ? null : r.error.path).toBe(path);
    if (!r.ok) expect([TlogErrorCode.MalformedCheckpoint, TlogErrorCode.MalformedHash]).toContain(r.error.code);
  });

  it.each([
    ["0", 0],
    ["1", 1],
    ["9007199254740991", Number.MAX_SAFE_INTEGER],
    ["", null],
    ["٣", null],
  ])("reads the size %j as %j", (text, size) => {
    expect(parseDecimalSize(text)).toBe(size);
  });

  it.each([
    ["an origin with a newline", { origin: "a\nb", size: 1, root: EMPTY_ROOT, extensions: [] }],
    ["an empty origin", { origin: "", size: 1, root: EMPTY_ROOT, extensions: [] }],
    ["an empty extension", { origin: "a", size: 1, root: EMPTY_ROOT, extensions: [""] }],
    ["a negative size", { origin: "a", size: -1, root: EMPTY_ROOT, extensions: [] }],
    ["a control character", { origin: "a\u0007", size: 1, root: EMPTY_ROOT, extensions: [] }],
  ])("refuses to write a checkpoint with %s", (_why, c) => {
    expect(formatCheckpoint(c).ok).toBe(false);
  });
});

describe("signed checkpoints", () => {
  it("signs a checkpoint with the log's key and opens it with the log's verifier key", () => {
    const log = value(noteSignerFromSeed("example.com/log", new Uint8Array(32).fill(1)));
    const note = value(signCheckpoint({ origin: "example.com/log", size: 5, root: leafHash(utf8("x")), extensions: ["ext"] }, [log]));
    const opened = value(openCheckpoint(note, [value(parseVerifierKey(log.verifierKey))]));
    expect([opened.checkpoint.origin, opened.checkpoint.size, opened.checkpoint.extensions, opened.note.verified.length]).toEqual(["example.com/log", 5, ["ext"], 1]);
  });

  it("opens a real checkpoint of the Go checksum database", () => {
    // github.com/FiloSottile/litetlog cmd/litewitness/testdata/sumdb.txt, commit 3195373f7620fde5e62977689fbaabd0e43e255d.
    const v = value(parseVerifierKey("sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"));
    const note = "go.sum database tree\n35225469\nvt5T6GaLCXvyHFl9VUvvItR43XZxfLgftEcTyO3eJCQ=\n\n— sum.golang.org Az3grpukl5AXaVfYkLiDGORx/DN2nlcS5kZHR5uYOBV2KA2HgXpD+gu9HHONebHLAyaKbbTM75QTtPydhKCExixSfwQ=\n";
    expect(value(openCheckpoint(note, [v])).checkpoint.size).toBe(35_225_469);
  });

  it("refuses a well-signed note whose text is not a checkpoint", () => {
    const log = value(noteSignerFromSeed("example.com/log", new Uint8Array(32).fill(1)));
    const r = openCheckpoint(`${log.name}\n01\n${ROOT}\n\n— ${log.name} AAAAAAAA\n`, [log.verifier]);
    expect(r.ok).toBe(false);
  });
});
