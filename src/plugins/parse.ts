/**
 * Validation of manifests, plugins and grants (seed 000, "Validation"). Each parser reads an
 * unvalidated JSON-like value strictly (unknown fields and wrong types refused), returns EVERY
 * problem at once with its code and field path (`manifest.egress[1]`), and on success a normalized
 * copy (egress ports filled in, nothing shared with the input). None of them ever throws, but for
 * {@link SchemaChecksNotLoaded}: a manifest's config schema is checked through schema-check.ts,
 * which a command that reads plugins loads only when the log does not already vouch for the schema
 * (docs/adr/0186). validate.ts is this module with the checks loaded.
 */
import { ErrorCode, fail, fieldError, join, ok } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import { CAPABILITIES } from "./types.js";
import type { Capability, EgressHost, Grant, JsonValue, Manifest, Plugin, PluginSpec, SecretMount, SecretRole } from "./types.js";
import { CAPS, CONFIG_LIMITS, SCHEMA_LIMITS, jsonLimitProblem, shown, tooManyItems } from "./caps.js";
import { cloneJson, isJsonValue, isPlainObject, ownValue } from "./json.js";
import { MountTable, checkSecretMount } from "./mount-path.js";
import { MAX_SECRET_NAME, validateDataTier, validatePluginName, validateSecretName } from "./names.js";
import { egressKey, parseEgressHost } from "./egress-host.js";
import { SchemaChecksNotLoaded, checkConfigSchema } from "./schema-check.js";
import { parseImageRef } from "./image-ref.js";
import { parseGrantRules, parseManifestViewFields } from "./view-fields.js";
import { parseSyncSchedule } from "./schedule.js";
import type { SyncScheduleText } from "./schedule.js";

type Obj = Record<string, unknown>;

// Moved to mount-path.ts, which compile shares; re-exported for the room's door.
export { RESERVED_MOUNT_ROOTS, mountPathsOverlap, validateMountPath } from "./mount-path.js";

const MANIFEST_FIELDS = ["capabilities", "egress", "secrets", "dataTiers", "configSchema", "rbac", "ui"];
const SECRET_FIELDS = ["name", "mountPath"];
const PLUGIN_FIELDS = ["name", "spec"];
const PLUGIN_SPEC_FIELDS = ["image", "manifest", "config", "sync"];
const GRANT_FIELDS = ["name", "spec"];
const GRANT_SPEC_FIELDS = ["capabilities", "egress", "secrets", "secretRoles", "dataTiers", "rbac"];
const SECRET_ROLE_FIELDS = ["role", "secret"];

function unreadable(path: string): FieldError {
  return fieldError(ErrorCode.InvalidJSON, path, "the value could not be read as JSON");
}

/** The object at `path`, or undefined after recording why it is not one. */
function objectAt(value: unknown, path: string, what: string, errors: FieldError[]): Obj | undefined {
  if (value === undefined) {
    errors.push(fieldError(ErrorCode.Required, path, `${what} is required`));
    return undefined;
  }
  if (!isPlainObject(value)) {
    errors.push(fieldError(ErrorCode.InvalidType, path, `${what} must be an object`));
    return undefined;
  }
  return value;
}

function unknownFields(obj: Obj, allowed: readonly string[], path: string, errors: FieldError[]): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) errors.push(fieldError(ErrorCode.UnknownField, join(path, shown(key)), `unknown field "${shown(key)}"`));
  }
}

/**
 * The list at `obj[key]`: absent is empty; anything but an array is an error (and empty); a list
 * over {@link CAPS.listItems} is {@link ErrorCode.TooLarge} (and empty), before any entry is read.
 */
function listAt(obj: Obj, key: string, path: string, errors: FieldError[]): unknown[] {
  const value = ownValue(obj, key);
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    errors.push(fieldError(ErrorCode.InvalidType, join(path, key), `${key} must be a list`));
    return [];
  }
  if (value.length > CAPS.listItems) {
    errors.push(tooManyItems(join(path, key), key, value.length, CAPS.listItems));
    return [];
  }
  return value;
}

function duplicate(path: string, what: string): FieldError {
  return fieldError(ErrorCode.Duplicate, path, `${what} is listed more than once`);
}

function parseCapabilities(list: readonly unknown[], path: string, errors: FieldError[]): Capability[] {
  const out: Capability[] = [];
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const at = join(path, i);
    if (typeof item !== "string") {
      errors.push(fieldError(ErrorCode.InvalidType, at, "a capability must be a string"));
    } else if (!(CAPABILITIES as readonly string[]).includes(item)) {
      errors.push(
        fieldError(ErrorCode.UnknownCapability, at, `unknown capability ${JSON.stringify(item.slice(0, 64))}: use ${CAPABILITIES.join(" or ")}`),
      );
    } else if (seen.has(item)) {
      errors.push(duplicate(at, `capability "${item}"`));
    } else {
      seen.add(item);
      out.push(item as Capability);
    }
  });
  return out;
}

