/**
 * What the host records about calls (ADR 0014): each failed or refused call as a `plugin.call`
 * event with its code and its redacted message; successes counted per plugin and code, written as
 * `plugin.calls` events on `flush()`; and the last call of each plugin, for `get plugins`.
 */
import type { Logger } from "pino";
import { isPluginName, pluginStream, type EventLog, type PluginRuntime } from "../events/index.js";
import type { JsonValue } from "../plugins/index.js";
import type { CallError } from "./errors.js";
import { validDigest } from "./module-check.js";
import { redact, REDACTED, safeCut } from "./sandbox/log-lines.js";

/** A call's result: the plugin's `result`, or why there is none. */
export type CallResult = { readonly ok: true; readonly result: JsonValue } | { readonly ok: false; readonly error: CallError };

/** The last call of a plugin, for `get plugins`. */
export interface LastCall {
  readonly at: string;
  readonly runtime: PluginRuntime;
  readonly digest: string;
  readonly method: string;
  readonly ms: number;
  /** Absent when the call succeeded. */
  readonly error?: { readonly source: "host" | "plugin"; readonly code: string };
}

/** Who a call was, for the record. */
export interface CallScope {
  readonly plugin: string;
  readonly runtime: PluginRuntime;
  readonly digest: string;
  readonly method: string;
  /** `performance.now()` when it arrived. */
  readonly started: number;
  /** Redaction list of its Secrets. */
  readonly list: readonly string[];
}

const MAX_EVENT_MESSAGE = 1000;

/** Text cut to `max` characters without cutting a redaction marker in two. */
function cut(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, safeCut(text, max - 1, [REDACTED])) + "…";
}

interface Count {
  readonly name: string;
  readonly runtime: PluginRuntime;
  readonly digest: string;
  readonly from: string;
  succeeded: number;
}

/** Records calls for one host. */
export class CallRecorder {
  readonly #store: EventLog;
  readonly #logger: Logger;
  readonly #clock: () => Date;
  readonly #actor: string;
  readonly #counts = new Map<string, Count>();
  readonly #last = new Map<string, LastCall>();

  constructor(o: { store: EventLog; logger: Logger; clock: () => Date; actor: string }) {
    this.#store = o.store;
    this.#logger = o.logger;
    this.#clock = o.clock;
    this.#actor = o.actor;
  }

  /** The last call of each plugin. */
  get last(): ReadonlyMap<string, LastCall> {
    return this.#last;
  }

  /** Records a finished call and returns its result, a failure's message redacted and capped. */
  async finish(call: CallScope, result: CallResult): Promise<CallResult> {
    const ms = Math.round(performance.now() - call.started);
    const at = this.#clock().toISOString();
    const { plugin, runtime, digest, method } = call;
    if (result.ok) {
      const key = `${plugin}\u0000${runtime}\u0000${digest}`;
      const c = this.#counts.get(key);
      if (c === undefined) this.#counts.set(key, { name: plugin, runtime, digest, from: at, succeeded: 1 });
      else c.succeeded++;
      this.#last.set(plugin, { at, runtime, digest, method, ms });
      return result;
    }
    const e = result.error;
    const message = cut(redact(e.message, call.list), MAX_EVENT_MESSAGE);
    const error: CallError = e.source === "host"
      ? { source: "host", code: e.code, message, ...(e.field === undefined ? {} : { field: e.field }) }
      : { source: "plugin", code: e.code, message };
    this.#last.set(plugin, { at, runtime, digest, method, ms, error: { source: e.source, code: e.code } });
    this.#logger.warn({ plugin, digest, method, source: e.source, code: e.code, ms }, `plugin call failed: ${message}`);
    if (isPluginName(plugin)) await this.#append(call, error);
    return { ok: false, error };
  }

  async #append(call: CallScope, error: CallError): Promise<void> {
    const field = error.source === "host" && error.field !== undefined ? { field: cut(error.field, 200) } : {};
    try {
      await this.#store.append([{
        stream: pluginStream(call.plugin), type: "plugin.call", actor: this.#actor,
        data: {
          name: call.plugin, runtime: call.runtime, ...(validDigest(call.digest) ? { digest: call.digest } : {}),
          method: cut(call.method, 128) || "?", source: error.source, code: error.code, message: error.message, ...field,
        },
      }]);
    } catch (err) {
      this.#logger.error({ plugin: call.plugin, err: err instanceof Error ? err.message : String(err) }, "could not record a failed plugin call");
    }
  }

  /** Writes the success counts since the last flush as `plugin.calls` events. */
  async flush(): Promise<void> {
    if (this.#counts.size === 0) return;
    const to = this.#clock().toISOString();
    const batch = [...this.#counts.values()].map((c) => ({
      stream: pluginStream(c.name), type: "plugin.calls", actor: this.#actor,
      data: { name: c.name, runtime: c.runtime, digest: c.digest, from: c.from, to, succeeded: c.succeeded },
    }));
    this.#counts.clear();
    try {
      await this.#store.append(batch);
    } catch (err) {
      this.#logger.error({ err: err instanceof Error ? err.message : String(err) }, "could not record plugin call counts");
    }
  }
}
