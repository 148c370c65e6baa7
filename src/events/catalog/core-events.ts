/**
 * Plugins calling the control plane (docs/adr/0196): every call the core API refuses is recorded,
 * with a stable code and never the token. A refusal of a call whose token named an instance goes
 * to that instance's stream `core/<instance>`; one refused before (no token, a bad one, another
 * audience) goes to `core/-`. Refusals of one code for one instance (or, before identity, one
 * source address) are recorded one by one up to a budget per window; past it they are counted and
 * recorded once as a `core.refusals` summary (docs/adr/0197).
 */
import type { EventRegistry } from "../registry.js";
import { CORE_ANONYMOUS_STREAM, coreStream, isPluginName } from "../streams.js";
import { definer, isoTime, opt, req } from "./schema.js";

/**
 * Why the core refused a plugin's call. Before identity: `missing_token`, `malformed_token`,
 * `wrong_audience`, `token_expired`, `wrong_issuer`, `token_refused` (its signature, key or times
 * are not good), `not_a_plugin` (the subject is not a plugin's ServiceAccount), `review_failed` and
 * `review_timeout` (the token could not be checked), `rate_limited`. After it: `unknown_instance`,
 * `removed_instance`, `not_running`, `capability_not_held`.
 */
export type CoreRefusalCode =
  | "missing_token" | "malformed_token" | "wrong_audience" | "token_expired" | "wrong_issuer" | "token_refused" | "not_a_plugin"
  | "review_failed" | "review_timeout" | "rate_limited"
  | "unknown_instance" | "removed_instance" | "not_running" | "capability_not_held";

/** Every refusal code, in the order above (the schema's enum). */
export const CORE_REFUSAL_CODES: readonly CoreRefusalCode[] = [
  "missing_token", "malformed_token", "wrong_audience", "token_expired", "wrong_issuer", "token_refused", "not_a_plugin",
  "review_failed", "review_timeout", "rate_limited",
  "unknown_instance", "removed_instance", "not_running", "capability_not_held",
];

/** `core.refused`: one refused call of the core API. */
export interface CoreRefused {
  code: CoreRefusalCode;
  /** The call asked for (`whoami`, `connector.state`). */
  call: string;
  /** The client's address, never a token. */
  source: string;
  /** The instance the token named, once the token was accepted. */
  plugin?: string;
  /** The capability the call needs, for `capability_not_held`. */
  capability?: string;
}

/** `core.refusals`: refusals of one code and call, for one instance or source, past the budget in one window. */
export interface CoreRefusals {
  code: CoreRefusalCode;
  call: string;
  /** The source of the first of them. */
  source: string;
  plugin?: string;
  /** How many refusals this summary stands for (at least one). */
  count: number;
  /** When the first and the last of them came (ISO 8601). */
  first: string;
  last: string;
}

/** Data type of each core event type. */
export interface CoreEventData {
  "core.refused": CoreRefused;
  "core.refusals": CoreRefusals;
}

/** The stream a refusal goes to: its instance's, else `core/-`. */
function inCoreStream(stream: string, data: unknown): string | null {
  const plugin = (data as Record<string, unknown>)["plugin"];
  if (plugin === undefined) return stream === CORE_ANONYMOUS_STREAM ? null : `must go to stream ${CORE_ANONYMOUS_STREAM}`;
  if (typeof plugin !== "string" || !isPluginName(plugin)) return "data.plugin is not a valid plugin name";
  const want = coreStream(plugin);
  return stream === want ? null : `must go to stream ${want}`;
}

const code = { enum: [...CORE_REFUSAL_CODES] } as const;
const call = { type: "string", pattern: "^[a-z][a-z0-9_.-]{0,63}$" } as const;
const source = { type: "string", maxLength: 64 } as const;
const plugin = { type: "string", minLength: 1, maxLength: 63 } as const;
const capability = { type: "string", minLength: 1, maxLength: 63 } as const;

export function defineCoreEvents(r: EventRegistry): void {
  const define = definer<CoreEventData>(r);
  define({
    type: "core.refused", version: 1, stream: inCoreStream,
    fields: { code: req(code), call: req(call), source: req(source), plugin: opt(plugin), capability: opt(capability) },
  });
  define({
    type: "core.refusals", version: 1, stream: inCoreStream,
    fields: { code: req(code), call: req(call), source: req(source), plugin: opt(plugin), count: req({ type: "integer", minimum: 1 }), first: req(isoTime), last: req(isoTime) },
  });
}
