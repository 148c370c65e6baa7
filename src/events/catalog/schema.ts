/**
 * Building an event's JSON Schema from its TypeScript data type, so that the two cannot disagree:
 * {@link shape} takes one entry per field of `D`, and an entry is {@link req} exactly when the
 * field is required in `D` (the compiler refuses a missing field, an extra one, or the wrong
 * optionality). The envelope is strict (no unknown fields); nested values may be looser.
 */
import type { EventDefinition, EventRegistry, EventType } from "../registry.js";
import { FIRST_RULES } from "../../plugins/index.js";
import { isPluginName } from "../streams.js";

/** A field of an event's data: its schema and whether it must be present. */
export interface Field<R extends boolean> {
  readonly schema: object;
  readonly required: R;
}

/** A required field. */
export function req(schema: object): Field<true> {
  return { schema, required: true };
}

/** An optional field. */
export function opt(schema: object): Field<false> {
  return { schema, required: false };
}

/** One entry per field of `D`; optional fields of `D` are {@link opt}, the others {@link req}. */
export type Fields<D> = { readonly [K in keyof D]-?: object extends Pick<D, K> ? Field<false> : Field<true> };

/** The strict object schema of `D`. */
export function shape<D>(fields: Fields<D>): object {
  const entries = Object.entries(fields) as [string, Field<boolean>][];
  return {
    type: "object",
    required: entries.filter(([, f]) => f.required).map(([k]) => k),
    properties: Object.fromEntries(entries.map(([k, f]) => [k, f.schema])),
    additionalProperties: false,
  };
}

export const str = { type: "string" } as const;
export const nonEmpty = { type: "string", minLength: 1 } as const;
export const boolean = { type: "boolean" } as const;
export const name = { type: "string", minLength: 1, maxLength: 63 } as const;
/** Any JSON value (the pure model validates specs and objects itself). */
export const any = {} as const;
export const digest = { type: "string", pattern: "^sha256:[a-f0-9]{64}$" } as const;
export const port = { type: "integer", minimum: 0, maximum: 65535 } as const;
/** A UTC time as `Date.toISOString()` writes it. */
export const isoTime = { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$" } as const;

/** A decision's rules version (`rules`): 1, 2, … (docs/adr/0150). */
export const rulesVersion = { type: "integer", minimum: 1 } as const;

/**
 * The upcaster of a decision recorded before decisions named their rules: it was made by the first
 * released rules (FIRST_RULES, 1). Lifts the data on read; the stored row is never rewritten.
 */
export function withFirstRules(data: unknown): unknown {
  return { ...(data as Record<string, unknown>), rules: FIRST_RULES };
}

/** A stream check: the event goes to `<prefix>/<data[field]>`, and the field is a plugin name. */
export function inNamedStream(prefix: "plugin" | "egress" | "gateway", field: string) {
  return (stream: string, data: unknown): string | null => {
    const n = (data as Record<string, unknown>)[field];
    if (typeof n !== "string" || !isPluginName(n)) return `data.${field} is not a valid plugin name`;
    const want = `${prefix}/${n}`;
    return stream === want ? null : `must go to stream ${want}`;
  };
}

/** A stream check: the event goes to exactly `stream`. */
export function inStream(want: string) {
  return (stream: string): string | null => (stream === want ? null : `must go to stream ${want}`);
}

/** An event type's definition, its envelope given field by field against its data type. */
export interface TypedDefinition<M, T extends keyof M & string> extends Omit<EventDefinition, "type" | "schema"> {
  readonly type: T;
  readonly fields: Fields<M[T]>;
}

/** A `define` for the types of the data map `M`: each type's schema is checked against `M[type]`. */
export function definer<M>(registry: EventRegistry): <T extends keyof M & string>(def: TypedDefinition<M, T>) => EventType {
  return (def) => {
    const { fields, ...rest } = def;
    return registry.define({ ...rest, schema: shape(fields) });
  };
}
