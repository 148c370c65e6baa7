/**
 * Event types: each has a JSON Schema per version and upcasters from older versions. Appends are
 * validated against the current schema (compiled once, at definition); reads pass old rows
 * through the upcasters, so an old row reads as the current shape without being rewritten.
 */
import { createRequire } from "node:module";
import type { Ajv, ValidateFunction } from "ajv";
import type * as AjvModule from "ajv";

/**
 * ajv, loaded on the first append rather than with the log (ADR 0187): a command that only reads
 * the log never validates an event, and ajv is the largest library it would otherwise load. A
 * process that appends loads it ahead with {@link loadEventValidation} (its own chunk in the CLI's
 * bundle); an append that comes first loads it there and then, from node_modules.
 */
let AjvClass: typeof Ajv | undefined;

/** Loads ajv for event validation, so the first append does not load it synchronously. */
export async function loadEventValidation(): Promise<void> {
  // ajv is CommonJS: the bundle's chunk for it exports only its module object, whose `Ajv` is the class.
  const { default: ajv } = await import("ajv");
  AjvClass ??= ajv.Ajv;
}

function ajvClass(): typeof Ajv {
  AjvClass ??= (createRequire(import.meta.url)("ajv") as typeof AjvModule).Ajv;
  return AjvClass;
}

/** One older version of an event type, with how to lift its data to the next version. */
export interface PastVersion {
  readonly version: number;
  readonly schema: object;
  /** Lifts data of `version` to `version + 1`. Pure. */
  readonly upcast: (data: unknown) => unknown;
}

/** What {@link defineEvent} needs to know about an event type. */
export interface EventDefinition {
  readonly type: string;
  /** The current schema version (≥ 1). */
  readonly version: number;
  /** JSON Schema of the current version. */
  readonly schema: object;
  /** Older versions (each lifts to the next); every version below `version` must be listed. */
  readonly history?: readonly PastVersion[];
  /** Checks the stream an event goes to, given its (valid) data; returns why not, or null. */
  readonly stream: (stream: string, data: unknown) => string | null;
  /**
   * Types whose latest event `observe()` compares with, besides this one: `plugin.observed` is
   * compared with the latest of `plugin.observed`/`plugin.deleted`, so re-creating a deleted
   * plugin with the same spec is recorded.
   */
  readonly observeWith?: readonly string[];
}

/** A registered event type. */
export interface EventType {
  readonly type: string;
  readonly version: number;
  readonly observeGroup: readonly string[];
  /** Null when `data` is valid for the current version; else every problem (path, message). */
  validate(data: unknown): { path: string; message: string }[] | null;
  /** Checks the stream (see {@link EventDefinition.stream}). */
  checkStream(stream: string, data: unknown): string | null;
  /** Lifts data stored at `fromVersion` to the current version. */
  upcast(fromVersion: number, data: unknown): unknown;
}

/** The set of event types a store accepts. */
export class EventRegistry {
  readonly #types = new Map<string, EventType>();
  // Made on the first append: a command that only reads the log never needs it.
  #ajv: Ajv | null = null;

  #validator(): Ajv {
    return (this.#ajv ??= new (ajvClass())({ allErrors: true, strict: true, allowUnionTypes: true }));
  }

  /** Registers an event type; throws on a duplicate type or an inconsistent definition. */
  define(def: EventDefinition): EventType {
    if (this.#types.has(def.type)) throw new Error(`event type ${def.type} is already defined`);
    if (!Number.isInteger(def.version) || def.version < 1) throw new Error(`event type ${def.type}: bad version`);
    const past = new Map<number, PastVersion>();
    for (const p of def.history ?? []) past.set(p.version, p);
    for (let v = 1; v < def.version; v++) {
      if (!past.has(v)) throw new Error(`event type ${def.type}: no upcaster from version ${v}`);
    }
    // Compiled on first use: compiling every schema when the catalog loads would cost each CLI
    // command that only reads the log a few hundred milliseconds (tests compile them all).
    let compiled: ValidateFunction | null = null;
    const validator = (data: unknown): boolean => (compiled ??= this.#validator().compile(def.schema))(data);
    const errors = () => compiled?.errors;
    const type = def.type;
    const version = def.version;
    const entry: EventType = {
      type,
      version,
      observeGroup: [type, ...(def.observeWith ?? [])],
      validate(data) {
        if (validator(data)) return null;
        return (errors() ?? []).map((e) => {
          const extra = e.keyword === "additionalProperties" ? `.${String((e.params as { additionalProperty?: string }).additionalProperty)}` : "";
          const path = "data" + e.instancePath.replace(/\/([^/]*)/g, (_m, k: string) => (/^\d+$/.test(k) ? `[${k}]` : `.${k}`)) + extra;
          return { path, message: e.message ?? e.keyword };
        });
      },
      checkStream: (stream, data) => def.stream(stream, data),
      upcast(fromVersion, data) {
        if (fromVersion === version) return data;
        if (fromVersion > version) throw new Error(`event type ${type}: stored version ${fromVersion} is newer than ${version}`);
        let out = data;
        for (let v = fromVersion; v < version; v++) {
          const step = past.get(v);
          if (step === undefined) throw new Error(`event type ${type}: no upcaster from version ${v}`);
          out = step.upcast(out);
        }
        return out;
      },
    };
    this.#types.set(type, entry);
    return entry;
  }

  /** The type, or undefined when it is not registered. */
  get(type: string): EventType | undefined {
    return this.#types.get(type);
  }

  /** Every registered type name. */
  types(): string[] {
    return [...this.#types.keys()];
  }
}

/** Defines an event type in `registry` (sugar for `registry.define`). */
export function defineEvent(registry: EventRegistry, def: EventDefinition): EventType {
  return registry.define(def);
}
