/**
 * Shape checks for the values the deciders take from adapters. `effective`, `needsApproval`,
 * `planRollout` and the trust policy are typed to take parsed values, but an adapter may hand
 * them anything (a missing list, a `null` entry, a number where a host goes), and a decider that
 * throws stops the loop that called it. These checks are cheap (types and list lengths, no
 * pattern), so the deciders run them on every call and fail closed: a malformed manifest requests
 * nothing that can run, a malformed grant approves nothing.
 *
 * They check shapes, not validity: whether a host is canonical or a mount path clean is the
 * parsers' business (and compile checks mounts again).
 */
import { CAPS } from "./caps.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import { ImageRef } from "./image-ref.js";
import type { RolloutInput } from "./rollout.js";
import { CAPABILITIES, EMPTY_GRANT_SPEC } from "./types.js";
import type { GrantSpec, Manifest } from "./types.js";

type Item = (value: unknown) => boolean;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isCapability: Item = (v) => typeof v === "string" && (CAPABILITIES as readonly string[]).includes(v);
const isName: Item = (v) => typeof v === "string";
const isHost: Item = (v) =>
  isObject(v) && typeof v["host"] === "string" && Number.isInteger(v["port"]) && (v["port"] as number) >= 1 && (v["port"] as number) <= 65535;
const isMount: Item = (v) => isObject(v) && typeof v["name"] === "string" && typeof v["mountPath"] === "string";
const isRole: Item = (v) => isObject(v) && typeof v["role"] === "string" && typeof v["secret"] === "string";

function listProblem(obj: Record<string, unknown>, key: string, path: string, item: Item, what: string): FieldError | undefined {
  const list = obj[key];
  const at = join(path, key);
  if (!Array.isArray(list)) return fieldError(ErrorCode.InvalidType, at, `${key} must be a list`);
  if (list.length > CAPS.listItems) return fieldError(ErrorCode.TooLarge, at, `${key} has ${list.length} entries; at most ${CAPS.listItems} are allowed`);
  const bad = list.findIndex((v) => !item(v));
  return bad < 0 ? undefined : fieldError(ErrorCode.InvalidType, join(at, bad), `is not ${what}`);
}

/** `check(value)`, or InvalidType at `path` when reading the value throws (a getter, a proxy). */
function readable(path: string, what: string, check: () => FieldError | undefined): FieldError | undefined {
  try {
    return check();
  } catch {
    return fieldError(ErrorCode.InvalidType, path, `${what} could not be read`);
  }
}

/** The first way `value` is not shaped as a parsed {@link Manifest}, or undefined. Never throws. */
export function manifestShapeProblem(value: unknown, path = "manifest"): FieldError | undefined {
  return readable(path, "the manifest", () => {
    if (!isObject(value)) return fieldError(ErrorCode.InvalidType, path, "a manifest must be an object");
    return (
      listProblem(value, "capabilities", path, isCapability, "a known capability") ??
      listProblem(value, "egress", path, isHost, "an egress host {host, port}") ??
      listProblem(value, "secrets", path, isMount, "a Secret {name, mountPath}") ??
      listProblem(value, "dataTiers", path, isName, "a data tier name")
    );
  });
}

/** The first way `value` is not shaped as a parsed {@link GrantSpec}, or undefined. Never throws. */
export function grantShapeProblem(value: unknown, path = "grant"): FieldError | undefined {
  return readable(path, "the grant", () => {
    if (!isObject(value)) return fieldError(ErrorCode.InvalidType, path, "a grant must be an object");
    return (
      listProblem(value, "capabilities", path, isCapability, "a known capability") ??
      listProblem(value, "egress", path, isHost, "an egress host {host, port}") ??
      listProblem(value, "secrets", path, isName, "a Secret name") ??
      (value["secretRoles"] === undefined ? undefined : listProblem(value, "secretRoles", path, isRole, "a Secret role {role, secret}")) ??
      listProblem(value, "dataTiers", path, isName, "a data tier name")
    );
  });
}

/** True when `value` is shaped as a {@link Manifest}. */
export function isManifestShaped(value: unknown): value is Manifest {
  return manifestShapeProblem(value) === undefined;
}

/** True when `value` is shaped as a {@link GrantSpec}. */
export function isGrantShaped(value: unknown): value is GrantSpec {
  return grantShapeProblem(value) === undefined;
}

function wellFormedVersion<V>(v: V): V | null {
  try {
    return isObject(v) && v["image"] instanceof ImageRef && isManifestShaped(v["manifest"]) ? v : null;
  } catch {
    return null;
  }
}

/**
 * The planner's input with every malformed part replaced by what fails closed: a current or
 * previous version that is not shaped as one is absent, a malformed grant approves nothing,
 * deployable means exactly `true`.
 */
export function wellFormedRolloutInput(input: RolloutInput): RolloutInput {
  const nothing: RolloutInput = { current: null, currentDeployable: false, previous: null, grant: EMPTY_GRANT_SPEC };
  try {
    if (!isObject(input)) return nothing;
    return {
      ...input,
      current: wellFormedVersion(input.current),
      currentDeployable: input.currentDeployable === true,
      previous: wellFormedVersion(input.previous),
      grant: isGrantShaped(input.grant) ? input.grant : EMPTY_GRANT_SPEC,
    };
  } catch {
    return nothing;
  }
}
