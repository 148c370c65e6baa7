/**
 * `openfief up`: the control plane on an embedded default — the event store in a data folder,
 * the reconciler with the directory target, and the egress proxy on 127.0.0.1:4750 with the
 * store's allow-lists and tokens from `openfief token`. It runs until SIGINT/SIGTERM.
 * `openfief reconcile` runs one reconcile pass and exits (for scripts and for a log with no `up`).
 * `--demo` first applies the project's `examples/` (two signed plugins, their grants), reconciles,
 * then applies the upgrade that asks for a new egress host, so the hold-back is there to explore.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import type { Logger } from "pino";
import { MemoryAllowListSource, startEmbeddedEgress } from "../../egress/index.js";
import type { EgressProxy } from "../../egress/index.js";
import { pluginStream } from "../../events/index.js";
import type { JsonValue } from "../../plugins/index.js";
import { allowListConfigData, Projector } from "../../projections/index.js";
import { openRuntime } from "../../app/index.js";
import type { Runtime, RuntimeOptions } from "../../app/index.js";
import { CliError } from "../cli-error.js";
import { cliLogger, dataDir, print, printJson, table, withData, withJson } from "../context.js";
import type { DataOptions } from "../context.js";
import { readResources } from "../resources.js";
import { OWNER_ACTOR } from "./apply.js";
import { pluginRows, shortImage } from "./get.js";

/** The demo that ships with the project. */
export const EXAMPLES = fileURLToPath(new URL("../../../examples/", import.meta.url));

interface RuntimeFlags extends DataOptions {
  ociLayout?: string[];
  trustedSigners?: string;
  catalog?: string;
  trustedRoot?: string;
  out?: string;
  insecureRegistry?: string[];
}

interface UpOptions extends RuntimeFlags {
  demo?: boolean;
  egress?: boolean;
  egressPort?: string;
  dnsServer?: string[];
  interval?: string;
}

function repeatable(v: string, prev: string[] = []): string[] {
  return [...prev, v];
}

function withRuntimeFlags(cmd: Command): Command {
  return withJson(withData(cmd))
    .option("--oci-layout <dir>", "an OCI image-layout folder to read images from before any registry (repeatable)", repeatable)
    .option("--trusted-signers <file>", "the owner's trusted signers (JSON, the openfief-trusted-signers content)")
    .option("--catalog <file>", "the catalog (default: the one released with the product)")
    .option("--trusted-root <file>", "a Sigstore trusted root (default: the pinned public-good root)")
    .option("--out <dir>", "where the directory target writes the cluster objects (default: <data>/cluster)")
    .option("--insecure-registry <host:port>", "a registry reached over plain HTTP (repeatable; tests)", repeatable);
}

/**
 * The runtime settings of a data folder: what `up` was started with is saved in
 * `<data>/settings.json`, so `reconcile` (or a restarted `up`) sees the same images and signers.
 * Flags given now override the saved ones; relative paths are saved absolute.
 */
function settingsFile(dir: string): string {
  return join(dir, "settings.json");
}

interface Settings {
  ociLayouts?: string[];
  trustedSigners?: string;
  catalog?: string;
  trustedRoot?: string;
  outDir?: string;
  insecureRegistries?: string[];
}

function loadSettings(dir: string): Settings {
  if (!existsSync(settingsFile(dir))) return {};
  try {
    return JSON.parse(readFileSync(settingsFile(dir), "utf8")) as Settings;
  } catch {
    throw new CliError(`${settingsFile(dir)} is not valid JSON: fix or remove it`, 1);
  }
}

