/**
 * Builds a running control plane from options: the event store in a data folder, the image
 * verifier (shipped trust root, shipped catalog, owner signers, OCI layouts or registries), the
 * target, and the reconciler over them. `openfief up`, `openfief reconcile` and tests share it.
 */
import { readFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { EventLog } from "../events/index.js";
import { formatErrors, newTrustPolicy, parseCatalog } from "../plugins/index.js";
import type { Catalog, ImageRef, Signer, Topology } from "../plugins/index.js";
import { checkImage, ImageVerifier, loadOwnerSignersFile, loadShippedTrustedRoot, loadTrustedRootFile, OciLayoutSource, recordCatalog, RegistryClient, registryLocation, sha256Hex, shippedFile, storeVerdictLog, VerdictRecorder } from "../trust/index.js";
import type { ImageSource } from "../trust/index.js";
import { DirectoryTarget, Reconciler } from "../reconciler/index.js";
import type { Target } from "../reconciler/index.js";
import { openDataDir, openDataStore, openLogAt, tightenedText } from "../app/index.js";
import type { StoreLocation } from "../app/index.js";

/** The catalog released with the product. */
export const SHIPPED_CATALOG = shippedFile("catalog", "plugins.json");

/**
 * Addresses the compiled objects name when no cluster tells us better (embedded mode). They are
 * only written into the directory target's YAML; nothing dials them.
 */
export const EMBEDDED_TOPOLOGY: Topology = {
  core: { clusterIP: "10.96.0.20", port: 8443, podPort: 8443, podLabels: { "app.kubernetes.io/name": "openfief-core" } },
  proxy: { clusterIP: "10.96.0.30", port: 4750, podPort: 4750, podLabels: { "app.kubernetes.io/name": "openfief-egress-proxy" } },
  pluginPort: 8080,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};

/** Where an image is read from: the first OCI layout holding it, else its registry (plain HTTP for `insecure` ones). */
export type ImageSourceFor = (image: ImageRef) => Promise<{ readonly source: ImageSource; readonly repository: string }>;

/** The {@link ImageSourceFor} of these layouts and registries. */
export function imageSources(ociLayouts: readonly string[], insecureRegistries: readonly string[]): ImageSourceFor {
  const layouts = ociLayouts.map((dir) => new OciLayoutSource(dir));
  const insecure = new Set(insecureRegistries);
  return async (image) => {
    for (const layout of layouts) {
      if (await exists(join(layout.dir, "blobs", "sha256", image.hex))) return { source: layout, repository: image.repository };
    }
    const loc = registryLocation(image);
    return { source: new RegistryClient({ registry: loc.registry, ...(insecure.has(loc.registry) ? { scheme: "http" as const } : {}) }), repository: loc.repository };
  };
}

export interface RuntimeOptions {
  readonly dataDir: string;
  /** The log, when not the data folder's own file (`--store`). */
  readonly store?: StoreLocation | null;
  readonly logger: Logger;
  /** OCI image-layout folders searched (by digest) before any registry. */
  readonly ociLayouts?: readonly string[];
  /** The owner's trusted signers (the openfief-trusted-signers content); none when absent. */
  readonly trustedSigners?: string;
  /** Owner signers already parsed (cluster mode reads them from a ConfigMap); added to the file's. */
  readonly ownerSigners?: readonly Signer[];
  readonly catalog?: string;
  readonly trustedRoot?: string;
  /** Where the directory target writes; default `<data>/cluster`. */
  readonly outDir?: string;
  readonly target?: Target;
  readonly topology?: Topology;
  readonly clock?: () => Date;
  /** Plain-HTTP registries (tests), by host:port. */
  readonly insecureRegistries?: readonly string[];
  /** Wraps the store every part uses (the metrics time its appends). */
  readonly instrument?: (store: EventLog) => EventLog;
}

export interface Runtime {
  /** Where an image is read from: the first OCI layout holding it, else its registry. */
  readonly sourceFor: (image: ImageRef) => Promise<{ readonly source: ImageSource; readonly repository: string }>;
  readonly store: EventLog;
  readonly reconciler: Reconciler;
  readonly verifier: ImageVerifier;
  readonly target: Target;
  readonly ownerSigners: readonly Signer[];
  close(): Promise<void>;
}

/** Refusals at start (a bad signers file, catalog or trust root) throw with a one-line reason. */
export async function openRuntime(o: RuntimeOptions): Promise<Runtime> {
  const clock = o.clock ?? (() => new Date());
  const catalogText = readFileSync(o.catalog ?? SHIPPED_CATALOG, "utf8");
  const catalog = parseCatalog(catalogText);
  if (!catalog.ok) throw new Error(`invalid catalog ${o.catalog ?? SHIPPED_CATALOG}: ${formatErrors(catalog.errors)}`);
  const owner = [...(o.trustedSigners === undefined ? [] : loadOwnerSignersFile(o.trustedSigners)), ...(o.ownerSigners ?? [])];
  const root = o.trustedRoot === undefined ? loadShippedTrustedRoot() : loadTrustedRootFile(o.trustedRoot);
  const policy = newTrustPolicy(catalog.value, owner);
  const sourceFor = imageSources(o.ociLayouts ?? [], o.insecureRegistries ?? []);

  const opened = o.store === undefined || o.store === null
    ? await openDataStore(o.dataDir, clock, (text) => o.logger.warn(text))
    : await openElsewhere(o.dataDir, o.store, clock, o.logger);
  const store = o.instrument === undefined ? opened : o.instrument(opened);
  killAfterAppendsForTests(store);
  const verifier = new ImageVerifier({
    clock: () => clock().getTime(),
    check: async (image, declared) => {
      const { source, repository } = await sourceFor(image);
      return checkImage({ image, source, repository, trustedRoot: root.root, policy, ...(declared === undefined ? {} : { declared }) });
    },
  });
  const recorder = verdictRecorder(store, catalog.value, catalogText, root.sha256);
  const target = o.target ?? new DirectoryTarget(o.outDir ?? join(o.dataDir, "cluster"));
  const reconciler = new Reconciler({ store, verifier, recorder, target, topology: o.topology ?? EMBEDDED_TOPOLOGY, logger: o.logger });
  return { sourceFor, store, reconciler, verifier, target, ownerSigners: owner, close: () => store.close() };
}

/** The recorder whose verdicts cite the catalog's event, recording the catalog (when it changed) before its first verdict. */
function verdictRecorder(store: EventLog, catalog: Catalog, catalogText: string, trustRoot: string): VerdictRecorder {
  const sha = sha256Hex(catalogText);
  return new VerdictRecorder(storeVerdictLog(store), { trustRoot, catalog: sha }, "reconciler", () => recordCatalog(store, catalog, sha));
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** The log at `store`, with the data folder (settings, keys, the cluster's objects) made beside it all the same. */
async function openElsewhere(dataDir: string, store: StoreLocation, clock: () => Date, logger: Logger): Promise<EventLog> {
  const tightened = openDataDir(dataDir);
  if (tightened.length > 0) logger.warn(tightenedText(tightened));
  return openLogAt(store, { clock });
}

/**
 * Fault injection for the restart-safety test: with `OPENFIEF_TEST_KILL_AFTER_APPENDS=N` the
 * process kills itself (SIGKILL, no clean-up) right after its Nth committed append, so the test
 * can stop it between any two steps of a reconcile and check that a fresh start converges.
 */
function killAfterAppendsForTests(store: EventLog): void {
  const raw = process.env["OPENFIEF_TEST_KILL_AFTER_APPENDS"];
  if (raw === undefined || !/^\d+$/.test(raw)) return;
  let left = Number(raw);
  store.subscribe(() => {
    left -= 1;
    if (left <= 0) process.kill(process.pid, "SIGKILL");
  });
}
