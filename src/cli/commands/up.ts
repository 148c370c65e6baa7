/**
 * `openfief up`: the control plane on an embedded default — the event store in a data folder,
 * the reconciler with the directory target, and the egress proxy on 127.0.0.1:4750 with the
 * store's allow-lists and tokens from `openfief token`. It runs until SIGINT/SIGTERM.
 * It serves the owner's API and console on 127.0.0.1:4780 (`--listen`; beyond loopback only with
 * `--tls-cert` and `--tls-key`) and prints a one-time sign-in link.
 * `openfief reconcile` runs one reconcile pass and exits (for scripts and for a log with no `up`).
 * `--demo` applies the project's `examples/` once (signed plugins, their grants, then an upgrade
 * that asks for a new egress host, so the hold-back is there to explore); on a data folder that
 * holds a log already it keeps the owner's state, and `--reset` starts over.
 */
import { Option, type Command } from "commander";
import { AppError, applyDemoFolder, assertLogHolds, checkUserName, defaultUser, demoSettings, JWKS_PATH, listPlugins, logFile, mergeSettings, loadSettings, saveSettings, parseWitnessTarget, signInLink, SIGN_IN_TTL_SECONDS, storeLocationOf, storeText } from "../../app/index.js";
import { openRuntime, startControlPlane } from "../../compose/index.js";
import type { Settings, WitnessTarget } from "../../app/index.js";
import type { ServerOptions } from "../../server/index.js";
import type { ControlPlane } from "../../compose/index.js";
import { commandName, dataDir, openDataFolder, print, printJson, withData, withJson } from "../context.js";
import type { DataOptions } from "../context.js";
import { parseListen, tlsOf } from "../listen.js";
import { cliLogger } from "../logger.js";
import type { LogFormat } from "../logger.js";
import { pluginsTable } from "./get.js";

interface RuntimeFlags extends DataOptions {
  ociLayout?: string[];
  trustedSigners?: string;
  catalog?: string;
  trustedRoot?: string;
  out?: string;
  insecureRegistry?: string[];
}

interface UpOptions extends RuntimeFlags {
  views?: boolean;
  witness?: string[];
  clusterId?: string;
  consoleOrigin?: string;
  pluginProxyOrigin?: string;
  gatewayOrigin?: string;
  demo?: boolean;
  reset?: boolean;
  egress?: boolean;
  egressPort?: string;
  dnsServer?: string[];
  interval?: string;
  server?: boolean;
  listen?: string;
  tlsCert?: string;
  tlsKey?: string;
  origin?: string[];
  user?: string;
  logFormat?: LogFormat;
  checkpoints?: boolean;
  checkpointEvery?: string;
  checkpointInterval?: string;
  logKey?: string;
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

/** The views' settings the flags give. */
function viewSettings(o: UpOptions): Settings {
  return {
    ...(o.clusterId !== undefined ? { clusterId: o.clusterId } : {}),
    ...(o.consoleOrigin !== undefined ? { consoleOrigin: o.consoleOrigin } : {}),
    ...(o.pluginProxyOrigin !== undefined ? { pluginProxyOrigin: o.pluginProxyOrigin } : {}),
    ...(o.gatewayOrigin !== undefined ? { gatewayOrigin: o.gatewayOrigin } : {}),
  };
}

/** The settings the flags give (the saved ones fill the rest). */
function givenSettings(o: RuntimeFlags): Settings {
  return {
    ...(o.ociLayout !== undefined ? { ociLayouts: o.ociLayout } : {}),
    ...(o.trustedSigners !== undefined ? { trustedSigners: o.trustedSigners } : {}),
    ...(o.catalog !== undefined ? { catalog: o.catalog } : {}),
    ...(o.trustedRoot !== undefined ? { trustedRoot: o.trustedRoot } : {}),
    ...(o.out !== undefined ? { outDir: o.out } : {}),
    ...(o.insecureRegistry !== undefined ? { insecureRegistries: o.insecureRegistry } : {}),
  };
}

/** Seconds, such as 1 or 0.5, as ms. */
function seconds(text: string, flag: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^[0-9]+(\.[0-9]{1,3})?$/.test(text) || n < min || n > max) throw new AppError("usage", `${flag} must be seconds from ${min} to ${max}, such as 1 or 0.5, not ${JSON.stringify(text.slice(0, 32))}`);
  return Math.round(n * 1000);
}

