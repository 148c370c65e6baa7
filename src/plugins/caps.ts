/**
 * Every size limit of the pure model, in one table. A manifest, a config schema, a catalog or a
 * signer list comes from a vendor, a signer or a cluster the operator does not control, so each is
 * measured against these caps BEFORE any regular expression, schema compiler or parser looks at
 * it: work on an accepted input is bounded by the table, and an input over a cap is a
 * {@link ErrorCode.TooLarge} field error at the path of what is too large, never a crash or a stall.
 *
 * The list and string caps repeat what the CRDs in `deploy/crds/` declare (`maxItems: 64`,
 * `maxLength`); a test reads the CRDs and fails when the two disagree. ADR 0040 says why each
 * other value is what it is, and `npm run bench:model` measures the slowest accepted input.
 */
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";

/** The caps. Lengths of strings are in UTF-16 code units (`String.length`) unless they say bytes. */
export const CAPS = Object.freeze({
  /** UTF-8 bytes of the manifest label's JSON text. Room for every list at its cap and the largest schema. */
  manifestLabelBytes: 256 * 1024,
  /** Entries of every list in a manifest or grant (capabilities, egress, secrets, dataTiers): the CRDs' `maxItems`. */
  listItems: 64,
  /** A plugin name: `plugin-<name>` must still fit Kubernetes' 63. */
  pluginName: 56,
  /** A Secret name: Kubernetes' DNS subdomain. */
  secretName: 253,
  /** A data tier name. */
  dataTier: 32,
  /** An egress hostname (RFC 1035, without the trailing dot). */
  hostname: 253,
  /** A Secret's mount path: the CRD's `maxLength`. */
  mountPath: 1024,
  /** A whole image reference: the CRD's `maxLength`. */
  imageRef: 512,
  /** The name part of an image reference: distribution/reference's NameTotalLengthMax. */
  imageName: 255,
  /** A view plugin's PolicyRules in one manifest or grant (Kubernetes' own roles rarely pass a dozen). */
  policyRules: 32,
  /** Entries of one list of one PolicyRule. */
  policyRuleEntries: 32,
  /** A PolicyRule's verb. */
  policyVerb: 63,
  /** A PolicyRule's API group, resource or resource name (a DNS subdomain's 253). */
  policyName: 253,
  /** A PolicyRule's non-resource URL. */
  policyUrl: 1024,
  /** The path of a view's UI entry page inside its bundle. */
  uiEntry: 255,

  /** A plugin's config, as compact JSON in UTF-8 bytes (escapes not counted). */
  configBytes: 64 * 1024,
  /** Nesting of a plugin's config (arrays and objects). */
  configDepth: 64,

  /** A config schema, as compact JSON in UTF-8 bytes (escapes not counted). */
  schemaBytes: 64 * 1024,
  /** Nesting of a config schema (arrays and objects). */
  schemaDepth: 64,
  /** JSON values in a config schema (every object, array, string, number, boolean and null). */
  schemaValues: 8192,
  /** Subschemas of a config schema (every object or boolean where a schema stands): ajv's compile time grows with them. */
  schemaSubschemas: 2048,
  /** Items of any array in a config schema: `enum`, `required`, `anyOf`, `examples` and the like */
  schemaListItems: 1024,
  /** Members of any object in a config schema: `properties`, `$defs` and the like */
  schemaKeys: 1024,
  /** Any string in a config schema, member names included. */
  schemaString: 4096,
  /** A regular expression (`pattern`, a `patternProperties` name, a signer's subject pattern). */
  patternLength: 1024,
  /** Instructions of one compiled RE2 program: matching costs up to this many steps per character. */
  patternProgram: 1000,
  /** Instructions of all the patterns of one config schema together. */
  schemaPatternPrograms: 4000,
  /** The longest string a `format` (uri, email, date-time and the rest) is checked on; longer ones fail it. */
  formatString: 4096,

  /** The catalog file, UTF-8 bytes. */
  catalogBytes: 1024 * 1024,
  /** Entries of the catalog. */
  catalogEntries: 1024,
  /** The owner's trusted-signers file, UTF-8 bytes: a ConfigMap holds at most 1 MiB. */
  ownerSignersBytes: 1024 * 1024,
  /** Owner signers. */
  ownerSigners: 256,
  /**
   * Instructions of all owner signers' subject patterns together: each verified subject is matched
   * against every pattern, so this bounds the steps per character of every signature checked.
   */
  ownerSignerPrograms: 8000,
  /** A signer's name, for people. */
  signerName: 253,
  /** A keyless identity's OIDC issuer URL. */
  issuer: 1024,
  /**
   * A keyless identity's subject (the certificate's SAN), the signer's or a verified signature's.
   * A GitHub Actions SAN (owner, repository, workflow path, ref) stays under about 700.
   */
  subject: 1024,
  /** A key identity's PEM text. */
  publicKeyPem: 16 * 1024,
  /** Verified signatures over one image that the trust policy looks at. */
  verifiedIdentities: 16,

  /** The characters of an unknown field's name repeated in an error's message. */
  shownName: 64,
});

