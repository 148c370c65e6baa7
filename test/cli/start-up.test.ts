/**
 * What a command loads as it starts (ADR 0113): only its own command module, and in the bundle
 * only the chunks that module reaches. A read command answers from the log, so it compiles
 * nothing of Sigstore, YAML, the logger, the metrics, the egress proxy, the plugin host, the views
 * or the console. Sizes and times are never asserted here; `npm run bench:cli` measures them.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import type { Metafile } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, commandModules } from "../../scripts/build-cli.mjs";
import { COMMANDS, modulesFor } from "../../src/cli/commands/index.js";
import { ok, openfief, ROOT } from "../e2e/support.js";

const READ_COMMANDS = ["get", "why", "log", "replay", "verify-log", "check-decisions"] as const;

/** Inputs a read command must not load, by the path esbuild names them with. */
const NOT_FOR_READING: readonly [string, RegExp][] = [
  ["Sigstore", /node_modules\/@sigstore\//],
  ["YAML", /node_modules\/yaml\//],
  ["the logger", /node_modules\/pino\//],
  ["the metrics", /node_modules\/prom-client\//],
  ["HTTP through undici", /node_modules\/undici\//],
  ["JWTs", /node_modules\/jose\//],
  ["the trust room", /^src\/trust\//],
  ["the egress proxy", /^src\/egress\/(proxy|connect|writer|metrics)/],
  ["the plugin host", /^src\/host\//],
  ["the views", /^src\/views\//],
  ["the console and API", /^src\/server\//],
  ["the reconcile loop", /^src\/reconciler\/(reconciler|directory-target)\.ts$/],
  // Loaded by import() when needed (ADR 0186, 0187): a read validates no event, and checks a config
  // schema only when the log does not already say what the check would.
  ["ajv", /node_modules\/ajv\//],
  ["the config-schema checks", /^src\/plugins\/config-schema\.ts$/],
  ["the precompiled meta-schema validators", /^src\/gen\/config-meta-schemas\.js$/],
  // Given to the model when a pattern must be compiled (ADR 0188): a read of the demo compiles none.
  ["RE2", /node_modules\/re2js\//],
];

describe("which command modules a command line loads", () => {
  it.each<[string, readonly string[], readonly string[]]>([
    ["a read command", ["get", "plugins"], ["get"]],
    ["a command its module shares with others", ["replay", "--at", "3"], ["log", "replay", "verify-log", "check-decisions"]],
    ["help for one command", ["why", "--help"], ["why"]],
  ])("%s loads only its own module", (_what, argv, names) => {
    expect(modulesFor(argv).map((m) => m.names)).toEqual([names]);
  });

  it.each<[string, readonly string[]]>([
    ["no arguments", []],
    ["--help", ["--help"]],
    ["help", ["help", "get"]],
    ["a mistyped command, for commander's suggestion", ["gte", "plugins"]],
  ])("%s loads every module", (_what, argv) => {
    expect(modulesFor(argv)).toBe(COMMANDS);
  });

  it.each([["--version"], ["-V"]])("%s loads no module: the program answers it alone", (flag) => {
    expect(modulesFor([flag])).toEqual([]);
  });

  it("lists for each module exactly the commands it registers", async () => {
    for (const m of COMMANDS) {
      const probe = new Command();
      (await m.load())(probe);
      expect(probe.commands.map((c) => c.name()).sort()).toEqual([...m.names].sort());
    }
  });

  it("still shows every command in the full help, and suggests one for a typo", async () => {
    const help = await openfief(["--help"]);
    expect(help.code).toBe(0);
    for (const name of COMMANDS.flatMap((m) => m.names)) expect(help.stdout).toMatch(new RegExp(`^  ${name}\\b`, "m"));
    const typo = await openfief(["gte", "plugins"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("(Did you mean get?)");
  });
});

describe("the bundle", () => {
  let out: string;
  let meta: Metafile;
  let data: string;

  beforeAll(async () => {
    mkdirSync(join(ROOT, ".tmp"), { recursive: true });
    out = mkdtempSync(join(ROOT, ".tmp", "bundle-"));
    meta = await buildCli(out);
    data = join(out, "data");
    await ok(["apply", "-f", join(ROOT, "examples", "plugins"), "--data", data]);
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  /** Every input of the chunks an entry loads before it runs (static imports, followed). */
  function loadedBy(entries: readonly string[]): Set<string> {
    const seen = chunksLoadedBy(entries);
    return new Set([...seen].flatMap((c) => Object.keys(meta.outputs[c]?.inputs ?? {})).map((p) => p.replace(/^(\.\.\/)+(work\/main\/)?/, "")));
  }

  /** The bundle's files an entry loads before it runs (static imports, followed). */
  function chunksLoadedBy(entries: readonly string[]): Set<string> {
    const outputs = Object.entries(meta.outputs);
    const chunkOf = (source: string): string => {
      const found = outputs.find(([, o]) => o.entryPoint === source);
      if (found === undefined) throw new Error(`no chunk for ${source}`);
      return found[0];
    };
    const seen = new Set<string>();
    const todo = entries.map(chunkOf);
    while (todo.length > 0) {
      const chunk = todo.pop() as string;
      if (seen.has(chunk)) continue;
      seen.add(chunk);
      for (const i of meta.outputs[chunk]?.imports ?? []) if (i.kind === "import-statement" && !i.external) todo.push(i.path);
    }
    return seen;
  }

  // ADR 0200: Node pays per ES module it links, so the read path's chunks are merged.
  it.each(["get", "why", "log"])("loads `%s` from at most four files: the entry, the program's, the command's and the read path's", (name) => {
    expect(chunksLoadedBy(["src/cli/main.ts", `src/cli/commands/${name}.ts`]).size).toBeLessThanOrEqual(4);
  });

  it("takes Node's built-ins by require(), never by an ES import that builds a namespace of all their exports (ADR 0200)", () => {
    const imported = Object.keys(meta.outputs)
      .filter((o) => o.endsWith(".mjs"))
      .filter((o) => /^import\s[^;]*from\s*"node:(?!module")/m.test(readFileSync(join(ROOT, o), "utf8")));
    expect(imported).toEqual([]);
  });

  // Node decodes a module's file fast and V8 keeps its source at one byte a character only when
  // the file is ASCII: one "…" in a comment esbuild keeps makes the whole chunk the slow kind. The
  // build cannot escape such characters blindly (esbuild leaves them raw in regular expressions and
  // tagged templates too), so the sources are kept ASCII where they reach the read path.
  it("keeps every file of the read path ASCII, so Node decodes it on its fast path", () => {
    const entries = ["src/cli/main.ts", ...["get", "why", "log", "log-checks"].map((m) => `src/cli/commands/${m}.ts`)];
    const wide = [...chunksLoadedBy(entries)].flatMap((chunk) =>
      readFileSync(join(ROOT, chunk), "utf8")
        .split("\n")
        .filter((line) => /[\u0080-\uffff]/.test(line))
        .map((line) => `${chunk}: ${line.trim().slice(0, 120)}`),
    );
    expect(wide).toEqual([]);
  });

  it.each(READ_COMMANDS)("starts `%s` with none of what only writing, verifying or serving needs", (name) => {
    const module = COMMANDS.find((m) => m.names.includes(name));
    const file = module === undefined ? "" : `src/cli/commands/${module.names.includes("log") ? "log" : name}.ts`;
    const inputs = [...loadedBy(["src/cli/main.ts", file])];
    expect(inputs).toContain(file);
    for (const [what, pattern] of NOT_FOR_READING) expect(inputs.filter((p) => pattern.test(p)), what).toEqual([]);
  });

  it("lists for bin/openfief.js the module of every subcommand, and the sources each was built from", () => {
    const stored = JSON.parse(readFileSync(join(out, "sources.json"), "utf8")) as { commands: Record<string, string>; files: string[]; sources: Record<string, number[]> };
    // Each module's sources are indices into `files`.
    const index = { ...stored, sources: Object.fromEntries(Object.entries(stored.sources).map(([m, list]) => [m, list.map((i) => stored.files[i])])) };
    expect(Object.keys(index.commands).sort()).toEqual(COMMANDS.flatMap((m) => m.names).sort());
    expect(commandModules().map((m) => m.names)).toEqual(COMMANDS.map((m) => m.names));
    expect(index.sources["get"]).toContain("src/cli/commands/get.ts");
    expect(index.sources["get"]).toContain("src/app/plugins.ts");
    expect(index.sources["get"]).not.toContain("src/cli/commands/up.ts");
    // What `up` loads only once it runs (the console, by import()) is checked before it runs too.
    expect(index.sources["up"]).toContain("src/server/index.ts");
    expect(index.sources["all"]?.length).toBeGreaterThan(index.sources["up"]?.length ?? 0);
  });

  it("prints the full help from the summaries, loading no command module (ADR 0188)", () => {
    const inputs = [...loadedBy(["src/cli/main.ts", "src/cli/commands/summaries.ts"])];
    expect(inputs).toContain("src/cli/commands/summaries.ts");
    expect(inputs.filter((p) => /^src\/cli\/commands\/(?!index\.ts$|summaries\.ts$)/.test(p))).toEqual([]);
  });

  it("still holds all of it for `up`", () => {
    const inputs = [...loadedBy(["src/cli/main.ts", "src/cli/commands/up.ts"])];
    for (const pattern of [/node_modules\/@sigstore\/verify\//, /node_modules\/yaml\//, /^src\/host\//, /^src\/egress\/proxy\.ts$/]) {
      expect(inputs.some((p) => pattern.test(p)), String(pattern)).toBe(true);
    }
  });

  /** Runs the bundle in `out` as bin/openfief.js runs dist/'s. */
  function runBundle(...args: string[]) {
    const launch = `const cli = await import(${JSON.stringify(`file://${join(out, "openfief.mjs")}`)}); await cli.runAsProcess(process.argv.slice(1), cli.main);`;
    return spawnSync(process.execPath, ["--input-type=module", "-e", launch, ...args], { cwd: ROOT, encoding: "utf8" });
  }

  it("answers a read command as the sources do", async () => {
    const bundled = runBundle("get", "plugins", "--json", "--data", data);
    expect(bundled.stderr).toBe("");
    expect(bundled.status).toBe(0);
    expect(JSON.parse(bundled.stdout)).toEqual(JSON.parse(await ok(["get", "plugins", "--json", "--data", data])));
  });

  it("answers a refusal with the same one line and exit code as the sources do", async () => {
    const bundled = runBundle("why", "no-such-plugin", "--data", data);
    const sources = await openfief(["why", "no-such-plugin", "--data", data]);
    expect(bundled.status).toBe(sources.code);
    expect(bundled.status).not.toBe(0);
    expect(bundled.stderr).toBe(sources.stderr);
  });
});
