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

/** The attributes of an already-read target (see {@link requestInfo}). */
export function requestInfoFromTarget(method: string, target: RequestTarget): { ok: true; value: RequestAttributes } | { ok: false; problem: RequestInfoProblem } {
  const path = target.path;
  const nonResource = (): { ok: true; value: NonResourceAttributes } => ({ ok: true, value: { kind: "nonResource", verb: method.toLowerCase(), path } });
  let parts = splitPath(path);
  if (parts.length < 3 || !API_PREFIXES.has(parts[0] as string)) return nonResource();
  const apiPrefix = parts[0] as string;
  parts = parts.slice(1);
  let apiGroup = "";
  if (!GROUPLESS_PREFIXES.has(apiPrefix)) {
    if (parts.length < 3) return nonResource();
    apiGroup = parts[0] as string;
    parts = parts.slice(1);
  }
  const apiVersion = parts[0] as string;
  parts = parts.slice(1);

  let verb: string;
  let verbViaPathPrefix = false;
  if (SPECIAL_VERBS.has(parts[0] as string)) {
    if (parts.length < 2) return { ok: false, problem: "unresolvable" };
    verb = parts[0] as string;
    parts = parts.slice(1);
    verbViaPathPrefix = true;
  } else {
    verb = methodVerb(method);
  }

  let namespace = "";
  if (parts[0] === "namespaces") {
    if (parts.length > 1) {
      namespace = parts[1] as string;
      // A further part that is not a namespace subresource is a resource inside the namespace.
      if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] as string)) parts = parts.slice(2);
    }
  }

  let resource = "";
  let subresource = "";
  let name = "";
  if (parts.length >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.has(verb)) subresource = parts[2] as string;
  if (parts.length >= 2) name = parts[1] as string;
  if (parts.length >= 1) resource = parts[0] as string;

  if (name === "" && verb === "get") {
    const options = listOptionsDecode(target.query);
    // A decoding error leaves the request unnamed; the watch parameter still counts.
    verb = goBool(target.query.get("watch")) ? "watch" : "list";
    if (options.ok && options.fieldSelector !== undefined) {
      const terms = parseFieldSelector(options.fieldSelector);
      const named = terms === null ? undefined : requiresExactMatch(terms, "metadata.name");
      if (named !== undefined && isPathSegmentName(named)) name = named;
    }
  }
  if (name === "" && verb === "delete") verb = "deletecollection";

  let fieldSelector = "";
  let labelSelector = "";
  // Selectors are authorized only where they are honoured: not on the deprecated path-prefix verbs.
  if (!verbViaPathPrefix && VERBS_WITH_SELECTORS.has(verb)) {
    fieldSelector = target.query.get("fieldSelector")?.[0] ?? "";
    labelSelector = target.query.get("labelSelector")?.[0] ?? "";
  }

  return {
    ok: true,
    value: { kind: "resource", verb, apiPrefix, apiGroup, apiVersion, namespace, resource, subresource, name, parts, path, fieldSelector, labelSelector },
  };
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
