/**
 * The catalog (`catalog/plugins.json`, D-43) and the owner's trusted signers (ConfigMap
 * `openfief-trusted-signers`). Both are read strictly: invalid JSON, trailing data, a repeated
 * key, an unknown field or any one invalid entry refuses the whole file, with every problem
 * listed, because a half-read list of who is trusted is worse than none.
 */
import { CAPS, tooLarge, tooManyItems, utf8Length } from "./caps.js";
import { ErrorCode, fail, fieldError, join, ok } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import { parseImageRef } from "./image-ref.js";
import type { ImageRef } from "./image-ref.js";
import { validatePluginName } from "./names.js";
import { compilePattern, identityMatches, identityProblems } from "./signers.js";
import type { ExactIdentity, KeyIdentity, Signer, SignerIdentity, VerifiedIdentity } from "./signers.js";
import { isJsonObject, own, parseStrictJson, unknownFields } from "./strict-json.js";
import { PatternEngineNotLoaded } from "./re2-engine.js";

/**
 * A catalog publisher: always an exact identity (D-44), never a pattern: a keyless identity with an
 * exact subject, or one public key (a release key; docs/adr/0157).
 */
export interface Publisher extends Signer {
  readonly kind: "publisher";
  readonly identity: ExactIdentity | KeyIdentity;
}

/** One verified plugin: its name, the image whose digest it pins, and who must have signed it. */
export interface CatalogEntry {
  readonly name: string;
  readonly image: ImageRef;
  readonly publisher: Publisher;
}

// Set in the class's static block: the module's only way to call the private constructor.
let construct: (entries: readonly CatalogEntry[]) => Catalog;

/** A valid catalog. Built only by {@link parseCatalog} (or {@link emptyCatalog}). */
export class Catalog {
  readonly #entries: readonly CatalogEntry[];

  private constructor(entries: readonly CatalogEntry[]) {
    this.#entries = Object.freeze([...entries]);
  }

  static {
    construct = (entries) => new Catalog(entries);
  }

  /** Every entry, in file order. */
  get entries(): readonly CatalogEntry[] {
    return this.#entries;
  }

  /** The entries that pin `digest` (`sha256:<hex>`), sorted by name. Only the digest counts, so a mirror matches too. */
  entriesForDigest(digest: string): CatalogEntry[] {
    return this.#entries
      .filter((e) => e.image.digest === digest)
      .sort((a, b) => compareStrings(a.name, b.name));
  }

  /** Where `image` stands with this catalog, given the identities whose signatures over its digest verified. Never throws. */
  standing(image: CatalogLookup, identities: readonly VerifiedIdentity[]): CatalogStanding {
    try {
      const pinned = this.entriesForDigest(image.digest);
      const signed = pinned.find((e) => identities.some((id) => identityMatches(e.publisher.identity, id)));
      if (signed !== undefined) return { kind: "verified", entry: signed };
      if (pinned[0] !== undefined) return { kind: "other_publisher", entry: pinned[0] };
      const listed = this.#entries.find((e) => e.name === image.name) ?? this.#entries.find((e) => e.image.name === image.repository);
      return listed === undefined ? { kind: "not_listed" } : { kind: "other_digest", entry: listed };
    } catch (e) {
      if (e instanceof PatternEngineNotLoaded) throw e;
      return { kind: "not_listed" };
    }
  }
}

/**
 * Where an image stands with the catalog (D-44), from the identities whose signatures over its
 * digest verified: `verified` (an entry pins the digest and its publisher signed it),
 * `other_publisher` (an entry pins the digest, but its publisher's signature is not among them),
 * `other_digest` (an entry lists this plugin, by name or repository, at another digest) or
 * `not_listed`. Only `verified` makes an image verified; the two others are told as such.
 */
export type CatalogStanding =
  | { readonly kind: "verified"; readonly entry: CatalogEntry }
  | { readonly kind: "other_publisher"; readonly entry: CatalogEntry }
  | { readonly kind: "other_digest"; readonly entry: CatalogEntry }
  | { readonly kind: "not_listed" };

/** What {@link Catalog.standing} looks an image up by. */
export interface CatalogLookup {
  /** The plugin's (instance's) name. */
  readonly name: string;
  /** The image's name without its digest (`registry/repository`), as its reference writes it. */
  readonly repository: string;
  /** `sha256:<hex>`. */
  readonly digest: string;
}

