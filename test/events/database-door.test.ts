/**
 * Only the log's room sees a database: the lint rules that keep it so (eslint.config.js) refuse a
 * driver, a query builder or a database handle anywhere else in src/, and leave src/events alone.
 */
import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** The rules `text` breaks, linted as if it were the file `path` of the repository. */
async function broken(path: string, text: string): Promise<string[]> {
  const [r] = await eslint.lintText(text, { filePath: `${ROOT}${path}` });
  return (r?.messages ?? []).filter((m) => m.severity === 2).map((m) => m.ruleId ?? "?");
}

describe("the database's one door", () => {
  it.each<[string, string, string]>([
    ["better-sqlite3", "src/app/probe.ts", 'import Database from "better-sqlite3";\nexport const d = Database;\n'],
    ["kysely", "src/projections/probe.ts", 'import { sql } from "kysely";\nexport const s = sql;\n'],
    ["pg", "src/views/probe.ts", 'import pg from "pg";\nexport const p = pg;\n'],
    ["a test's hands on the file, outside a test", "src/app/probe.ts", 'import { withFile } from "../../test/support/sqlite-file.js";\nexport const w = withFile;\n'],
  ])("refuses %s outside src/events", async (_what, path, text) => {
    expect(await broken(path, text)).toContain("no-restricted-imports");
  });

  it.each<[string, string]>([
    ["src/app/probe.ts", "export const f = (s: { database: unknown }): unknown => s.database;\n"],
    ["src/host/probe.ts", 'export const f = (s: Record<string, unknown>): unknown => s["database"];\n'],
  ])("refuses a database handle reached in %s", async (path, text) => {
    expect(await broken(path, text)).toContain("no-restricted-syntax");
  });

  it("lets src/events hold its drivers and its handle", async () => {
    const text = 'import Database from "better-sqlite3";\nexport const f = (s: { database: InstanceType<typeof Database> }): unknown => [Database, s.database];\n';
    expect(await broken("src/events/sqlite/probe.ts", text)).toEqual([]);
  });
});
