/**
 * Every module the bundle loads lazily (`import(…)`) is loaded here, and every name the code takes
 * from it is checked to be among what it exports. Node checks a static import's names when it
 * links; a lazy import's names are only looked up when the code runs, so a chunk that exports
 * something else (undici's CommonJS chunk exported only `default`) passes every other test and
 * fails for the user. The code takes names by destructuring, which this test reads.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { freshBundle, ROOT } from "./support.js";

const DIST = join(ROOT, "dist");

/** One lazy import in the bundle: where, what, and the names taken from it (null: not destructured). */
interface LazyImport {
  readonly at: string;
  /** The module the bundler says this code came from (its `// path` marker). */
  readonly origin: string;
  /** null: computed at run time. */
  readonly specifier: string | null;
  readonly names: readonly string[] | null;
}

/** The source module of the bundled code at `pos`: esbuild starts each with a `// path` line. */
function originAt(text: string, pos: number): string {
  const marker = /^\/\/ (\S+\.[cm]?[jt]s)$/gm;
  let origin = "?";
  for (let m = marker.exec(text); m !== null && m.index < pos; m = marker.exec(text)) origin = m[1] ?? "?";
  return origin;
}

/** The names an object pattern takes (`{ a, b: c }` takes a and b). */
function patternNames(p: ts.ObjectBindingPattern): string[] {
  return p.elements.map((e) => {
    const key = e.propertyName ?? e.name;
    if (e.dotDotDotToken !== undefined || !(ts.isIdentifier(key) || ts.isStringLiteral(key))) throw new Error(`a rest or computed name in ${e.getText()}`);
    return key.text;
  });
}

/** The node an `await` or parentheses around `node` make of it. */
function outer(node: ts.Node): ts.Node {
  let n = node;
  while (ts.isAwaitExpression(n.parent) || ts.isParenthesizedExpression(n.parent)) n = n.parent;
  return n;
}

/** `const { a } = await import("x")`. */
function declared(n: ts.Node): ts.ObjectBindingPattern | null {
  const p = n.parent;
  return ts.isVariableDeclaration(p) && p.initializer === n && ts.isObjectBindingPattern(p.name) ? p.name : null;
}

/** `import("x").then(({ a }) => …)`. */
function thenParameter(n: ts.Node): ts.ObjectBindingPattern | null {
  const p = n.parent;
  if (!ts.isPropertyAccessExpression(p) || p.name.text !== "then" || !ts.isCallExpression(p.parent)) return null;
  const f = p.parent.arguments[0];
  const param = f !== undefined && (ts.isArrowFunction(f) || ts.isFunctionExpression(f)) ? f.parameters[0] : undefined;
  return param !== undefined && ts.isObjectBindingPattern(param.name) ? param.name : null;
}

/** `const [{ a }, { b }] = await Promise.all([import("x"), import("y")])`. */
function allElement(node: ts.Expression): ts.ObjectBindingPattern | null {
  const p = node.parent;
  if (!ts.isArrayLiteralExpression(p) || !ts.isCallExpression(p.parent) || !p.parent.expression.getText().startsWith("Promise.all")) return null;
  const decl = outer(p.parent).parent;
  if (!ts.isVariableDeclaration(decl) || !ts.isArrayBindingPattern(decl.name)) return null;
  const e = decl.name.elements[p.elements.indexOf(node)];
  return e !== undefined && ts.isBindingElement(e) && ts.isObjectBindingPattern(e.name) ? e.name : null;
}

/** The object pattern the value of `import(…)` is destructured into, if any. */
function destructured(node: ts.Expression): ts.ObjectBindingPattern | null {
  const n = outer(node);
  return declared(n) ?? thenParameter(n) ?? allElement(node);
}

function lazyImports(file: string): LazyImport[] {
  const text = readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const found: LazyImport[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      const { line } = source.getLineAndCharacterOfPosition(node.getStart());
      const at = `${relative(DIST, file)}:${line + 1}`;
      const origin = originAt(text, node.getStart());
      if (arg === undefined || !ts.isStringLiteral(arg)) found.push({ at, origin, specifier: null, names: null });
      else {
        const pattern = destructured(node);
        found.push({ at, origin, specifier: arg.text, names: pattern === null ? null : patternNames(pattern) });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function bundleFiles(): string[] {
  return [join(DIST, "openfief.mjs"), ...readdirSync(join(DIST, "chunks")).filter((f) => f.endsWith(".mjs")).map((f) => join(DIST, "chunks", f))];
}

type Found = LazyImport & { readonly from: string };
let all: Found[] = [];
/** The lazy imports of the product's own code. */
let imports: (Found & { readonly specifier: string })[] = [];

beforeAll(async () => {
  await freshBundle();
  all = bundleFiles().flatMap((file) => lazyImports(file).map((i) => ({ ...i, from: file })));
  imports = all.filter((i): i is Found & { specifier: string } => i.specifier !== null && !i.origin.includes("node_modules/"));
}, 180_000);

describe("the bundle's lazily loaded modules", () => {
  it("are found (the bundle splits what only some commands need into chunks)", () => {
    expect(imports.filter((i) => i.specifier.startsWith("./")).length).toBeGreaterThan(5);
  });

  it("have a written specifier in the product's own code (a computed one is only in a dependency's unused code)", () => {
    expect(all.filter((i) => i.specifier === null && !i.origin.includes("node_modules/")).map((i) => `${i.at} (${i.origin})`)).toEqual([]);
  });

  it("are each taken apart by name, so the names can be checked", () => {
    expect(imports.filter((i) => i.names === null).map((i) => `${i.at}: import("${i.specifier}")`)).toEqual([]);
  });

  it("each export every name the code takes from them", async () => {
    const missing: string[] = [];
    for (const i of imports) {
      // A chunk beside the importing file, or a package the bundle leaves out (resolved from the project).
      const target = i.specifier.startsWith(".") ? pathToFileURL(join(dirname(i.from), i.specifier)).href : i.specifier;
      const mod = (await import(target)) as Record<string, unknown>;
      for (const name of i.names ?? []) if (mod[name] === undefined) missing.push(`${i.at}: ${name} from ${i.specifier} (it exports ${Object.keys(mod).slice(0, 8).join(", ")})`);
    }
    expect(missing).toEqual([]);
  }, 120_000);
});
