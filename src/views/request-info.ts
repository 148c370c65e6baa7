/**
 * Kubernetes request attributes, exactly as kube-apiserver's `RequestInfoFactory` derives them
 * (apiserver `pkg/endpoints/request/requestinfo.go`, with the `api`/`apis` prefixes and
 * AuthorizeWithSelectors on): the verb from the method, or from the deprecated `/watch/` and
 * `/proxy/` path prefixes; namespaces as objects (`/api/v1/namespaces/x` is the namespace `x`
 * itself, in namespace `x`); subresources; `list`/`watch` by the `watch` parameter's first value;
 * a named list or watch only through `fieldSelector=metadata.name=`; `deletecollection`; and
 * everything else a non-resource request whose verb is the lower-case method. Tests:
 * request-info.test.ts holds kube-apiserver's own table.
 */
import { goParseInt64, parseRequestTarget } from "./go-url.js";
import type { RequestTarget, TargetProblem } from "./go-url.js";
import { parseFieldSelector, parseLabelSelector, requiresExactMatch } from "./selectors.js";

/** A request for an API resource or subresource. */
export interface ResourceAttributes {
  readonly kind: "resource";
  /** get, list, watch, create, update, patch, delete, deletecollection, proxy, or "" for other methods. */
  readonly verb: string;
  readonly apiPrefix: string;
  readonly apiGroup: string;
  readonly apiVersion: string;
  readonly namespace: string;
  readonly resource: string;
  readonly subresource: string;
  readonly name: string;
  /** The path's parts from the resource on: `[resource, name, subresource, …]`. */
  readonly parts: readonly string[];
  /** The decoded path. */
  readonly path: string;
  /** The raw `fieldSelector` of a list, watch or deletecollection; "" otherwise. */
  readonly fieldSelector: string;
  /** The raw `labelSelector` of a list, watch or deletecollection; "" otherwise. */
  readonly labelSelector: string;
}

/** Any other request: a path and the lower-case method. */
export interface NonResourceAttributes {
  readonly kind: "nonResource";
  readonly verb: string;
  readonly path: string;
}

/** What a request asks for, in Kubernetes' terms. */
export type RequestAttributes = ResourceAttributes | NonResourceAttributes;

/** Why a request has no attributes: its target is unreadable, or kube-apiserver refuses to resolve it. */
export type RequestInfoProblem = TargetProblem | "unresolvable";

const API_PREFIXES = new Set(["api", "apis"]);
const GROUPLESS_PREFIXES = new Set(["api"]);
const SPECIAL_VERBS = new Set(["proxy", "watch"]);
const SPECIAL_VERBS_NO_SUBRESOURCES = new Set(["proxy"]);
const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);
const VERBS_WITH_SELECTORS = new Set(["list", "watch", "deletecollection"]);

function splitPath(path: string): string[] {
  let start = 0;
  let end = path.length;
  while (start < end && path[start] === "/") start++;
  while (end > start && path[end - 1] === "/") end--;
  return start === end ? [] : path.slice(start, end).split("/");
}

function methodVerb(method: string): string {
  switch (method) {
    case "POST": return "create";
    case "GET":
    case "HEAD": return "get";
    case "PUT": return "update";
    case "PATCH": return "patch";
    case "DELETE": return "delete";
    default: return "";
  }
}

/** Convert_Slice_string_To_bool: only "false" and "0" (any case) are false. */
function goBool(values: readonly string[] | undefined): boolean {
  if (values === undefined || values.length === 0) return false;
  const v = (values[0] as string).toLowerCase();
  return v !== "false" && v !== "0";
}

/** Whether `ListOptions` decode from the query (the step kube-apiserver runs on an unnamed get). */
function listOptionsDecode(query: ReadonlyMap<string, readonly string[]>): { ok: boolean; fieldSelector?: string } {
  for (const key of ["limit", "timeoutSeconds"]) {
    const v = query.get(key);
    if (v !== undefined && goParseInt64(v[0] as string) === null) return { ok: false };
  }
  const labels = query.get("labelSelector");
  if (labels !== undefined && parseLabelSelector(labels[0] as string) === null) return { ok: false };
  const fields = query.get("fieldSelector");
  if (fields !== undefined && parseFieldSelector(fields[0] as string) === null) return { ok: false };
  return fields === undefined ? { ok: true } : { ok: true, fieldSelector: fields[0] as string };
}

/** apimachinery's IsValidPathSegmentName. */
function isPathSegmentName(name: string): boolean {
  return name !== "." && name !== ".." && !name.includes("/") && !name.includes("%");
}

