/**
 * PolicyRules (seed 002, "Where the scope comes from"): what a view plugin's manifest requests in
 * `rbac` and what its grant approves, in the shape of Kubernetes' `rbac/v1` PolicyRule. Parsing is
 * strict and returns every problem at once with its path (`manifest.rbac[0].verbs[1]`); lengths are
 * capped before any pattern is tried, so no vendor-supplied rule list costs more than the caps allow.
 *
 * The field matchers at the end are Kubernetes' own semantics (`pkg/apis/rbac/v1/
 * evaluation_helpers.go`): the scope algebra of `rbac-scope.ts` and the gateway's matcher build on
 * them, so both read a rule the way the cluster does.
 */
import { CAPS, shown } from "./caps.js";
import { compareStrings } from "./effective.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import { isPlainObject, ownValue } from "./json.js";

/**
 * One rule: the verbs allowed on the named API groups' resources (optionally only the objects
 * named in `resourceNames`), or on non-resource URLs. After parsing every list is present (absent
 * is empty) and sorted; a rule is either a resource rule or a non-resource rule, never both.
 */
export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  /** Empty: every name. Otherwise only requests naming one of these objects. */
  readonly resourceNames: readonly string[];
  readonly nonResourceURLs: readonly string[];
}

/** A rule as Kubernetes writes it: empty lists omitted, `verbs` always present. */
export interface PolicyRuleJSON {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** Caps checked before any other check, each a field error with its path (never a crash). */
export const RBAC_LIMITS = {
  /** Rules in one manifest or grant (Kubernetes' own roles rarely pass a dozen). */
  rules: CAPS.policyRules,
  /** Entries in one list of one rule. */
  entries: CAPS.policyRuleEntries,
  /** Characters of a verb. */
  verb: CAPS.policyVerb,
  /** Characters of an API group, resource or resource name (a DNS subdomain's 253). */
  name: CAPS.policyName,
  /** Characters of a non-resource URL. */
  url: CAPS.policyUrl,
} as const;

/** The wildcard of verbs, API groups, resources and non-resource URLs. */
export const WILDCARD = "*";

const RULE_FIELDS = ["apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"] as const;
type RuleField = (typeof RULE_FIELDS)[number];

const VERB = /^[a-z][a-z0-9-]*$/;
// DNS subdomain (an API group), or the empty string of the core group.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// A resource or subresource: what kube-apiserver routes as one path segment (lower-case plurals,
// `portforward`, `status`, CRD plurals with dots are not allowed by CRDs but by aggregated APIs).
const SEGMENT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
// Printable ASCII without space, `?`, `#` and `*` (the one `*` allowed is checked apart).
const URL_CHARS = /^\/[!-"$-)+->@-~]*$/;

type Check = (value: string) => string | null;

const checks: Record<RuleField, Check> = {
  verbs(v) {
    if (v === WILDCARD) return null;
    if (v.length > RBAC_LIMITS.verb) return `a verb is at most ${RBAC_LIMITS.verb} characters`;
    return VERB.test(v) ? null : "a verb is `*` or lower-case letters, digits and '-', starting with a letter (get, list, watch, …)";
  },
  apiGroups(v) {
    if (v === WILDCARD || v === "") return null;
    return DNS_SUBDOMAIN.test(v) ? null : "an API group is `*`, \"\" (the core group) or a DNS subdomain such as cert-manager.io";
  },
  resources(v) {
    if (v === WILDCARD) return null;
    const slash = v.indexOf("/");
    const resource = slash < 0 ? v : v.slice(0, slash);
    const sub = slash < 0 ? null : v.slice(slash + 1);
    if (sub !== null && (sub === WILDCARD || sub.includes("/"))) {
      return "Kubernetes has no `<resource>/*` wildcard: name each subresource (pods/log), or use */<subresource> or *";
    }
    if (resource !== WILDCARD && !SEGMENT.test(resource)) return "a resource is lower-case letters, digits, '-' and '.', like pods or certificates";
    if (resource === WILDCARD && sub === null) return null;
    if (sub !== null && !SEGMENT.test(sub)) return "a subresource is lower-case letters, digits, '-' and '.', like log or status";
    return null;
  },
  resourceNames(v) {
    if (v === WILDCARD) return "resourceNames has no wildcard: leave the list empty to allow every name";
    if (v === "") return "a resource name must not be empty";
    if (v === "." || v === ".." || v.includes("/") || v.includes("%")) return "a resource name is one URL path segment: not . or .., no '/' or '%'";
    // eslint-disable-next-line no-control-regex
    return /[\u0000-\u0020\u007f]/.test(v) ? "a resource name has no spaces or control characters" : null;
  },
  nonResourceURLs(v) {
    if (v === WILDCARD) return null;
    if (v.length > RBAC_LIMITS.url) return `a non-resource URL is at most ${RBAC_LIMITS.url} characters`;
    const body = v.endsWith(WILDCARD) ? v.slice(0, -1) : v;
    if (!URL_CHARS.test(body)) return "a non-resource URL is a path starting with '/', printable ASCII without spaces, '?' or '#', with at most one '*' and only at its end";
    return null;
  },
};

function maxLength(field: RuleField): number {
  return field === "nonResourceURLs" ? RBAC_LIMITS.url : field === "verbs" ? RBAC_LIMITS.verb : RBAC_LIMITS.name;
}

function readList(obj: Record<string, unknown>, field: RuleField, path: string, errors: FieldError[]): string[] | null {
  const value = ownValue(obj, field);
  const at = join(path, field);
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    errors.push(fieldError(ErrorCode.InvalidType, at, `${field} must be a list of strings`));
    return null;
  }
  if (value.length > RBAC_LIMITS.entries) {
    errors.push(fieldError(ErrorCode.RbacLimitExceeded, at, `${field} lists at most ${RBAC_LIMITS.entries} entries, not ${value.length}`));
    return null;
  }
  const out: string[] = [];
  const seen = new Set<string>();
  let good = true;
  value.forEach((item, i) => {
    const itemAt = join(at, i);
    if (typeof item !== "string") {
      errors.push(fieldError(ErrorCode.InvalidType, itemAt, "must be a string"));
      good = false;
      return;
    }
    if (item.length > maxLength(field)) {
      errors.push(fieldError(ErrorCode.RbacLimitExceeded, itemAt, `is at most ${maxLength(field)} characters, not ${item.length}`));
      good = false;
      return;
    }
    const problem = checks[field](item);
    if (problem !== null) {
      errors.push(fieldError(ErrorCode.InvalidRbacRule, itemAt, problem));
      good = false;
    } else if (seen.has(item)) {
      errors.push(fieldError(ErrorCode.Duplicate, itemAt, `${JSON.stringify(item)} is listed more than once`));
      good = false;
    }
    seen.add(item);
    out.push(item);
  });
  return good ? out.sort(compareStrings) : null;
}

/**
 * Parses one rule with Kubernetes' own rule checks (`ValidatePolicyRule`): at least one verb; a
 * non-resource rule names no API group, resource or resource name; a resource rule names at least
 * one API group and one resource. Plus ours: strings in Kubernetes' formats, no duplicates, no
 * `<resource>/*` (Kubernetes reads it as a literal subresource named `*`, never as a wildcard).
 */
export function parsePolicyRule(value: unknown, path: string, errors: FieldError[]): PolicyRule | null {
  return unlessUnreadable(path, errors, () => readPolicyRule(value, path, errors));
}

/** `read()`, or null with InvalidType at `path` when reading the value throws (a getter, a proxy): never a throw. */
function unlessUnreadable<T>(path: string, errors: FieldError[], read: () => T | null): T | null {
  try {
    return read();
  } catch {
    errors.push(fieldError(ErrorCode.InvalidType, path, "the rules could not be read"));
    return null;
  }
}

function readPolicyRule(value: unknown, path: string, errors: FieldError[]): PolicyRule | null {
  if (!isPlainObject(value)) {
    errors.push(fieldError(ErrorCode.InvalidType, path, "a rule must be an object"));
    return null;
  }
  const before = errors.length;
  for (const key of Object.keys(value)) {
    if (!(RULE_FIELDS as readonly string[]).includes(key)) errors.push(fieldError(ErrorCode.UnknownField, join(path, shown(key)), `unknown field "${shown(key)}"`));
  }
  const lists: Partial<Record<RuleField, string[]>> = {};
  for (const f of RULE_FIELDS) {
    const list = readList(value, f, path, errors);
    if (list !== null) lists[f] = list;
  }
  errors.push(...ruleShapeProblems(lists, path));
  const { apiGroups, resources, verbs, resourceNames, nonResourceURLs } = lists;
  if (errors.length > before || apiGroups === undefined || resources === undefined || verbs === undefined || resourceNames === undefined || nonResourceURLs === undefined) return null;
  return { apiGroups, resources, verbs, resourceNames, nonResourceURLs };
}

/** Kubernetes' rule shape, over the lists that read well (a list that did not is already an error). */
function ruleShapeProblems(lists: Partial<Record<RuleField, string[]>>, path: string): FieldError[] {
  const out: FieldError[] = [];
  const empty = (f: RuleField): boolean => lists[f]?.length === 0;
  const some = (f: RuleField): boolean => (lists[f]?.length ?? 0) > 0;
  if (empty("verbs")) out.push(fieldError(ErrorCode.Required, join(path, "verbs"), "a rule needs at least one verb"));
  // Unreadable URLs: which kind of rule it meant to be is unknown, so nothing more is said.
  if (lists.nonResourceURLs === undefined) return out;
  if (some("nonResourceURLs")) {
    if (some("apiGroups") || some("resources") || some("resourceNames")) {
      out.push(fieldError(ErrorCode.InvalidRbacRule, join(path, "nonResourceURLs"), "a rule applies to resources or to non-resource URLs, not both"));
    }
    return out;
  }
  if (empty("apiGroups")) out.push(fieldError(ErrorCode.Required, join(path, "apiGroups"), "a resource rule needs at least one API group (\"\" is the core group)"));
  if (empty("resources")) out.push(fieldError(ErrorCode.Required, join(path, "resources"), "a resource rule needs at least one resource"));
  return out;
}

/**
 * Parses the `rbac` list of a manifest or grant (absent is empty): at most {@link RBAC_LIMITS}.rules
 * rules, each valid, none repeated. Appends every problem to `errors`; returns the rules sorted, or
 * null when any is invalid.
 */
export function parsePolicyRules(value: unknown, path: string, errors: FieldError[]): PolicyRule[] | null {
  return unlessUnreadable(path, errors, () => readPolicyRules(value, path, errors));
}

function readPolicyRules(value: unknown, path: string, errors: FieldError[]): PolicyRule[] | null {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    errors.push(fieldError(ErrorCode.InvalidType, path, "rbac must be a list of rules"));
    return null;
  }
  if (value.length > RBAC_LIMITS.rules) {
    errors.push(fieldError(ErrorCode.RbacLimitExceeded, path, `rbac lists at most ${RBAC_LIMITS.rules} rules, not ${value.length}`));
    return null;
  }
  const out: PolicyRule[] = [];
  const seen = new Map<string, number>();
  let good = true;
  value.forEach((item, i) => {
    const at = join(path, i);
    const rule = parsePolicyRule(item, at, errors);
    if (rule === null) {
      good = false;
      return;
    }
    const key = ruleKey(rule);
    const first = seen.get(key);
    if (first !== undefined) {
      errors.push(fieldError(ErrorCode.Duplicate, at, `the rule repeats ${join(path, first)}`));
      good = false;
      return;
    }
    seen.set(key, i);
    out.push(rule);
  });
  return good ? sortRules(out) : null;
}

