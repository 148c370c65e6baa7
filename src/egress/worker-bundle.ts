/**
 * The writer thread's module as plain JavaScript (ADR 0033). A worker thread does not inherit the
 * main thread's TypeScript loader, and registering tsx in it compiles every module again (about
 * three seconds on this machine). So when the sources are TypeScript, the worker's module and the
 * project's own modules it imports are bundled once per process with esbuild (installed with tsx)
 * and the worker is started from a `data:` URL: nothing is written to disk, so a read-only root
 * filesystem is no obstacle. Packages are not bundled: each import of one is rewritten to the
 * package's absolute `file:` URL (a `data:` module cannot resolve a bare name), except a package's
 * JSON file, which is bundled in (its `with { type: "json" }` would not survive). Compiled
 * JavaScript is started as it is.
 */
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const built = new Map<string, Promise<URL>>();
const require = createRequire(import.meta.url);

/** A package import as an absolute URL (builtins stay as they are). */
function absolute(specifier: string): string {
  if (specifier.startsWith("node:")) return specifier;
  try {
    return import.meta.resolve(specifier);
  } catch {
    return pathToFileURL(require.resolve(specifier)).href;
  }
}

/** A URL the worker can be started from without a TypeScript loader. */
export function workerModule(entry: URL): Promise<URL> {
  if (!entry.pathname.endsWith(".ts")) return Promise.resolve(entry);
  const key = entry.href;
  let p = built.get(key);
  if (p === undefined) {
    p = bundle(fileURLToPath(entry));
    built.set(key, p);
    p.catch(() => built.delete(key));
  }
  return p;
}

async function bundle(file: string): Promise<URL> {
  const { build } = await import("esbuild");
  const out = await build({
    entryPoints: [file], bundle: true, platform: "node", format: "esm", target: "node20",
    write: false, logLevel: "silent", legalComments: "none",
    plugins: [{
      name: "packages-by-url",
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.endsWith(".json") ? undefined : { path: absolute(args.path), external: true }));
      },
    }],
  });
  const text = out.outputFiles[0]?.text;
  if (text === undefined) throw new Error(`esbuild produced nothing for ${file}`);
  return new URL(`data:text/javascript;base64,${Buffer.from(text, "utf8").toString("base64")}`);
}
