/**
 * Stream names. A stream groups the events of one subject and carries its own version for
 * optimistic concurrency: `plugin/<name>`, `egress/<name>`, `gateway/<name>` (a view's gateway
 * decisions), `core/<name>` (the core API's refusals of an instance's calls), and the singletons
 * `trust`, `owner`, `system`, `egress/-` and `core/-`.
 */
import { MAX_PLUGIN_NAME } from "../plugins/index.js";

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The egress proxy's stream for refusals before identity (no plugin to name the stream after). */
export const EGRESS_ANONYMOUS_STREAM = "egress/-";

/** The core API's stream for refusals before identity (docs/adr/0196). */
export const CORE_ANONYMOUS_STREAM = "core/-";

/** The singleton streams. */
/** Where signature verdicts are recorded. */
export const TRUST_STREAM = "trust";
/** `log` holds the verifiable log's own events (its signed checkpoints). */
export const SINGLETON_STREAMS: readonly string[] = [TRUST_STREAM, "owner", "system", EGRESS_ANONYMOUS_STREAM, "log", CORE_ANONYMOUS_STREAM];

/** Kinds of stream that hold one subject named after the slash. */
export type StreamKind = "plugin" | "egress" | "gateway" | "core";

/** True for a valid plugin name (a DNS-1123 label short enough for `plugin-<name>`). */
export function isPluginName(name: string): boolean {
  return name.length <= MAX_PLUGIN_NAME && NAME.test(name);
}

/** `plugin/<name>`. */
export function pluginStream(name: string): string {
  return `plugin/${name}`;
}

/** `egress/<name>`. */
export function egressStream(name: string): string {
  return `egress/${name}`;
}

/** `gateway/<name>`: the gateway's decisions for the view of plugin `<name>`. */
export function gatewayStream(name: string): string {
  return `gateway/${name}`;
}

/** `core/<name>`: the core API's refusals of calls by instance `<name>`. */
export function coreStream(name: string): string {
  return `core/${name}`;
}

/** Splits a stream into its kind and subject; null when the stream name is not valid. */
export function parseStream(stream: string): { kind: StreamKind; name: string } | { kind: "singleton"; name: string } | null {
  if (SINGLETON_STREAMS.includes(stream)) return { kind: "singleton", name: stream };
  const slash = stream.indexOf("/");
  if (slash < 0) return null;
  const kind = stream.slice(0, slash);
  const name = stream.slice(slash + 1);
  if ((kind === "plugin" || kind === "egress" || kind === "gateway" || kind === "core") && isPluginName(name)) return { kind, name };
  return null;
}

/**
 * The event types the (stream, type, version) index leaves out: each has streams of its own that
 * hold nothing else (`egress/<plugin>`, `gateway/<view>`), where `UNIQUE (stream, version)` serves.
 */
export const UNINDEXED_TYPES: ReadonlySet<string> = new Set(["egress.decision", "gateway.decision"]);

/**
 * The condition of the (stream, type, version) index (migration 0008). A query by stream and type
 * of any other type adds it as a term, so that SQLite may use that partial index: it uses one only
 * for a query whose terms include the index's condition.
 */
export const STREAM_TYPE_INDEXED = "type NOT IN ('egress.decision', 'gateway.decision')";