/** A stable text key of a rule (its lists sorted), for sets and sorting. */
export function ruleKey(rule: PolicyRule): string {
  return normalizedKey(normalizeRule(rule));
}

function normalizedKey(rule: PolicyRule): string {
  return JSON.stringify(RULE_FIELDS.map((f) => rule[f]));
}

/** A rule with every list sorted and deduplicated: fresh arrays. */
export function normalizeRule(rule: PolicyRule): PolicyRule {
  const norm = (xs: readonly string[]): string[] => [...new Set(xs)].sort(compareStrings);
  return {
    apiGroups: norm(rule.apiGroups),
    resources: norm(rule.resources),
    verbs: norm(rule.verbs),
    resourceNames: norm(rule.resourceNames),
    nonResourceURLs: norm(rule.nonResourceURLs),
  };
}

/** Normalized rules, duplicates removed, sorted by {@link ruleKey}. */
export function sortRules(rules: Iterable<PolicyRule>): PolicyRule[] {
  const byKey = new Map<string, PolicyRule>();
  for (const r of rules) {
    const n = normalizeRule(r);
    byKey.set(normalizedKey(n), n);
  }
  return [...byKey.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, r]) => r);
}

/** Whether two rule lists hold the same rules (order and list order ignored). */
export function sameRules(a: readonly PolicyRule[] | undefined, b: readonly PolicyRule[] | undefined): boolean {
  const left = sortRules(a ?? []).map(ruleKey);
  const right = sortRules(b ?? []).map(ruleKey);
  return left.length === right.length && left.every((k, i) => k === right[i]);
}