async function runtimeFrom(o: RuntimeFlags, logger: Logger, demo = false): Promise<Runtime> {
  const dir = dataDir(o);
  const saved = loadSettings(dir);
  const abs = (p: string) => resolve(p);
  const settings: Settings = {
    ...saved,
    ...(o.ociLayout !== undefined || demo ? { ociLayouts: [...new Set([...(o.ociLayout ?? []).map(abs), ...(demo ? [join(EXAMPLES, "oci")] : []), ...(saved.ociLayouts ?? [])])] } : {}),
    ...(o.trustedSigners !== undefined ? { trustedSigners: abs(o.trustedSigners) } : demo && saved.trustedSigners === undefined ? { trustedSigners: join(EXAMPLES, "trusted-signers.json") } : {}),
    ...(o.catalog !== undefined ? { catalog: abs(o.catalog) } : {}),
    ...(o.trustedRoot !== undefined ? { trustedRoot: abs(o.trustedRoot) } : {}),
    ...(o.out !== undefined ? { outDir: abs(o.out) } : {}),
    ...(o.insecureRegistry !== undefined ? { insecureRegistries: o.insecureRegistry } : {}),
  };
  const opts: RuntimeOptions = { dataDir: dir, logger, ...settings };
  let rt: Runtime;
  try {
    rt = await openRuntime(opts);
  } catch (err) {
    throw new CliError(err instanceof Error ? err.message.split("\n")[0] ?? "cannot start" : String(err), 1);
  }
  writeFileSync(settingsFile(dir), `${JSON.stringify(settings, null, 2)}\n`);
  return rt;
}

/** Records every resource of a file or folder as the owner's observation; returns how many changed. */
async function applyPath(rt: Runtime, path: string): Promise<number> {
  let changed = 0;
  for (const r of await readResources(path)) {
    const type = r.kind === "Plugin" ? "plugin.observed" : "grant.observed";
    if (rt.store.observe({ stream: pluginStream(r.name), type, data: { name: r.name, spec: r.raw as JsonValue }, actor: OWNER_ACTOR, causedBy: null }) !== null) changed++;
  }
  return changed;
}

function printPlugins(rt: Runtime): void {
  const rows = pluginRows(rt.store);
  print(table(
    ["NAME", "RUNNING", "ASKED FOR", "VERDICT", "PENDING"],
    rows.map((r) => [r.name, shortImage(r.running), r.deleted ? "(deleted)" : shortImage(r.asked), r.verdict ?? "-", r.pending.length === 0 ? "-" : r.pending.join(",")]),
  ));
}

