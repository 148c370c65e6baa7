// An esbuild plugin for the CLI's bundle: an import through a room's door (`../app/index.js`) is
// compiled as imports of the modules the door takes those names from, as if the door were glass.
//
// Why: esbuild splits a bundle by file, following every import a file makes, so a command that
// takes one name from a door reaches every module the door re-exports, and every module those
// reach through their own doors: `get plugins` compiled Sigstore, the egress proxy and the console.
// Looking through the doors gives each command the modules it uses (ADR 0113). In the sources the
// doors stay the only way in (scripts/eslint/house-doors.js); this changes only what is bundled.
//
// A door is a list of re-exports (`export { a, b as c } from "./m.js"`, `export * from "./m.js"`),
// as the house writes them; a name a door takes from another door is followed there. Whatever
// this plugin cannot map whole (a default or namespace import, a name it does not find, a door
// written another way) is left as written, which is always correct, only slower.
import { readFileSync } from "node:fs";
import { dirname, relative, resolve, sep } from "node:path";

/** `import { … } from "…";` and `export { … } from "…";` statements, braces possibly over several lines. */
const NAMED = /^(import|export)(\s+type)?\s*\{([^}]*)\}\s*from\s*["']([^"']+)["'];?/gm;
/** `export * from "…";` (a type-only one carries no value). */
const STAR = /^export\s+\*\s+from\s+["']([^"']+)["'];?/gm;
/** A declaration a module exports under its own name. */
const DECLARED = /^export\s+(?:declare\s+)?(?:async\s+)?(?:const|let|var|function\*?|class|abstract\s+class|enum)\s+([A-Za-z_$][\w$]*)/gm;

/** True for `src/<room>/index.ts`. */
function isDoor(src, file) {
  const parts = relative(src, file).split(sep);
  return parts.length === 2 && parts[1] === "index.ts";
}

/** The file a relative specifier names: `./m.js` is `m.ts` when there is one. */
function resolveSpecifier(fromFile, specifier) {
  const target = resolve(dirname(fromFile), specifier);
  if (!target.endsWith(".js")) return target;
  const asTs = `${target.slice(0, -3)}.ts`;
  try {
    readFileSync(asTs);
    return asTs;
  } catch {
    return target;
  }
}

/** The value names of one brace list (`a, b as c, type T`): each as [asked, given]; types left out. */
function names(list) {
  const out = [];
  for (const raw of list.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, "").split(",")) {
    const item = raw.trim();
    if (item === "" || /^type\s/.test(item)) continue;
    const m = /^([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$/.exec(item);
    if (m === null) return undefined;
    out.push([m[1], m[2] ?? m[1]]);
  }
  return out;
}

/** Adds a door's `export { … } from "…"` names to `out`, following a name into another door. */
function reExports(file, [specifier, list], out, cache, visiting) {
  const from = resolveSpecifier(file, specifier);
  for (const [asked, given] of names(list) ?? []) {
    const through = from.endsWith(`${sep}index.ts`) ? exportsOf(from, cache, visiting).get(asked) : undefined;
    out.set(given, through ?? { module: from, name: asked });
  }
}

/**
 * Every value name a door (or a module a door re-exports with `*`) exports, mapped to the module
 * it comes from and its name there. A door's names are followed into other doors.
 */
function exportsOf(file, cache, visiting = new Set()) {
  const known = cache.get(file);
  if (known !== undefined) return known;
  const out = new Map();
  if (visiting.has(file) || !file.endsWith(".ts")) return out;
  visiting.add(file);
  const text = readFileSync(file, "utf8");
  for (const m of text.matchAll(DECLARED)) out.set(m[1], { module: file, name: m[1] });
  for (const m of text.matchAll(STAR)) {
    for (const [name, origin] of exportsOf(resolveSpecifier(file, m[1]), cache, visiting)) if (!out.has(name)) out.set(name, origin);
  }
  for (const m of text.matchAll(NAMED)) if (m[1] === "export" && m[2] === undefined) reExports(file, [m[4], m[3]], out, cache, visiting);
  visiting.delete(file);
  cache.set(file, out);
  return out;
}

/**
 * The statements that replace one `import { … } from door` (or `export { … } from door`): one per
 * module the names come from, on the statement's first line and padded to its line count, so that
 * source maps and stack traces keep their lines. Undefined when it cannot be mapped whole.
 */
function rewrite(statement, keyword, list, door, cache) {
  const asked = names(list);
  if (asked === undefined) return undefined;
  const exported = exportsOf(door, cache);
  const byModule = new Map();
  for (const [name, local] of asked) {
    const origin = exported.get(name);
    if (origin === undefined) return undefined;
    const group = byModule.get(origin.module) ?? [];
    group.push(origin.name === local ? local : `${origin.name} as ${local}`);
    byModule.set(origin.module, group);
  }
  const lines = statement.split("\n").length;
  if (byModule.size === 0) return "\n".repeat(lines - 1);
  return [...byModule].map(([module, group]) => `${keyword} { ${group.join(", ")} } from ${JSON.stringify(module)};`).join(" ") + "\n".repeat(lines - 1);
}

/** The plugin: every TypeScript file under `src` has its imports through other rooms' doors mapped. */
export function lookThroughDoors(src) {
  const cache = new Map();
  return {
    name: "look-through-doors",
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!args.path.startsWith(src + sep)) return undefined;
        const text = readFileSync(args.path, "utf8");
        const contents = text.replace(NAMED, (statement, keyword, typeOnly, list, specifier) => {
          if (typeOnly !== undefined || !specifier.startsWith(".")) return statement;
          const target = resolveSpecifier(args.path, specifier);
          if (!isDoor(src, target) || target === args.path) return statement;
          return rewrite(statement, keyword, list, target, cache) ?? statement;
        });
        return { contents, loader: "ts", resolveDir: dirname(args.path) };
      });
    },
  };
}