/** Kubernetes' JSON of a rule: empty lists omitted, `verbs` always written. */
export function ruleToJSON(rule: PolicyRule): PolicyRuleJSON {
  const out: PolicyRuleJSON = { verbs: [...rule.verbs] };
  if (rule.apiGroups.length > 0) out.apiGroups = [...rule.apiGroups];
  if (rule.resources.length > 0) out.resources = [...rule.resources];
  if (rule.resourceNames.length > 0) out.resourceNames = [...rule.resourceNames];
  if (rule.nonResourceURLs.length > 0) out.nonResourceURLs = [...rule.nonResourceURLs];
  return out;
}

/** Kubernetes' JSON of rules, sorted. */
export function rulesToJSON(rules: readonly PolicyRule[]): PolicyRuleJSON[] {
  return sortRules(rules).map(ruleToJSON);
}

// ---- Kubernetes' field matchers (evaluation_helpers.go) -------------------------------------------

/** `*` or the verb itself. */
export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.some((v) => v === WILDCARD || v === verb);
}

/** `*` or the group itself (`""` is the core group). */
export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return rule.apiGroups.some((g) => g === WILDCARD || g === group);
}

/**
 * `*`; or the combined resource (`pods`, `pods/log`) exactly; or, for a request of a subresource,
 * `*\/<subresource>`. Nothing else: `pods` does not cover `pods/log`, and `pods/*` covers only a
 * subresource literally named `*`.
 */
export function resourceMatches(rule: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource === "" ? resource : `${resource}/${subresource}`;
  return rule.resources.some(
    (r) =>
      r === WILDCARD ||
      r === combined ||
      (subresource !== "" && r.length === subresource.length + 2 && r.startsWith("*/") && r.endsWith(subresource)),
  );
}

/** No names listed: every name (and none). Otherwise the request's name, exactly. */
export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  return rule.resourceNames.length === 0 || rule.resourceNames.includes(name);
}

/** `*`; the path exactly; or a prefix written with trailing `*`s. */
export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  return rule.nonResourceURLs.some((u) => {
    if (u === WILDCARD || u === path) return true;
    if (!u.endsWith(WILDCARD)) return false;
    let end = u.length;
    while (end > 0 && u[end - 1] === WILDCARD) end--;
    return path.startsWith(u.slice(0, end));
  });
}
