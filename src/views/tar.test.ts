import { describe, expect, it } from "vitest";
import { isBundlePath, readTar } from "./tar.js";

/** One ustar header block (and the data, padded) with the fields a test cares about. */
function entry(name: string, data: string | Buffer = "", o: { type?: string; prefix?: string; size?: string; checksum?: "bad"; linkname?: string } = {}): Buffer {
  const body = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  const h = Buffer.alloc(512, 0);
  h.write(name, 0, "utf8");
  h.write("0000644\0", 100);
  h.write("0000000\0", 108);
  h.write("0000000\0", 116);
  h.write(o.size ?? `${body.length.toString(8).padStart(11, "0")}\0`, 124);
  h.write("15125633600\0", 136);
  h.write(o.type ?? "0", 156);
  if (o.linkname !== undefined) h.write(o.linkname, 157);
  h.write("ustar\0", 257);
  h.write("00", 263);
  if (o.prefix !== undefined) h.write(o.prefix, 345);
  h.write("        ", 148);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${(o.checksum === "bad" ? sum + 1 : sum).toString(8).padStart(6, "0")}\0 `, 148);
  return Buffer.concat([h, body, Buffer.alloc((512 - (body.length % 512)) % 512, 0)]);
}

const END = Buffer.alloc(1024, 0);
const tar = (...parts: Buffer[]): Buffer => Buffer.concat([...parts, END]);

/** A pax extended header giving the next entry's path. */
function pax(path: string): Buffer {
  const rec = (k: string, v: string) => {
    const tail = ` ${k}=${v}\n`;
    let len = tail.length + 1;
    while (`${len}${tail}`.length !== len) len++;
    return `${len}${tail}`;
  };
  return entry("PaxHeaders/x", rec("mtime", "1767225600") + rec("path", path), { type: "x" });
}

describe("readTar", () => {
  it("reads regular files by their clean paths, skipping directories and the ./ tools put in front", () => {
    const r = readTar(tar(entry("./", "", { type: "5" }), entry("./index.html", "<p>hi</p>"), entry("js/", "", { type: "5" }), entry("js/app.js", "1;")));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect([...r.files.keys()]).toEqual(["index.html", "js/app.js"]);
    expect(Buffer.from(r.files.get("js/app.js") ?? []).toString()).toBe("1;");
  });

  it.each([
    ["a ustar prefix", tar(entry("app.js", "x", { prefix: "assets/deep" })), "assets/deep/app.js"],
    ["a pax path", tar(pax(`assets/${"n".repeat(120)}.js`), entry("ignored-short-name", "x")), `assets/${"n".repeat(120)}.js`],
    ["a GNU long name", tar(entry("././@LongLink", `assets/${"g".repeat(120)}.css\0`, { type: "L" }), entry("short", "x")), `assets/${"g".repeat(120)}.css`],
    ["an old-style entry type NUL", tar(entry("a.txt", "x", { type: "\0" })), "a.txt"],
  ])("takes the path from %s", (_what, bytes, path) => {
    const r = readTar(bytes);
    expect(r.ok && [...r.files.keys()]).toEqual([path]);
  });

  it("reads an archive that ends at a block boundary without the two zero blocks", () => {
    const r = readTar(entry("a.js", "x"));
    expect(r.ok).toBe(true);
  });

  it.each([
    ["a symbolic link", tar(entry("evil", "", { type: "2", linkname: "/etc/passwd" })), "unsupported_entry"],
    ["a hard link", tar(entry("evil", "", { type: "1", linkname: "index.html" })), "unsupported_entry"],
    ["a character device", tar(entry("tty", "", { type: "3" })), "unsupported_entry"],
    ["a FIFO", tar(entry("fifo", "", { type: "6" })), "unsupported_entry"],
    ["a .. segment", tar(entry("../outside.html", "x")), "bad_path"],
    ["a .. in the middle", tar(entry("a/../../b.html", "x")), "bad_path"],
    ["an absolute path", tar(entry("/etc/passwd", "x")), "bad_path"],
    ["a backslash", tar(entry("a\\..\\b.html", "x")), "bad_path"],
    ["an empty segment", tar(entry("a//b.html", "x")), "bad_path"],
    ["a dot file", tar(entry(".htaccess", "x")), "bad_path"],
    ["a percent sign", tar(entry("a%2e%2e.html", "x")), "bad_path"],
    ["a control character", tar(entry("a\tb.html", "x")), "bad_path"],
    ["a space", tar(entry("a b.html", "x")), "bad_path"],
    ["a .. through a pax path", tar(pax("../x.html"), entry("x.html", "x")), "bad_path"],
    ["a .. directory", tar(entry("../", "", { type: "5" })), "bad_path"],
    ["a duplicate path", tar(entry("a.js", "1"), entry("./a.js", "2")), "duplicate_path"],
    ["a bad checksum", tar(entry("a.js", "x", { checksum: "bad" })), "bad_checksum"],
    ["a size that is not octal", tar(entry("a.js", "x", { size: "12345678901z" })), "bad_size"],
    ["a size past the end", Buffer.concat([entry("a.js", "x", { size: "00000077777\0" }).subarray(0, 512)]), "truncated"],
    ["a broken pax record", tar(entry("PaxHeaders/x", "99 path=x\n", { type: "x" }), entry("x", "x")), "bad_pax"],
    ["nothing at all", Buffer.alloc(0), "truncated"],
    ["half a header", Buffer.alloc(100, 1), "truncated"],
  ])("refuses the whole bundle for %s", (_what, bytes, problem) => {
    const r = readTar(bytes);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem).toBe(problem);
  });

  it("refuses a bundle with more files than its cap", () => {
    const r = readTar(tar(entry("a.js"), entry("b.js"), entry("c.js")), { files: 2, pathLength: 255 });
    expect(r.ok === false && r.problem).toBe("too_many_files");
  });

  it("refuses a path longer than its cap", () => {
    const r = readTar(tar(entry(`${"a".repeat(40)}.js`)), { files: 10, pathLength: 20 });
    expect(r.ok === false && r.problem).toBe("bad_path");
  });
});

describe("isBundlePath", () => {
  it.each(["index.html", "js/app.js", "assets/logo@2x.png", "fonts/inter-var.woff2", "a/b/c/d.txt", "_next/x~y+z.js"])("accepts %s", (p) => {
    expect(isBundlePath(p)).toBe(true);
  });
  it.each(["", ".", "..", "a/..", "../a", "a/./b", "/a", "a/", "a//b", ".env", "a\\b", "a%2fb", "a\0b", "é.html", "a b", "a?b", "a#b"])("refuses %j", (p) => {
    expect(isBundlePath(p)).toBe(false);
  });
});