function parseEgressList(list: readonly unknown[], path: string, errors: FieldError[]): EgressHost[] {
  const out: EgressHost[] = [];
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const at = join(path, i);
    const parsed = parseEgressHost(item, at);
    if (!parsed.ok) {
      errors.push(...parsed.errors);
      return;
    }
    const key = egressKey(parsed.value);
    if (seen.has(key)) {
      errors.push(duplicate(at, `egress host ${key}`));
      return;
    }
    seen.add(key);
    out.push(parsed.value);
  });
  return out;
}

/** Strings each checked by `validate`, none repeated (a set, so the check stays linear). */
function parseUniqueNames(
  list: readonly unknown[],
  path: string,
  what: string,
  validate: (value: unknown, at: string) => FieldError[],
  errors: FieldError[],
): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const at = join(path, i);
    const problems = validate(item, at);
    if (problems.length > 0) {
      errors.push(...problems);
    } else if (seen.has(item as string)) {
      errors.push(duplicate(at, `${what} "${item as string}"`));
    } else {
      seen.add(item as string);
      out.push(item as string);
    }
  });
  return out;
}

function parseDataTiers(list: readonly unknown[], path: string, errors: FieldError[]): string[] {
  return parseUniqueNames(list, path, "data tier", validateDataTier, errors);
}

function parseSecretMounts(list: readonly unknown[], path: string, errors: FieldError[]): SecretMount[] {
  const out: SecretMount[] = [];
  const names = new Set<string>();
  const mounts = new MountTable();
  list.forEach((item, i) => {
    const at = join(path, i);
    const obj = objectAt(item, at, "a Secret", errors);
    if (obj === undefined) return;
    unknownFields(obj, SECRET_FIELDS, at, errors);
    const name = ownValue(obj, "name");
    const mountPath = ownValue(obj, "mountPath");
    const namePath = join(at, "name");
    const mountAt = join(at, "mountPath");
    const nameErrors = validateSecretName(name, namePath);
    const mountErrors = checkSecretMount(mounts, mountPath, mountAt);
    errors.push(...nameErrors, ...mountErrors);
    let good = nameErrors.length === 0 && mountErrors.length === 0;
    if (nameErrors.length === 0) {
      if (names.has(name as string)) {
        errors.push(duplicate(namePath, `Secret "${name as string}"`));
        good = false;
      }
      names.add(name as string);
    }
    if (good) out.push({ name: name as string, mountPath: mountPath as string });
  });
  return out;
}

function parseSecretNames(list: readonly unknown[], path: string, errors: FieldError[]): string[] {
  return parseUniqueNames(list, path, "Secret", validateSecretName, errors);
}

/**
 * The Secret an instance mounts for a role when its grant names none: `<plugin>-<role>`
 * (docs/adr/0160). Distinct for two instances of one image, since their names differ.
 */
export function defaultSecretName(plugin: string, role: string): string {
  return `${plugin}-${role}`;
}

/**
 * `spec.secretRoles`: `[{role, secret?}]`, each role a Secret name as the manifest writes it, each
 * secret a Kubernetes Secret name (default `<plugin>-<role>`, which must fit 253 characters); no
 * role listed twice or also in `spec.secrets`, and no Secret mounted for two roles.
 */
function parseSecretRoles(list: readonly unknown[], plugin: string | undefined, legacy: readonly string[], path: string, errors: FieldError[]): SecretRole[] {
  const out: SecretRole[] = [];
  const roles = new Set<string>();
  const secrets = new Map<string, string>(legacy.map((n) => [n, n]));
  list.forEach((item, i) => {
    const at = join(path, i);
    const obj = objectAt(item, at, "a Secret role", errors);
    if (obj === undefined) return;
    unknownFields(obj, SECRET_ROLE_FIELDS, at, errors);
    const role = ownValue(obj, "role");
    const given = ownValue(obj, "secret");
    const roleAt = join(at, "role");
    const roleErrors = validateSecretName(role, roleAt);
    const secretErrors = given === undefined ? [] : validateSecretName(given, join(at, "secret"));
    errors.push(...roleErrors, ...secretErrors);
    if (roleErrors.length > 0 || secretErrors.length > 0) return;
    const r = role as string;
    if (roles.has(r) || legacy.includes(r)) {
      errors.push(duplicate(roleAt, `Secret role "${r}"`));
      return;
    }
    roles.add(r);
    if (plugin === undefined) return;
    const secret = given === undefined ? defaultSecretName(plugin, r) : (given as string);
    if (given === undefined && secret.length > MAX_SECRET_NAME) {
      errors.push(
        fieldError(ErrorCode.InvalidSecretName, roleAt, `the default Secret name "<plugin>-<role>" would be ${secret.length} characters, over ${MAX_SECRET_NAME}: name the Secret in "secret"`),
      );
      return;
    }
    const other = secrets.get(secret);
    if (other !== undefined) {
      errors.push(fieldError(ErrorCode.Duplicate, given === undefined ? roleAt : join(at, "secret"), `Secret "${secret}" is already mounted for role "${other}": each role gets its own Secret`));
      return;
    }
    secrets.set(secret, r);
    out.push({ role: r, secret });
  });
  return out;
}