/** A catalog entry as the file and the `catalog.observed` event write it. */
export interface CatalogEntryJSON {
  readonly name: string;
  readonly image: string;
  readonly publisher: { readonly name: string; readonly issuer: string; readonly subject: string } | { readonly name: string; readonly publicKey: string };
}

/** A catalog's entries as the file writes them: what a `catalog.observed` event records, and reads back with {@link parseCatalog}. */
export function catalogEntriesJSON(catalog: Catalog): CatalogEntryJSON[] {
  return catalog.entries.map((e) => ({
    name: e.name,
    image: e.image.toString(),
    publisher: "publicKey" in e.publisher.identity
      ? { name: e.publisher.name, publicKey: e.publisher.identity.publicKey }
      : { name: e.publisher.name, issuer: e.publisher.identity.issuer, subject: e.publisher.identity.subject },
  }));
}

/** A catalog with no entries. */
export function emptyCatalog(): Catalog {
  return construct([]);
}

const SIGNER_NAME_MAX = CAPS.signerName;

/** The file's text, when it is a string of at most `maxBytes` UTF-8 bytes; the problem otherwise. */
function textWithin(text: unknown, maxBytes: number, what: string): Result<string> {
  if (typeof text !== "string") return fail(fieldError(ErrorCode.InvalidType, "", `the ${what} must be JSON text (a string)`));
  if (utf8Length(text, maxBytes) > maxBytes) return fail(tooLarge("", `the ${what} is larger than ${maxBytes} bytes`));
  return ok(text);
}

/**
 * Parses `catalog/plugins.json`: `{"plugins": [{"name", "image", "publisher": {"name", "issuer",
 * "subject"}}]}`. Plugin names are unique; images are pinned by digest; a publisher is an exact
 * identity. At most {@link CAPS.catalogBytes} bytes and {@link CAPS.catalogEntries} entries
 * ({@link ErrorCode.TooLarge}). Any problem refuses the whole file. Never throws.
 */
export function parseCatalog(text: string): Result<Catalog> {
  try {
    const within = textWithin(text, CAPS.catalogBytes, "catalog");
    if (!within.ok) return within;
    const parsed = parseStrictJson(within.value, "");
    if (!parsed.ok) return parsed;
    const root = parsed.value;
    const errors: FieldError[] = [];
    const entries = readNamedList(root, { key: "plugins", what: "plugin", maxItems: CAPS.catalogEntries }, readCatalogEntry, errors);
    errors.push(...repeatedDigests(root));
    if (errors.length > 0) return fail(errors);
    return ok(construct(entries));
  } catch (e) {
    if (e instanceof PatternEngineNotLoaded) throw e;
    return fail(fieldError(ErrorCode.InvalidCatalog, "", "the catalog could not be read"));
  }
}

/** An image digest pinned by two entries: which entry would vouch for it is not for the file's order to say. */
function repeatedDigests(root: unknown): FieldError[] {
  const list = isJsonObject(root) ? own(root, "plugins") : undefined;
  if (!Array.isArray(list) || list.length > CAPS.catalogEntries) return [];
  const first = new Map<string, number>();
  const errors: FieldError[] = [];
  list.forEach((item: unknown, i) => {
    const ref = isJsonObject(item) ? parseImageRef(own(item, "image"), "") : undefined;
    if (ref === undefined || !ref.ok) return;
    const at = first.get(ref.value.digest);
    if (at === undefined) first.set(ref.value.digest, i);
    else errors.push(fieldError(ErrorCode.Duplicate, join(join("plugins", i), "image"), `the digest ${ref.value.digest} is already pinned at plugins[${at}]`));
  });
  return errors;
}

function readCatalogEntry(item: unknown, path: string, errors: FieldError[]): CatalogEntry | undefined {
  if (!isJsonObject(item)) {
    errors.push(fieldError(ErrorCode.InvalidType, path, "a catalog entry must be an object"));
    return undefined;
  }
  const before = errors.length;
  errors.push(...unknownFields(item, path, ["name", "image", "publisher"]));
  const name = own(item, "name");
  errors.push(...validatePluginName(name, join(path, "name")));
  const image = parseImageRef(own(item, "image"), join(path, "image"));
  if (!image.ok) errors.push(...image.errors);
  const publisher = readPublisher(own(item, "publisher"), join(path, "publisher"), errors);
  if (errors.length > before || !image.ok || publisher === undefined || typeof name !== "string") return undefined;
  return { name, image: image.value, publisher };
}