/** The group and version of an API path, and the parts after them; null for a non-resource path. */
function apiOf(parts: readonly string[]): { apiPrefix: string; apiGroup: string; apiVersion: string; rest: string[] } | null {
  if (parts.length < 3 || !API_PREFIXES.has(parts[0] as string)) return null;
  const apiPrefix = parts[0] as string;
  if (GROUPLESS_PREFIXES.has(apiPrefix)) return { apiPrefix, apiGroup: "", apiVersion: parts[1] as string, rest: parts.slice(2) };
  // One part (the prefix) is consumed: "do we have four parts?"
  if (parts.length < 4) return null;
  return { apiPrefix, apiGroup: parts[1] as string, apiVersion: parts[2] as string, rest: parts.slice(3) };
}

/** The namespace of the parts, and the parts from the resource on (a namespace is itself the resource `namespaces`). */
function namespaceOf(parts: string[]): { namespace: string; parts: string[] } {
  if (parts[0] !== "namespaces" || parts.length < 2) return { namespace: "", parts };
  // A further part that is not a namespace subresource is a resource inside the namespace.
  const inside = parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] as string);
  return { namespace: parts[1] as string, parts: inside ? parts.slice(2) : parts };
}

/** An unnamed get: list or watch by the watch parameter, named only by a field selector that decodes. */
function listOrWatch(query: RequestTarget["query"]): { verb: string; name: string } {
  const options = listOptionsDecode(query);
  // A decoding error leaves the request unnamed; the watch parameter still counts.
  const verb = goBool(query.get("watch")) ? "watch" : "list";
  if (!options.ok || options.fieldSelector === undefined) return { verb, name: "" };
  const terms = parseFieldSelector(options.fieldSelector);
  const named = terms === null ? undefined : requiresExactMatch(terms, "metadata.name");
  return { verb, name: named !== undefined && isPathSegmentName(named) ? named : "" };
}

/** The verb from a `/watch/` or `/proxy/` prefix, or from the method; null when the prefix names nothing. */
function verbOf(method: string, rest: string[]): { verb: string; viaPrefix: boolean; rest: string[] } | null {
  if (!SPECIAL_VERBS.has(rest[0] as string)) return { verb: methodVerb(method), viaPrefix: false, rest };
  if (rest.length < 2) return null;
  return { verb: rest[0] as string, viaPrefix: true, rest: rest.slice(1) };
}

/** The raw selectors, kept only for the verbs that honour them and never on the path-prefix verbs. */
function selectorsOf(verb: string, viaPrefix: boolean, query: RequestTarget["query"]): { fieldSelector: string; labelSelector: string } {
  if (viaPrefix || !VERBS_WITH_SELECTORS.has(verb)) return { fieldSelector: "", labelSelector: "" };
  return { fieldSelector: query.get("fieldSelector")?.[0] ?? "", labelSelector: query.get("labelSelector")?.[0] ?? "" };
}

/** The attributes of an already-read target (see {@link requestInfo}). */
export function requestInfoFromTarget(method: string, target: RequestTarget): { ok: true; value: RequestAttributes } | { ok: false; problem: RequestInfoProblem } {
  const path = target.path;
  const api = apiOf(splitPath(path));
  if (api === null) return { ok: true, value: { kind: "nonResource", verb: method.toLowerCase(), path } };
  const v = verbOf(method, api.rest);
  if (v === null) return { ok: false, problem: "unresolvable" };
  let verb = v.verb;
  const { namespace, parts } = namespaceOf(v.rest);
  // parts: resource/name/subresource/anything else, uninterpreted.
  const resource = parts[0] ?? "";
  let name = parts[1] ?? "";
  const subresource = parts.length >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.has(verb) ? (parts[2] as string) : "";
  if (name === "" && verb === "get") ({ verb, name } = listOrWatch(target.query));
  if (name === "" && verb === "delete") verb = "deletecollection";
  const { apiPrefix, apiGroup, apiVersion } = api;
  return { ok: true, value: { kind: "resource", verb, apiPrefix, apiGroup, apiVersion, namespace, resource, subresource, name, parts, path, ...selectorsOf(verb, v.viaPrefix, target.query) } };
}

/**
 * The Kubernetes attributes of a request: `method` as sent (upper case), `target` its raw
 * request-target (`/api/v1/pods?watch=1`). Fails when the target cannot be read as Go reads it,
 * or when kube-apiserver could not resolve it either (`/api/v1/watch` with nothing after it).
 */
export function requestInfo(method: string, target: string): { ok: true; value: RequestAttributes } | { ok: false; problem: RequestInfoProblem } {
  const t = parseRequestTarget(target);
  if (!t.ok) return t;
  return requestInfoFromTarget(method, t.value);
}