/** Whether a parser checks a manifest's config schema in full, or leaves it for later (parsePluginUnchecked). */
type SchemaMode = "check" | "leave";

function readManifest(value: unknown, path: string, errors: FieldError[], mode: SchemaMode = "check"): Manifest | undefined {
  const obj = objectAt(value, path, "a manifest", errors);
  if (obj === undefined) return undefined;
  const before = errors.length;
  unknownFields(obj, MANIFEST_FIELDS, path, errors);
  const capsPath = join(path, "capabilities");
  const rawCaps = ownValue(obj, "capabilities");
  const capabilities = parseCapabilities(listAt(obj, "capabilities", path, errors), capsPath, errors);
  if (rawCaps === undefined || (Array.isArray(rawCaps) && rawCaps.length === 0)) {
    errors.push(fieldError(ErrorCode.NoCapability, capsPath, "a manifest must request at least one capability"));
  }
  const egress = parseEgressList(listAt(obj, "egress", path, errors), join(path, "egress"), errors);
  const secrets = parseSecretMounts(listAt(obj, "secrets", path, errors), join(path, "secrets"), errors);
  const dataTiers = parseDataTiers(listAt(obj, "dataTiers", path, errors), join(path, "dataTiers"), errors);
  const schema = ownValue(obj, "configSchema");
  if (schema !== undefined) {
    const at = join(path, "configSchema");
    if (mode === "check") errors.push(...checkConfigSchema(schema, at));
    else {
      const excess = jsonLimitProblem(schema, at, "the config schema", SCHEMA_LIMITS);
      if (excess !== undefined) errors.push(excess);
      else if (!isJsonValue(schema)) errors.push(fieldError(ErrorCode.InvalidJSON, at, "a config schema must be JSON"));
    }
  }
  const view = parseManifestViewFields(obj, path, capabilities, errors);
  if (errors.length > before) return undefined;
  const manifest: Manifest = { capabilities, egress, secrets, dataTiers, ...view };
  return schema === undefined ? manifest : { ...manifest, configSchema: cloneJson(schema as JsonValue) };
}

/**
 * Parses a manifest `{capabilities, egress?, secrets?, dataTiers?, configSchema?}`: at least one
 * capability and only known ones, canonical egress hosts, Kubernetes Secret names with clean,
 * non-overlapping mount paths clear of `/var/run/secrets`, valid data tiers, a config schema that
 * compiles and references nothing outside itself, and no list repeating an entry.
 */
export function parseManifest(value: unknown, path = "manifest"): Result<Manifest> {
  try {
    const errors: FieldError[] = [];
    const manifest = readManifest(value, path, errors);
    return manifest === undefined || errors.length > 0 ? fail(errors) : ok(manifest);
  } catch (e) {
    if (e instanceof SchemaChecksNotLoaded) throw e;
    return fail(unreadable(path));
  }
}

/**
 * Parses a plugin `{name, spec: {image, manifest, config?}}`: a valid plugin name, an image
 * pinned by digest, a valid manifest, and a config that is JSON. The config is not checked
 * against the manifest's schema here; the shell does that with `validateConfig`.
 */
export function parsePlugin(value: unknown): Result<Plugin> {
  return readPlugin(value, "check");
}

/**
 * {@link parsePlugin} with the config schema left unchecked (only its size and that it is JSON):
 * the same plugin whenever parsePlugin accepts it, and a problem list without the schema's. For
 * a reader that looks a recorded fact up by the manifest's digest before deciding whether the
 * schema must be checked at all (docs/adr/0186); never a substitute for parsePlugin.
 */
export function parsePluginUnchecked(value: unknown): Result<Plugin> {
  return readPlugin(value, "leave");
}

