/**
 * docs/adr/README.md lists every decision record, one line each, with the record's own status:
 * the folder is read, so a record added without its line (or a line left for a record renamed or
 * removed) fails here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ADR = fileURLToPath(new URL("../../docs/adr/", import.meta.url));
const RECORD = /^\d{4}-[a-z0-9-]+\.md$/;
/** An index line: `| [0013](0013-approval-is-the-grant.md) | what was decided | status |`. */
const LINE = /^\| \[(\d{4})\]\(([^)]+)\) \| (.+) \| ([^|]+) \|$/;

const records = readdirSync(ADR).filter((f) => RECORD.test(f)).sort();
const index = readFileSync(`${ADR}README.md`, "utf8");
const lines = index.split("\n").filter((l) => l.startsWith("| ["));

function statusOf(file: string): string | undefined {
  return /^Status: *(.+)$/m.exec(readFileSync(`${ADR}${file}`, "utf8"))?.[1]?.trim();
}

describe("the decision records' index", () => {
  it("has a line of the documented shape for each of its rows", () => {
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatch(LINE);
  });

  it.each(records)("lists %s", (file) => {
    expect(lines.filter((l) => LINE.exec(l)?.[2] === file)).toHaveLength(1);
  });

  it("names only records that exist, each under its own number", () => {
    for (const line of lines) {
      const [, number, file] = LINE.exec(line) ?? [];
      expect(records).toContain(file);
      expect(file?.slice(0, 4)).toBe(number);
    }
  });

  it("gives each record the status the record itself states", () => {
    for (const line of lines) {
      const [, , file, , status] = LINE.exec(line) ?? [];
      expect(statusOf(file as string), file).toBe(status?.trim());
    }
  });

  it("lists the records in number order", () => {
    const numbers = lines.map((l) => LINE.exec(l)?.[1] ?? "");
    expect(numbers).toEqual([...numbers].sort());
  });
});