/** When and with which key `up` signs checkpoints of the log's tree (docs/adr/0141, 0142). */
function checkpointOption(o: UpOptions): { every: number; intervalMs: number; keyFile?: string } | null {
  if (o.checkpoints === false) return null;
  return {
    every: wholeNumber(o.checkpointEvery ?? "10000", "--checkpoint-every", 1, 100_000_000),
    intervalMs: seconds(o.checkpointInterval ?? "1", "--checkpoint-interval", 0.05, 86_400),
    ...(o.logKey === undefined ? {} : { keyFile: o.logKey }),
  };
}

function wholeNumber(text: string, flag: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^[0-9]+$/.test(text) || n < min || n > max) throw new AppError("usage", `${flag} must be a whole number from ${min} to ${max}, not ${JSON.stringify(text)}`);
  return n;
}

/** `--witness` (repeatable), each parsed (exit 2 for a bad one), as the control plane's option. */
function witnessesOption(o: UpOptions): { witnesses?: WitnessTarget[] } {
  const witnesses = (o.witness ?? []).map(parseWitnessTarget);
  return witnesses.length === 0 ? {} : { witnesses };
}

/** The API and console the flags ask for, or none with --no-server. The server is loaded only by `up`. */
function serverOption(o: UpOptions): ServerOptions | undefined {
  if (o.server === false) return undefined;
  const { host, port } = parseListen(o.listen ?? "127.0.0.1:4780");
  const tls = tlsOf(o);
  return { host, port, ...(tls === undefined ? {} : { tls }), ...(o.origin === undefined ? {} : { origins: o.origin }) };
}