function readPlugin(value: unknown, mode: SchemaMode): Result<Plugin> {
  try {
    const errors: FieldError[] = [];
    const obj = objectAt(value, "", "a plugin", errors);
    if (obj === undefined) return fail(errors);
    unknownFields(obj, PLUGIN_FIELDS, "", errors);
    const name = ownValue(obj, "name");
    errors.push(...validatePluginName(name, "name"));
    const spec = objectAt(ownValue(obj, "spec"), "spec", "spec", errors);
    if (spec === undefined) return fail(errors);
    unknownFields(spec, PLUGIN_SPEC_FIELDS, "spec", errors);
    const image = parseImageRef(ownValue(spec, "image"), join("spec", "image"));
    if (!image.ok) errors.push(...image.errors);
    const manifest = readManifest(ownValue(spec, "manifest"), join("spec", "manifest"), errors, mode);
    const config = ownValue(spec, "config");
    const configExcess = config === undefined ? undefined : jsonLimitProblem(config, join("spec", "config"), "the config", CONFIG_LIMITS);
    if (configExcess !== undefined) {
      errors.push(configExcess);
    } else if (config !== undefined && !isJsonValue(config)) {
      errors.push(fieldError(ErrorCode.InvalidJSON, join("spec", "config"), "a config must be JSON"));
    }
    const sync = readSync(ownValue(spec, "sync"), manifest, errors);
    if (errors.length > 0 || !image.ok || manifest === undefined) return fail(errors);
    const pluginSpec: PluginSpec = { image: image.value.toString(), manifest, ...(sync === undefined ? {} : { sync }) };
    return ok({
      name: name as string,
      spec: config === undefined ? pluginSpec : { ...pluginSpec, config: cloneJson(config as JsonValue) },
    });
  } catch (e) {
    if (e instanceof SchemaChecksNotLoaded) throw e;
    return fail(unreadable(""));
  }
}

/** `spec.sync`, parsed, when written: only a connector has a sync schedule. */
function readSync(value: unknown, manifest: Manifest | undefined, errors: FieldError[]): SyncScheduleText | undefined {
  if (value === undefined) return undefined;
  const path = join("spec", "sync");
  const r = parseSyncSchedule(value, path);
  if (!r.ok) {
    errors.push(...r.errors);
    return undefined;
  }
  if (manifest !== undefined && !manifest.capabilities.includes("connector")) {
    errors.push(fieldError(ErrorCode.InvalidSyncSchedule, path, "only a connector (capability connector) has a sync schedule"));
    return undefined;
  }
  return r.value.text;
}

/**
 * Parses a grant `{name, spec: {capabilities?, egress?, secrets?, secretRoles?, dataTiers?}}`.
 * Missing lists are empty and a grant may approve nothing; entries follow the manifest's rules.
 * `secrets` approves roles that mount the Secret of the role's own name (as before roles);
 * `secretRoles` approves roles and maps each to this instance's Secret, filled in with the default
 * `<name>-<role>` so that parsing a parsed grant gives it back unchanged.
 */
export function parseGrant(value: unknown): Result<Grant> {
  try {
    const errors: FieldError[] = [];
    const obj = objectAt(value, "", "a grant", errors);
    if (obj === undefined) return fail(errors);
    unknownFields(obj, GRANT_FIELDS, "", errors);
    const name = ownValue(obj, "name");
    errors.push(...validatePluginName(name, "name"));
    const spec = objectAt(ownValue(obj, "spec"), "spec", "spec", errors);
    if (spec === undefined) return fail(errors);
    unknownFields(spec, GRANT_SPEC_FIELDS, "spec", errors);
    const capabilities = parseCapabilities(listAt(spec, "capabilities", "spec", errors), "spec.capabilities", errors);
    const egress = parseEgressList(listAt(spec, "egress", "spec", errors), "spec.egress", errors);
    const secrets = parseSecretNames(listAt(spec, "secrets", "spec", errors), "spec.secrets", errors);
    const rawRoles = ownValue(spec, "secretRoles");
    const plugin = typeof name === "string" && validatePluginName(name, "name").length === 0 ? name : undefined;
    const secretRoles = parseSecretRoles(listAt(spec, "secretRoles", "spec", errors), plugin, secrets, "spec.secretRoles", errors);
    const dataTiers = parseDataTiers(listAt(spec, "dataTiers", "spec", errors), "spec.dataTiers", errors);
    const view = parseGrantRules(spec, "spec", errors);
    if (errors.length > 0) return fail(errors);
    // `secretRoles` only when written, so a grant from before roles parses to what it did.
    const roles = rawRoles === undefined ? {} : { secretRoles };
    return ok({ name: name as string, spec: { capabilities, egress, secrets, ...roles, dataTiers, ...view } });
  } catch (e) {
    if (e instanceof SchemaChecksNotLoaded) throw e;
    return fail(unreadable(""));
  }
}