export function register(program: Command): void {
  withRuntimeFlags(program.command("reconcile"))
    .description("run one reconcile pass over the log (verify, decide, compile, apply) and exit")
    .action(async (o: RuntimeFlags) => {
      const logger = cliLogger(process.env["OPENFIEF_LOG_LEVEL"] ?? "warn");
      const rt = await runtimeFrom(o, logger);
      try {
        const results = await rt.reconciler.reconcileAll();
        const appended = results.reduce((n, r) => n + r.appended.length, 0);
        const failed = results.filter((r) => r.error !== undefined);
        if (o.json === true) printJson({ plugins: results.map((r) => ({ name: r.name, appended: r.appended, outcome: r.decision?.plan.outcome ?? null, ...(r.error === undefined ? {} : { error: r.error }) })) });
        else {
          print(`reconciled ${results.length} plugin(s); ${appended} event(s) appended`);
          for (const r of failed) print(`${r.name}: failed: ${r.error ?? "?"}`);
        }
        if (failed.length > 0) process.exitCode = 1;
      } finally {
        await rt.close();
      }
    });

  withRuntimeFlags(program.command("up"))
    .description("run the control plane: event store, reconciler, directory target and the egress proxy, until stopped")
    .option("--demo", "apply the shipped examples (signed plugins, grants, then an upgrade that is held back)")
    .option("--no-egress", "do not start the egress proxy")
    .option("--egress-port <port>", "the egress proxy's port on 127.0.0.1", "4750")
    .option("--dns-server <ip>", "a DNS server the egress proxy asks (repeatable; default: the system's)", repeatable)
    .option("--interval <ms>", "how often to look for new events", "300")
    .action(async (o: UpOptions) => {
      const logger = cliLogger();
      const demo = o.demo === true;
      if (demo && !existsSync(join(EXAMPLES, "oci"))) throw new CliError(`the demo is missing: ${EXAMPLES} has no oci/ (run npm run demo:make)`, 1);
      const interval = Number(o.interval);
      if (!Number.isInteger(interval) || interval < 50) throw new CliError("--interval must be a whole number of milliseconds, at least 50");
      const egressPort = Number(o.egressPort);
      if (!Number.isInteger(egressPort) || egressPort < 0 || egressPort > 65535) throw new CliError("--egress-port must be a port number");
      const rt = await runtimeFrom(o, logger, demo);
      const dir = dataDir(o);
      const projector = new Projector(rt.store);
      const allowLists = new MemoryAllowListSource(null, logger);
      const feedAllowLists = () => {
        projector.catchUp();
        allowLists.setData(allowListConfigData(projector));
      };
      let proxy: EgressProxy | null = null;
      let busy = false;
      let seen = -1;
      const pass = async () => {
        if (busy) return;
        busy = true;
        try {
          rt.verifier.retryDue().catch(() => undefined);
          if (rt.store.head() !== seen) {
            seen = rt.store.head();
            await rt.reconciler.reconcileAll();
            feedAllowLists();
            seen = rt.store.head();
          }
        } catch (err) {
          logger.error({ err: err instanceof Error ? err.message : String(err) }, "reconcile pass failed; retrying");
        } finally {
          busy = false;
        }
      };
      try {
        await pass();
        feedAllowLists();
        if (o.egress !== false) {
          const started = await startEmbeddedEgress({
            dataDir: dir,
            store: rt.store,
            allowLists,
            logger: logger.child({ component: "egress" }),
            ...(o.dnsServer !== undefined ? { dnsServers: o.dnsServer } : {}),
            options: { host: "127.0.0.1", port: egressPort },
          });
          proxy = started.proxy;
          print(`egress proxy on http://${started.host}:${started.port} (tokens: openfief token PLUGIN --data ${dir})`);
        }
        if (demo) await runDemo(rt, dir, pass);
        print(`openfief is up: data in ${dir}; cluster objects in ${rt.target.name.replace(/^directory:/, "")}. Ctrl-C stops it.`);
        const timer = setInterval(() => void pass(), interval);
        // A full pass every minute too, so a retried registry or a changed verdict is picked up.
        const full = setInterval(() => { seen = -1; void pass(); }, 60_000);
        await new Promise<void>((resolve) => {
          process.once("SIGINT", resolve);
          process.once("SIGTERM", resolve);
        });
        clearInterval(timer);
        clearInterval(full);
        print("stopping");
      } finally {
        if (proxy !== null) await proxy.close();
        while (busy) await new Promise((r) => setTimeout(r, 20));
        await rt.close();
      }
    });
}

async function runDemo(rt: Runtime, dir: string, pass: () => Promise<void>): Promise<void> {
  const installed = await applyPath(rt, join(EXAMPLES, "plugins"));
  await pass();
  print("");
  print(installed > 0 ? "Installed the demo plugins (examples/plugins):" : "The demo plugins were already installed:");
  printPlugins(rt);
  const upgraded = await applyPath(rt, join(EXAMPLES, "upgrade"));
  await pass();
  print("");
  print(upgraded > 0 ? "Applied an upgrade of nbp-fx that asks for a new egress host (examples/upgrade):" : "The nbp-fx upgrade was already applied:");
  printPlugins(rt);
  const d = `--data ${dir}`;
  print("");
  print("Try next, in another terminal:");
  print(`  npx openfief why nbp-fx ${d}        # why v2 is held back, and what it waits for`);
  print(`  npx openfief approve nbp-fx ${d}    # grant exactly the pending host; v2 then runs`);
  print(`  npx openfief get plugins ${d}`);
  print(`  npx openfief log --plugin nbp-fx ${d}`);
  print(`  npx openfief verify-log ${d} && npx openfief check-decisions ${d}`);
  print(`  npx openfief verify --plugin examples/plugins/nbp-fx.yaml --oci-layout examples/oci --trusted-signers examples/trusted-signers.json`);
  print("");
}
