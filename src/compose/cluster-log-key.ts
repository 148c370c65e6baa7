/**
 * The log's public key in the cluster (docs/adr/0192), both ends: the operator's leader publishes
 * it in the ConfigMap `openfief-log-verifier` ({@link logVerifierPublisher}), and the console reads
 * it from there ({@link ConsoleLogKey}) to serve `/api/v1/log/key`, the integrity page's key and
 * proof downloads. The console holds the public half only: it never mounts the Secret
 * `openfief-log-key` and may `get` that one ConfigMap, nothing more.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { LogKey } from "../app/index.js";
import type { PublishedLogVerifier } from "../kube/index.js";
import { parseVerifierKey } from "../tlog/index.js";

/** How often the console reads the ConfigMap again: a key published after it started is served this soon. */
export const LOG_KEY_REFRESH_MS = 30_000;

/** The operator's end: publishes the leader's key once, trying again on the next pass after a failure. */
export interface LogVerifierPublisher {
  /** Publishes the key unless done already; never throws (a failure is logged and tried again). */
  ensure(): Promise<void>;
}

/** The publisher of `key`'s public half through the cluster `kc` names. */
export function logVerifierPublisher(kc: KubeConfig, key: LogKey, logger: Logger, namespace?: string): LogVerifierPublisher {
  let done = false;
  let running: Promise<void> | null = null;
  const publish = async (): Promise<void> => {
    const { publishLogVerifier, LOG_VERIFIER_CONFIGMAP } = await import("../kube/index.js");
    try {
      const wrote = await publishLogVerifier(kc, { origin: key.origin, verifierKey: key.verifierKey }, namespace);
      done = true;
      if (wrote) logger.info({ configMap: LOG_VERIFIER_CONFIGMAP, key: key.verifierKey }, "published the log's verifier key for the console and auditors");
    } catch (err) {
      logger.warn({ configMap: LOG_VERIFIER_CONFIGMAP, err: err instanceof Error ? err.message : String(err) }, "cannot publish the log's verifier key; trying again on the next pass");
    }
  };
  return {
    ensure() {
      if (done) return Promise.resolve();
      running ??= publish().finally(() => { running = null; });
      return running;
    },
  };
}

/**
 * A published key checked: its verifier key must parse as a signed-note Ed25519 verifier key
 * whose name is the origin. Returns a problem in words, or null.
 */
export function publishedKeyProblem(p: PublishedLogVerifier): string | null {
  const v = parseVerifierKey(p.verifierKey);
  if (!v.ok) return `its verifier key does not parse: ${v.error.message}`;
  if (v.value.name !== p.origin) return `its verifier key is for ${JSON.stringify(v.value.name)}, not the origin ${JSON.stringify(p.origin)}`;
  return null;
}

/** The console's end: the published key, read at start and every {@link LOG_KEY_REFRESH_MS}. */
export class ConsoleLogKey {
  #current: PublishedLogVerifier | null = null;
  #timer: NodeJS.Timeout | null = null;
  #said: string | null = null;
  readonly #read: () => Promise<PublishedLogVerifier | null>;
  readonly #logger: Logger;

  private constructor(read: () => Promise<PublishedLogVerifier | null>, logger: Logger) {
    this.#read = read;
    this.#logger = logger;
  }

  /** Reads the key once (an unreachable API server or no ConfigMap yet leaves none) and keeps reading it every `refreshMs`. */
  static async start(kc: KubeConfig, logger: Logger, opts: { namespace?: string; refreshMs?: number } = {}): Promise<ConsoleLogKey> {
    const { readLogVerifier } = await import("../kube/index.js");
    const k = new ConsoleLogKey(() => readLogVerifier(kc, opts.namespace), logger);
    await k.refresh();
    k.#timer = setInterval(() => { void k.refresh(); }, opts.refreshMs ?? LOG_KEY_REFRESH_MS);
    k.#timer.unref();
    return k;
  }

  /** The key served now, or null (no checkpoints are signed, or it is not published yet). */
  get current(): PublishedLogVerifier | null {
    return this.#current;
  }

  /** Reads the ConfigMap again; a key that does not check is not served (the last good one stays). */
  async refresh(): Promise<void> {
    let read: PublishedLogVerifier | null;
    try {
      read = await this.#read();
    } catch (err) {
      this.#say(`cannot read the log's verifier key: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (read === null) { this.#say("the log's verifier key is not published (the operator signs no checkpoints yet)", "info"); return; }
    const problem = publishedKeyProblem(read);
    if (problem !== null) { this.#say(`the published log verifier key is not served: ${problem}`); return; }
    if (this.#current?.verifierKey !== read.verifierKey) this.#logger.info({ origin: read.origin, key: read.verifierKey }, "serving the log's verifier key");
    this.#current = { origin: read.origin, verifierKey: read.verifierKey };
    this.#said = null;
  }

  /** Stops reading. */
  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Logs a problem once until it changes. */
  #say(text: string, level: "info" | "warn" = "warn"): void {
    if (this.#said === text) return;
    this.#said = text;
    this.#logger[level]({}, text);
  }
}