export function register(program: Command): void {
  withRuntimeFlags(program.command("reconcile"))
    .description("run one reconcile pass over the log (verify, decide, compile, apply) and exit")
    .action(async (o: RuntimeFlags) => {
      const logger = cliLogger({ level: process.env["OPENFIEF_LOG_LEVEL"] ?? "warn", json: o.json === true });
      const dir = dataDir(o);
      const settings = mergeSettings(loadSettings(dir), givenSettings(o));
      const rt = await openRuntime({ dataDir: dir, logger, store: storeLocationOf(o), ...settings });
      try {
        await assertLogHolds(rt.store);
        saveSettings(dir, settings);
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
    .option("--demo", "apply the shipped examples once (signed plugins, grants, then an upgrade that is held back)")
    .option("--reset", "start over: remove the data folder's log, settings, keys and cluster objects first")
    .option("--no-egress", "do not start the egress proxy")
    .option("--egress-port <port>", "the egress proxy's port on 127.0.0.1", "4750")
    .option("--dns-server <ip>", "a DNS server the egress proxy asks (repeatable; default: the system's)", repeatable)
    .option("--interval <ms>", "how often to look for new events", "300")
    .option("--listen <host:port>", "where the API and console listen (beyond loopback only with --tls-cert and --tls-key)", "127.0.0.1:4780")
    .option("--no-server", "do not serve the API and console")
    .option("--tls-cert <file>", "the console's TLS certificate (PEM)")
    .option("--tls-key <file>", "the console's TLS private key (PEM)")
    .option("--origin <url>", "another origin the console is reached at, such as https://openfief.example:4780 (repeatable)", repeatable)
    .option("--user <name>", "the user the printed sign-in link names (default: this machine's user)")
    .option("--no-views", "do not start the views part (the gateway and the plugin proxy)")
    .option("--cluster-id <id>", "the cluster bound into PluginTokens (default: embedded)")
    .option("--console-origin <origin>", "the console's origin, the only page that may frame a view (default: the console's own address)")
    .option("--plugin-proxy-origin <origin>", "the plugin proxy's origin, a different site from the console's (default: http://localhost:4781)")
    .option("--gateway-origin <origin>", "the gateway's origin (default: http://localhost:4782)")
    .option("--checkpoint-every <n>", "sign a checkpoint of the log's Merkle tree every n events", "10000")
    .option("--checkpoint-interval <seconds>", "and every so many seconds while events come", "1")
    .option("--log-key <file>", "the log's signing key (PRIVATE+KEY+<name>+…; default: $OPENFIEF_LOG_KEY_FILE, else <data>/log-key, made on first use)")
    .option("--no-checkpoints", "sign no checkpoints (the log's tree and /tlog files stay without one)")
    .option("--witness <url>", "a C2SP tlog-witness each signed checkpoint is submitted to, optionally followed by a space and its verifier key (repeatable)", repeatable)
    .addOption(new Option("--log-format <format>", "text: warnings and errors on stderr for people, the JSON log only in <data>/openfief.log; json: every JSON log line on stdout too, for a log collector").choices(["text", "json"]).default("text"))
    .action(async (o: UpOptions) => {
      const interval = wholeNumber(o.interval ?? "300", "--interval", 50, 3_600_000);
      const egressPort = wholeNumber(o.egressPort ?? "4750", "--egress-port", 0, 65535);
      const checkpoints = checkpointOption(o);
      const server = serverOption(o);
      const witnesses = witnessesOption(o);
      const user = checkUserName(o.user ?? defaultUser());
      // The log: the data folder's own file, or --store's (a SQLite file, or a PostgreSQL database
      // every part appends to: the reconciler, the egress proxy's writer thread, the plugin host).
      const store = storeLocationOf(o);
      const shown = store && storeText(store);
      const dir = dataDir(o);
      // Made (or tightened) before anything is written in it, the log file first.
      openDataFolder(dir);
      const format = o.logFormat ?? "text";
      const logger = cliLogger({ file: logFile(dir), format });
      const demo = o.demo === true;
      const cp = await startControlPlane({
        dataDir: dir,
        store,
        logger,
        intervalMs: interval,
        settings: { ...(demo ? demoSettings() : {}), ...givenSettings(o), ...viewSettings(o) },
        egress: o.egress === false ? null : { port: egressPort, ...(o.dnsServer !== undefined ? { dnsServers: o.dnsServer } : {}) },
        views: o.views === false ? null : {},
        syncs: {},
        reset: o.reset === true,
        checkpoints,
        ...(server === undefined ? {} : { server }),
        ...witnesses,
      }).catch((err: unknown) => {
        logger.flush();
        throw withFlag(err);
      });
      // With JSON log lines on stdout, stdout stays JSON lines only: what is said for people goes to stderr.
      const say = (line = ""): void => {
        if (o.json === true) return;
        if (format === "json") process.stderr.write(`${line}\n`);
        else print(line);
      };
      // Listening before saying "up": a stop sent the moment it is said is a clean stop.
      const stopped = new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      try {
        if (cp.egress !== null) say(`egress proxy on http://${cp.egress.host}:${cp.egress.port} (tokens: ${commandName()} token PLUGIN --data ${dir})`);
        const fresh = (await cp.runtime.store.head()) === 0;
        await cp.pass();
        if (demo) await runDemo(cp, dir, fresh, say);
        await announce(cp, { dir, store: shown }, user, o.json === true ? (format === "json" ? "line" : "pretty") : null, say);
        await stopped;
        say("stopping");
      } finally {
        await cp.stop();
        logger.flush();
      }
    });
}

/** The flag that moves each listener of `up` (the console's own refusal names --listen). */
const MOVED_BY: Readonly<Record<string, string>> = {
  egress: "pass another --egress-port (or --no-egress)",
  "plugin-proxy": "pass another --plugin-proxy-origin (or --no-views)",
  gateway: "pass another --gateway-origin (or --no-views)",
};

/** A listener's refusal, told which flag moves it. */
function withFlag(err: unknown): unknown {
  const hint = err instanceof AppError && err.field !== undefined ? MOVED_BY[err.field] : undefined;
  return hint === undefined || !(err instanceof AppError) ? err : new AppError(err.code, `${err.message}: ${hint}`, err.field);
}

/** Says that the control plane is up: where the console is, with a sign-in link, and where its files are. */
async function announce(cp: ControlPlane, at: { readonly dir: string; readonly store: string | null }, user: string, json: "pretty" | "line" | null, say: (line?: string) => void): Promise<void> {
  const { dir, store } = at;
  // The canonical origin: the console answers only there (its other loopback names redirect to it).
  const link = cp.server === null ? null : await signInLink(cp.sessions, cp.server.origin, user, "owner");
  const pages = await viewPages(cp);
  const views = cp.views === null ? null : { pluginProxy: cp.views.origins.pluginProxy, gateway: cp.views.gatewayUrl, jwks: `${cp.views.origins.gateway}${JWKS_PATH}`, pages };
  const up = { up: true, data: dir, store: store ?? `sqlite:${cp.runtime.store.location}`, egress: cp.egress, console: cp.server?.origin ?? null, signIn: link?.url ?? null, views, cluster: cp.runtime.target.name, log: logFile(dir), logKey: cp.logKey?.verifierKey ?? null };
  // One line among JSON log lines; indented for a person otherwise.
  if (json === "line") process.stdout.write(`${JSON.stringify(up)}\n`);
  else if (json === "pretty") printJson(up);
  if (cp.server !== null && link !== null) {
    say(`console on ${cp.server.origin}; sign in as ${user} with this link (it works once, for ${SIGN_IN_TTL_SECONDS / 60} minutes; ${commandName()} login --link makes another):`);
    say(`  ${link.url}`);
    say("");
  }
  if (views !== null) {
    const shown = pages.length === 0 ? "no plugin has a view yet" : `a view plugin's page in the console shows the plugin's own UI: ${pages.join(", ")}`;
    say(`views: ${shown}`);
    say(`  served by the plugin proxy on ${views.pluginProxy}, reaching only the gateway ${views.gateway} (keys: ${views.jwks})`);
    say("");
  }
  if (cp.logKey !== null) say(`the log signs checkpoints of its Merkle tree as ${cp.logKey.origin}; check them with the key ${cp.logKey.verifierKey}${cp.server === null ? "" : ` (published at ${cp.server.origin}/tlog/checkpoint)`}`);
  say(`openfief is up: data in ${dir}${store === null ? "" : `; event log in ${store}`}; cluster objects in ${cp.runtime.target.name.replace(/^directory:/, "")}; log in ${logFile(dir)}. Ctrl-C stops it.`);
}

/** The console pages that show a view plugin's UI (the plugins whose running version has one). */
async function viewPages(cp: ControlPlane): Promise<string[]> {
  const views = cp.views;
  if (views === null || cp.server === null) return [];
  const consoleUrl = cp.server.origin;
  const pages = await Promise.all((await listPlugins(cp.runtime.store)).map(async (p) => ((await views.frame(p.name)) === null ? null : `${consoleUrl}/plugins/${encodeURIComponent(p.name)}`)));
  return pages.filter((u): u is string => u !== null);
}

/** Calls the demo's WebAssembly connector once and says what came of it (without internet: the refusal). */
async function callEcb(cp: ControlPlane, say: (line?: string) => void): Promise<void> {
  if (cp.hosted === null) return;
  const r = await cp.hosted.call("ecb-fx", "sync", { batchId: "demo-1", watermark: "" });
  say("");
  if (r.ok) {
    const rates = (r.result as { delivery?: { fxRates?: unknown[] } } | null)?.delivery?.fxRates?.length ?? 0;
    say(`Called ecb-fx (WebAssembly, in the plugin host): sync delivered ${rates} euro reference rate(s) from the ECB.`);
  } else {
    say(`Called ecb-fx (WebAssembly, in the plugin host): sync failed with ${r.error.code}: ${r.error.message}`);
    if (cp.egress !== null) say("  Its HTTP goes only through the egress proxy, to www.ecb.europa.eu:443; without internet that fails, and both the proxy's decision and the failed call are recorded (openfief log --plugin ecb-fx).");
    else say("  The failed call is recorded (openfief log --plugin ecb-fx).");
  }
}

async function runDemo(cp: ControlPlane, dir: string, fresh: boolean, say: (line?: string) => void): Promise<void> {
  const { store } = cp.runtime;
  const d = `--data ${dir}`;
  if (!fresh) {
    say("");
    say(`The demo was applied to ${dir} before: its state is kept as you left it (approvals included).`);
    say(`To start over: npm start -- --reset   (or ${commandName()} up --demo --reset ${d})`);
    say(pluginsTable(await listPlugins(store)));
    return;
  }
  await applyDemoFolder(store, "plugins");
  await cp.pass();
  say("");
  say("Installed the demo plugins (examples/plugins):");
  say(pluginsTable(await listPlugins(store)));
  await callEcb(cp, say);
  await applyDemoFolder(store, "upgrade");
  await cp.pass();
  say("");
  say("Applied an upgrade of nbp-fx that asks for a new egress host (examples/upgrade):");
  say(pluginsTable(await listPlugins(store)));
  say("");
  tryNext(say, d);
  say("");
}

/** The commands to try next, in the words the person typed this one with (never npx: two seconds a command). */
function tryNext(say: (line?: string) => void, d: string): void {
  const of = commandName();
  say("Try next, in another terminal:");
  say(`  ${of} why nbp-fx ${d}        # why v2 is held back, and what it waits for`);
  say(`  ${of} approve nbp-fx ${d}    # grant exactly the pending host; v2 then runs`);
  say(`  ${of} get plugins ${d}`);
  say(`  ${of} log --plugin nbp-fx ${d}`);
  say(`  ${of} verify-log ${d} && ${of} check-decisions ${d}`);
  say(`  ${of} call ecb-fx sync ${d}    # the WebAssembly connector, through the egress proxy`);
  say(`  ${of} verify --plugin examples/plugins/nbp-fx.yaml --oci-layout examples/oci --trusted-signers examples/trusted-signers.json`);
  if (of !== "openfief") say(`  (run npm link once to type openfief instead of ${of})`);
}
