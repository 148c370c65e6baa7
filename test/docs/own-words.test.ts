/**
 * The README, docs/ (the decision records included) and everything the product shows a user —
 * every command's help, every message and page its code can print — explain the project in its own
 * words: none of them cites a document a user does not have (the specification's files, the issues
 * the work was planned in, design decision numbers outside docs/concepts/decisions.md, other
 * projects' internal names).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { COMMANDS } from "../../src/cli/commands/index.js";
import { openfief } from "../e2e/support.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DECISIONS = "docs/concepts/decisions.md";

/** What a user cannot follow, each with a name for the failure message. */
const CITATIONS: readonly [string, RegExp][] = [
  // "seed 000", "the seeds", "seed 003's"; not AssemblyScript's `env.seed` or `--use seed=…`.
  ["the specification's files", /(?<![.=_\w-])seeds?(?![=\w])/i],
  ["the specification's design notes", /\bFUN-\d+/],
  ["an issue number", /\bissues?\s+#?\d+/i],
  ["another project's name", /\b(OLP|Fundament)\b/],
  ["a proposal or research note number", /\b(?!P-(?:256|384|521)\b)[PR]-\d+\b/],
];
/** A design decision's number: only docs/concepts/decisions.md lists them. */
const DECISION_ID: [string, RegExp] = ["a design decision number outside docs/concepts/decisions.md", /\bD-\d+\b/];

function citationsIn(text: string, allowDecisionIds: boolean): string[] {
  const found: string[] = [];
  const lines = text.split("\n");
  for (const [what, pattern] of allowDecisionIds ? CITATIONS : [...CITATIONS, DECISION_ID]) {
    lines.forEach((line, i) => {
      const m = pattern.exec(line);
      if (m !== null) found.push(`${what}: "${m[0]}" in line ${i + 1}: ${line.trim().slice(0, 120)}`);
    });
  }
  return found;
}

function files(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === "node_modules" ? [] : files(join(dir, e.name), keep)) : keep(e.name) ? [join(dir, e.name)] : [],
  );
}

/** Every string a source file can show: string literals and the text of template literals. */
function stringsOf(path: string): string {
  const sf = ts.createSourceFile(path, readFileSync(join(ROOT, path), "utf8"), ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) out.push(node.text);
    else if (ts.isTemplateExpression(node)) out.push(node.head.text, ...node.templateSpans.map((s) => s.literal.text));
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out.join("\n");
}

/** Every page a user reads: the README, docs/, and the READMEs of the SDKs, plugins, demo and benchmarks. */
const docs = [
  "README.md",
  ...files("docs", (n) => n.endsWith(".md")),
  ...["sdk", "plugins", "examples", "bench"].flatMap((d) => files(d, (n) => n === "README.md")),
].map((p) => p.split("\\").join("/"));
const sources = files("src", (n) => /\.(ts|js)$/.test(n) && !n.endsWith(".test.ts") && !n.endsWith(".d.ts")).filter((p) => !p.startsWith(join("src", "gen")));

describe("the project's own words", () => {
  it.each(docs)("%s cites nothing a user does not have", (path) => {
    expect(citationsIn(readFileSync(join(ROOT, path), "utf8"), path === DECISIONS)).toEqual([]);
  });

  it("keeps decision numbers in docs/concepts/decisions.md, one line each", () => {
    const ids = readFileSync(join(ROOT, DECISIONS), "utf8").split("\n").flatMap((l) => /^\| (D-\d+) \|/.exec(l)?.[1] ?? []);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("shows none in any string the code can print: messages, pages, help", () => {
    const found = sources.flatMap((p) => citationsIn(stringsOf(p), false).map((c) => `${relative(ROOT, join(ROOT, p))}: ${c}`));
    expect(found).toEqual([]);
  });

  it("shows none in any command's help", async () => {
    const helps = [await openfief(["--help"])];
    for (const name of COMMANDS.flatMap((m) => m.names)) helps.push(await openfief([name, "--help"]));
    const found = helps.flatMap((h) => citationsIn(h.stdout + h.stderr, false));
    expect(found).toEqual([]);
  });
});