/** The caps' type: every entry a number. */
export type Caps = typeof CAPS;

/** A {@link ErrorCode.TooLarge} error at `path`. */
export function tooLarge(path: string, message: string): FieldError {
  return fieldError(ErrorCode.TooLarge, path, message);
}

/** A list over its cap: `what has N entries; at most CAP are allowed`. */
export function tooManyItems(path: string, what: string, count: number, cap: number): FieldError {
  return tooLarge(path, `${what} has ${count} entries; at most ${cap} are allowed`);
}

/** A string over its cap. The message says the length, never the string. */
export function tooLong(path: string, what: string, length: number, cap: number): FieldError {
  return tooLarge(path, `${what} is ${length} characters long; at most ${cap} are allowed`);
}

/**
 * The UTF-8 length of `text`, counting at most up to `limit + 1`: the answer is exact when it is
 * at most `limit` and just "more" otherwise, so a huge string costs no more than the limit.
 */
export function utf8Length(text: string, limit = Number.POSITIVE_INFINITY): number {
  // Every code unit takes at least one byte, so a longer string is over any smaller limit.
  if (text.length > limit) return limit + 1;
  let bytes = 0;
  for (let i = 0; i < text.length && bytes <= limit; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** `name`, cut to {@link CAPS.shownName} characters, for a message or a path. */
export function shown(name: string): string {
  return name.length > CAPS.shownName ? `${name.slice(0, CAPS.shownName)}…` : name;
}

/** Limits on a JSON-like value; those left out are not checked. */
export interface JsonLimits {
  /** Compact JSON size in UTF-8 bytes, escapes not counted. */
  readonly bytes: number;
  /** Nesting of arrays and objects; a scalar has depth 0, `[]` depth 1. */
  readonly depth: number;
  /** Values of every kind. */
  readonly values?: number;
  /** Items of any one array. */
  readonly listItems?: number;
  /** Members of any one object. */
  readonly keys?: number;
  /** Any one string or member name. */
  readonly stringLength?: number;
}

/** The caps a config schema is measured against before anything else reads it. */
export const SCHEMA_LIMITS: JsonLimits = Object.freeze({
  bytes: CAPS.schemaBytes,
  depth: CAPS.schemaDepth,
  values: CAPS.schemaValues,
  listItems: CAPS.schemaListItems,
  keys: CAPS.schemaKeys,
  stringLength: CAPS.schemaString,
});

/** The caps a plugin's config is measured against before it is read or checked. */
export const CONFIG_LIMITS: JsonLimits = Object.freeze({ bytes: CAPS.configBytes, depth: CAPS.configDepth });

interface Pending {
  readonly value: unknown;
  readonly path: string;
  readonly depth: number;
}

/**
 * The first limit `value` exceeds, as a {@link ErrorCode.TooLarge} error at the path of the part
 * that exceeds it ("" names `path` itself), or undefined. Walks without recursion and stops at the
 * first excess, so it costs at most the limits, however large or deep the value: it is what runs
 * before anything else looks at a value. Values that are not JSON (functions, class instances) are
 * measured as leaves; telling JSON from not-JSON is the caller's next step. A value whose reading
 * throws (a getter, a proxy) is {@link ErrorCode.InvalidJSON}. Never throws.
 */
export function jsonLimitProblem(value: unknown, path: string, what: string, limits: JsonLimits): FieldError | undefined {
  try {
    return measure(value, path, what, limits);
  } catch {
    return fieldError(ErrorCode.InvalidJSON, path, `${what} could not be read as JSON`);
  }
}

function measure(value: unknown, path: string, what: string, limits: JsonLimits): FieldError | undefined {
  const m = new Measure(path, what, limits);
  const stack: Pending[] = [{ value, path, depth: 0 }];
  while (stack.length > 0) {
    const problem = m.visit(stack.pop() as Pending, stack);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** The running totals of one walk, and the check of each value against the limits. */
class Measure {
  readonly path: string;
  readonly what: string;
  readonly limits: JsonLimits;
  #bytes = 0;
  #values = 0;

  constructor(path: string, what: string, limits: JsonLimits) {
    this.path = path;
    this.what = what;
    this.limits = limits;
  }

  /** Counts one value, pushes what it contains, and returns the first excess, if any. */
  visit({ value: v, path: at, depth }: Pending, stack: Pending[]): FieldError | undefined {
    const { limits } = this;
    this.#values++;
    if (limits.values !== undefined && this.#values > limits.values) return tooLarge(this.path, `${this.what} has more than ${limits.values} values`);
    const problem = Array.isArray(v) ? this.#list(v, at, depth, stack) : typeof v === "object" && v !== null ? this.#object(v, at, depth, stack) : this.#leaf(v, at);
    if (problem !== undefined) return problem;
    return this.#bytes > limits.bytes ? tooLarge(this.path, `${this.what} is larger than ${limits.bytes} bytes as JSON`) : undefined;
  }

  #leaf(v: unknown, at: string): FieldError | undefined {
    const cap = this.limits.stringLength;
    if (typeof v === "string") {
      if (cap !== undefined && v.length > cap) return tooLong(at, "a string", v.length, cap);
      this.#bytes += utf8Length(v, this.limits.bytes) + 2;
    } else if (typeof v === "number") {
      this.#bytes += String(v).length;
    } else {
      // true, false, null, and leaves that are not JSON at all.
      this.#bytes += 5;
    }
    return undefined;
  }

  #container(at: string, depth: number, count: number, cap: number | undefined, what: string): FieldError | undefined {
    if (depth + 1 > this.limits.depth) return tooLarge(at, `${this.what} nests deeper than ${this.limits.depth} levels`);
    if (cap !== undefined && count > cap) return tooManyItems(at, what, count, cap);
    // Members take at least a byte each: a long container is refused before its members are read.
    this.#bytes += 2 + Math.max(0, count - 1);
    return undefined;
  }

  #list(v: readonly unknown[], at: string, depth: number, stack: Pending[]): FieldError | undefined {
    const problem = this.#container(at, depth, v.length, this.limits.listItems, "a list");
    if (problem !== undefined || this.#bytes > this.limits.bytes) return problem;
    for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: join(at, i), depth: depth + 1 });
    return undefined;
  }

  #object(v: object, at: string, depth: number, stack: Pending[]): FieldError | undefined {
    const keys = Object.keys(v);
    const problem = this.#container(at, depth, keys.length, this.limits.keys, "an object");
    if (problem !== undefined || this.#bytes > this.limits.bytes) return problem;
    const cap = this.limits.stringLength;
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      if (cap !== undefined && key.length > cap) return tooLong(join(at, shown(key)), "a member name", key.length, cap);
      this.#bytes += utf8Length(key, this.limits.bytes) + 3;
      stack.push({ value: (v as Record<string, unknown>)[key], path: join(at, key), depth: depth + 1 });
    }
    return undefined;
  }
}
