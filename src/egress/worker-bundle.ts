/**
 * The writer thread's module as plain JavaScript (ADR 0033). A worker thread does not inherit the
 * main thread's TypeScript loader, and registering tsx in it compiles every module again (about
 * three seconds on this machine). So when the sources are TypeScript, the worker's module and
 * the project's own modules it imports are bundled once with esbuild (packages stay external and
 * load from `node_modules`) into `node_modules/.cache/openfief/`, named by their content's hash.
 * Compiled JavaScript is used as it is.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Where bundles go: beside the packages they import, so that those resolve. */
function cacheDir(): string {
  const pkg = createRequire(import.meta.url).resolve("better-sqlite3/package.json");
  return join(dirname(dirname(pkg)), ".cache", "openfief");
}

const built = new Map<string, Promise<string>>();

/** A URL the worker can import without a TypeScript loader. */
export function workerModule(entry: URL): Promise<string> {
  if (!entry.pathname.endsWith(".ts")) return Promise.resolve(entry.href);
  const key = entry.href;
  let p = built.get(key);
  if (p === undefined) {
    p = bundle(fileURLToPath(entry));
    built.set(key, p);
    p.catch(() => built.delete(key));
  }
  return p;
}

async function bundle(file: string): Promise<string> {
  const esbuild = await import("esbuild");
  const out = await esbuild.build({
    entryPoints: [file], bundle: true, platform: "node", format: "esm", target: "node20",
    write: false, logLevel: "silent", legalComments: "none",
    plugins: [{
      name: "packages-external",
      setup(b) {
        // Packages load from node_modules as they are; a package's JSON file (imported `with
        // { type: "json" }`, which an external import would lose) is bundled in.
        b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.endsWith(".json") ? undefined : { path: args.path, external: true }));
      },
    }],
  });
  const text = out.outputFiles[0]?.text;
  if (text === undefined) throw new Error(`esbuild produced nothing for ${file}`);
  const dir = cacheDir();
  const target = join(dir, `${basename(file, ".ts")}-${createHash("sha256").update(text).digest("hex").slice(0, 16)}.mjs`);
  if (!existsSync(target)) {
    mkdirSync(dir, { recursive: true });
    // Written aside and renamed: parallel test workers never see half a file.
    const tmp = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, target);
  }
  return pathToFileURL(target).href;
}