function readPublisher(value: unknown, path: string, errors: FieldError[]): Publisher | undefined {
  if (value === undefined) {
    errors.push(fieldError(ErrorCode.Required, path, "a catalog entry needs a publisher"));
    return undefined;
  }
  if (!isJsonObject(value)) {
    errors.push(fieldError(ErrorCode.InvalidType, path, "a publisher must be an object"));
    return undefined;
  }
  const before = errors.length;
  for (const key of Object.keys(value)) {
    if (key === "subjectPattern") {
      errors.push(
        fieldError(
          ErrorCode.InvalidCatalog,
          join(path, key),
          "a catalog publisher has an exact subject or one public key, never a pattern: a catalog entry vouches for exactly one publisher",
        ),
      );
    } else if (!["name", "issuer", "subject", "publicKey"].includes(key)) {
      errors.push(fieldError(ErrorCode.UnknownField, join(path, key), `unknown field "${key}"`));
    }
  }
  const name = readSignerName(value, path, errors);
  const identity = readPublisherIdentity(value, path, errors);
  if (identity !== undefined && errors.length === before) errors.push(...identityProblems(identity, path));
  if (errors.length > before || name === undefined || identity === undefined) return undefined;
  return { name, kind: "publisher", identity };
}

/** A publisher's exact identity: one public key (no issuer, no subject), or an issuer and an exact subject. */
function readPublisherIdentity(value: object, path: string, errors: FieldError[]): ExactIdentity | KeyIdentity | undefined {
  if (own(value, "publicKey") !== undefined) {
    if (own(value, "issuer") !== undefined) errors.push(fieldError(ErrorCode.InvalidCatalog, join(path, "issuer"), "a key publisher has no issuer"));
    if (own(value, "subject") !== undefined) {
      errors.push(fieldError(ErrorCode.InvalidCatalog, join(path, "subject"), "a publisher has exactly one of subject (with an issuer) or publicKey, not both"));
    }
    const publicKey = readString(value, "publicKey", path, errors);
    return publicKey === undefined ? undefined : { publicKey };
  }
  const issuer = readString(value, "issuer", path, errors);
  const subject = readString(value, "subject", path, errors);
  return issuer === undefined || subject === undefined ? undefined : { issuer, subject };
}

/**
 * Reads the root's list `key`, each item with `read`, refusing a repeated `name` (the later one
 * names where the first stands). Problems go to `errors`; items that read cleanly are returned.
 */
function readNamedList<T>(
  root: unknown,
  { key, what, maxItems }: { readonly key: string; readonly what: string; readonly maxItems: number },
  read: (item: unknown, path: string, errors: FieldError[]) => T | undefined,
  errors: FieldError[],
): T[] {
  const out: T[] = [];
  const firstIndex = new Map<string, number>();
  readRootList(root, key, maxItems, errors)?.forEach((item, i) => {
    const path = join(key, i);
    const value = read(item, path, errors);
    const name = isJsonObject(item) ? own(item, "name") : undefined;
    if (typeof name === "string") {
      const first = firstIndex.get(name);
      if (first === undefined) firstIndex.set(name, i);
      else errors.push(fieldError(ErrorCode.Duplicate, join(path, "name"), `${what} "${name}" is already listed at ${key}[${first}]`));
    }
    if (value !== undefined) out.push(value);
  });
  return out;
}

/**
 * Parses the owner's trusted signers: `{"signers": [{"name", "issuer", "subject"} | {"name",
 * "issuer", "subjectPattern"} | {"name", "publicKey"}]}`. Names are unique; a pattern must be RE2
 * that compiles; a key is exactly one PEM `PUBLIC KEY` block. At most {@link CAPS.ownerSignersBytes}
 * bytes, {@link CAPS.ownerSigners} signers and {@link CAPS.ownerSignerPrograms} RE2 instructions of
 * subject patterns together ({@link ErrorCode.TooLarge}). Any problem refuses the whole file.
 * Never throws.
 */
export function parseOwnerSigners(text: string): Result<Signer[]> {
  try {
    const within = textWithin(text, CAPS.ownerSignersBytes, "signer list");
    if (!within.ok) return within;
    const parsed = parseStrictJson(within.value, "");
    if (!parsed.ok) return parsed;
    const errors: FieldError[] = [];
    const signers = readNamedList(parsed.value, { key: "signers", what: "signer", maxItems: CAPS.ownerSigners }, readOwnerSigner, errors);
    const program = signers.reduce((sum, s) => sum + ("subjectPattern" in s.identity ? (compilePattern(s.identity.subjectPattern)?.programSize() ?? 0) : 0), 0);
    if (program > CAPS.ownerSignerPrograms) {
      errors.push(tooLarge("signers", `the signers' subject patterns compile to ${program} RE2 instructions together; at most ${CAPS.ownerSignerPrograms} are allowed`));
    }
    if (errors.length > 0) return fail(errors);
    return ok(signers);
  } catch (e) {
    if (e instanceof PatternEngineNotLoaded) throw e;
    return fail(fieldError(ErrorCode.InvalidSigner, "", "the signer list could not be read"));
  }
}

function readOwnerSigner(item: unknown, path: string, errors: FieldError[]): Signer | undefined {
  if (!isJsonObject(item)) {
    errors.push(fieldError(ErrorCode.InvalidType, path, "a signer must be an object"));
    return undefined;
  }
  const before = errors.length;
  errors.push(...unknownFields(item, path, ["name", "issuer", "subject", "subjectPattern", "publicKey"]));
  const name = readSignerName(item, path, errors);
  const has = (k: string): boolean => own(item, k) !== undefined;
  const forms = ["subject", "subjectPattern", "publicKey"].filter(has);
  let identity: SignerIdentity | undefined;
  if (forms.length !== 1) {
    errors.push(
      fieldError(
        ErrorCode.InvalidSigner,
        path,
        forms.length === 0
          ? "a signer needs one of subject, subjectPattern (each with an issuer) or publicKey"
          : `a signer has exactly one of subject, subjectPattern or publicKey, not ${forms.join(" and ")}`,
      ),
    );
  } else if (forms[0] === "publicKey") {
    if (has("issuer")) {
      errors.push(fieldError(ErrorCode.InvalidSigner, join(path, "issuer"), "a key signer has no issuer"));
    }
    const publicKey = readString(item, "publicKey", path, errors);
    if (publicKey !== undefined) identity = { publicKey };
  } else {
    const issuer = readString(item, "issuer", path, errors);
    if (forms[0] === "subject") {
      const subject = readString(item, "subject", path, errors);
      if (issuer !== undefined && subject !== undefined) identity = { issuer, subject };
    } else {
      const subjectPattern = readString(item, "subjectPattern", path, errors);
      if (issuer !== undefined && subjectPattern !== undefined) identity = { issuer, subjectPattern };
    }
  }
  if (identity !== undefined) errors.push(...identityProblems(identity, path));
  if (errors.length > before || name === undefined || identity === undefined) return undefined;
  return { name, kind: "owner", identity };
}

/** The root object `{"<key>": [...]}` with no other field and at most `maxItems` entries; reports and returns undefined otherwise. */
function readRootList(root: unknown, key: string, maxItems: number, errors: FieldError[]): unknown[] | undefined {
  if (!isJsonObject(root)) {
    errors.push(fieldError(ErrorCode.InvalidType, "", `the file must be a JSON object with a "${key}" list`));
    return undefined;
  }
  errors.push(...unknownFields(root, "", [key]));
  const list = own(root, key);
  if (list === undefined) {
    errors.push(fieldError(ErrorCode.Required, key, `"${key}" is required`));
    return undefined;
  }
  if (!Array.isArray(list)) {
    errors.push(fieldError(ErrorCode.InvalidType, key, `"${key}" must be a list`));
    return undefined;
  }
  if (list.length > maxItems) {
    errors.push(tooManyItems(key, `"${key}"`, list.length, maxItems));
    return undefined;
  }
  return list;
}

function readString(obj: object, key: string, path: string, errors: FieldError[]): string | undefined {
  const value = own(obj, key);
  if (value === undefined) {
    errors.push(fieldError(ErrorCode.Required, join(path, key), `"${key}" is required`));
    return undefined;
  }
  if (typeof value !== "string") {
    errors.push(fieldError(ErrorCode.InvalidType, join(path, key), `"${key}" must be a string`));
    return undefined;
  }
  return value;
}

/** A signer's name is for people: 1 to 253 characters, no control characters, no edge spaces. */
function readSignerName(obj: object, path: string, errors: FieldError[]): string | undefined {
  const name = readString(obj, "name", path, errors);
  if (name === undefined) return undefined;
  if (
    name === "" ||
    name.length > SIGNER_NAME_MAX ||
    name.trim() !== name ||
    hasControlCharacter(name)
  ) {
    errors.push(
      fieldError(
        ErrorCode.InvalidName,
        join(path, "name"),
        `a signer name is 1 to ${SIGNER_NAME_MAX} characters without control characters or leading/trailing spaces`,
      ),
    );
    return undefined;
  }
  return name;
}

function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
