/**
 * The scope algebra of PolicyRules (docs/adr/0021): the effective rules of a view plugin are the
 * intersection of what its manifest requests and what its grant approves, and what the manifest
 * requests beyond the grant is pending approval.
 *
 * A rule allows a set of requests that is a product: verb × API group × (resource, subresource) ×
 * name for resource requests, verb × path for non-resource requests, each factor a union of
 * patterns. The intersection of two products is the product of the factors' intersections, and
 * every pairwise intersection of patterns is again a pattern of the same language (`*` ∧ p = p,
 * `*\/s` ∧ `r/s` = `r/s`, `/a*` ∧ `/a/b*` = `/a/b*`, …), so {@link intersectRules} is exact: a
 * request is allowed by the result if and only if both inputs allow it.
 *
 * Coverage ("does the grant allow everything this rule allows?") is decided cell by cell: each
 * factor of the rule is split into the classes of values that the grant's patterns cannot tell
 * apart, and each cell must be allowed by some grant rule. The work is bounded
 * ({@link COVERAGE_BUDGET}); past the bound a rule counts as not covered, so it waits for the
 * owner's approval (fail closed) rather than stalling the planner.
 */
import {
  WILDCARD,
  apiGroupMatches,
  nonResourceURLMatches,
  resourceMatches,
  resourceNameMatches,
  sortRules,
  verbMatches,
} from "./rbac.js";
import type { PolicyRule } from "./rbac.js";

/** The most cells {@link uncoveredRules} examines for one requested rule before refusing to decide. */
export const COVERAGE_BUDGET = 100_000;

const EMPTY: readonly string[] = Object.freeze([]);

// ---- intersections of one factor -----------------------------------------------------------------

/** Verbs or API groups: `*` is every value, anything else a literal. */
function meetFlat(a: readonly string[], b: readonly string[]): string[] {
  const aAll = a.includes(WILDCARD);
  const bAll = b.includes(WILDCARD);
  if (aAll && bAll) return [WILDCARD];
  if (aAll) return [...new Set(b)];
  if (bAll) return [...new Set(a)];
  const bs = new Set(b);
  return [...new Set(a.filter((x) => bs.has(x)))];
}

/** Resource names: an empty list is every name; null is no name at all (the rules share none). */
function meetNames(a: readonly string[], b: readonly string[]): string[] | null {
  if (a.length === 0) return [...new Set(b)];
  if (b.length === 0) return [...new Set(a)];
  const bs = new Set(b);
  const both = [...new Set(a.filter((x) => bs.has(x)))];
  return both.length === 0 ? null : both;
}

type ResourcePattern = { kind: "all" } | { kind: "sub"; sub: string } | { kind: "literal"; value: string } | { kind: "none" };

function resourcePattern(p: string): ResourcePattern {
  if (p === WILDCARD) return { kind: "all" };
  if (p.startsWith("*/")) return p.length > 2 ? { kind: "sub", sub: p.slice(2) } : { kind: "none" };
  return { kind: "literal", value: p };
}

/** The (resource, subresource) a literal names, or null when no request can have it. */
function literalPair(value: string): [string, string] | null {
  const parts = value.split("/");
  if (parts.length === 1) return [value, ""];
  if (parts.length === 2 && parts[1] !== "") return [parts[0] as string, parts[1] as string];
  return null;
}

function meetResource(p: string, q: string): string | null {
  const a = resourcePattern(p);
  const b = resourcePattern(q);
  if (a.kind === "none" || b.kind === "none") return null;
  if (a.kind === "all") return q;
  if (b.kind === "all") return p;
  if (a.kind === "sub" && b.kind === "sub") return a.sub === b.sub ? p : null;
  if (a.kind === "literal" && b.kind === "literal") return a.value === b.value ? p : null;
  const sub = a.kind === "sub" ? a.sub : (b as { sub: string }).sub;
  const literal = a.kind === "literal" ? a.value : (b as { value: string }).value;
  return literalPair(literal)?.[1] === sub ? literal : null;
}

/** Resources: every pairwise intersection, with patterns another one already covers dropped. */
function meetResources(a: readonly string[], b: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of a) for (const q of b) {
    const m = meetResource(p, q);
    if (m !== null) out.add(m);
  }
  if (out.has(WILDCARD)) return [WILDCARD];
  const subs = new Set([...out].filter((p) => p.startsWith("*/")).map((p) => p.slice(2)));
  return [...out].filter((p) => p.startsWith("*/") || !subs.has(literalPair(p)?.[1] ?? "\u0000"));
}

function urlPrefix(u: string): string | null {
  if (!u.endsWith(WILDCARD)) return null;
  let end = u.length;
  while (end > 0 && u[end - 1] === WILDCARD) end--;
  return u.slice(0, end);
}

function prefixPattern(prefix: string): string {
  return prefix === "" ? WILDCARD : `${prefix}${WILDCARD}`;
}

function meetURL(p: string, q: string): string | null {
  const a = urlPrefix(p);
  const b = urlPrefix(q);
  if (a !== null && b !== null) return a.startsWith(b) ? prefixPattern(a) : b.startsWith(a) ? prefixPattern(b) : null;
  if (a !== null) return q.startsWith(a) ? q : null;
  if (b !== null) return p.startsWith(b) ? p : null;
  return p === q ? p : null;
}

/** Non-resource URLs: every pairwise intersection, with URLs a prefix already covers dropped. */
function meetURLs(a: readonly string[], b: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of a) for (const q of b) {
    const m = meetURL(p, q);
    if (m !== null) out.add(m);
  }
  const prefixes = [...out].map(urlPrefix).filter((x): x is string => x !== null);
  return [...out].filter((u) => {
    const own = urlPrefix(u);
    return !prefixes.some((pre) => (own === null ? u.startsWith(pre) : own !== pre && own.startsWith(pre)));
  });
}

// ---- intersections of rules --------------------------------------------------------------------------

function rule(parts: Partial<PolicyRule>): PolicyRule {
  return { apiGroups: EMPTY, resources: EMPTY, verbs: EMPTY, resourceNames: EMPTY, nonResourceURLs: EMPTY, ...parts };
}

/**
 * The rules allowing exactly the requests both `a` and `b` allow: at most one resource rule and one
 * non-resource rule (a rule that had both kinds, which parsing refuses, is read as two).
 */
export function intersectRule(a: PolicyRule, b: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  const verbs = meetFlat(a.verbs, b.verbs);
  if (verbs.length === 0) return out;
  if (a.resources.length > 0 && b.resources.length > 0) {
    const apiGroups = meetFlat(a.apiGroups, b.apiGroups);
    const resources = meetResources(a.resources, b.resources);
    const resourceNames = meetNames(a.resourceNames, b.resourceNames);
    if (apiGroups.length > 0 && resources.length > 0 && resourceNames !== null) out.push(rule({ verbs, apiGroups, resources, resourceNames }));
  }
  if (a.nonResourceURLs.length > 0 && b.nonResourceURLs.length > 0) {
    const nonResourceURLs = meetURLs(a.nonResourceURLs, b.nonResourceURLs);
    if (nonResourceURLs.length > 0) out.push(rule({ verbs, nonResourceURLs }));
  }
  return out;
}

/** Whether `outer` alone allows every request `inner` allows (a cheap, factor-wise test). */
function subsumes(outer: PolicyRule, inner: PolicyRule): boolean {
  const flat = (o: readonly string[], i: readonly string[]): boolean => o.includes(WILDCARD) || i.every((x) => x !== WILDCARD && o.includes(x));
  if (!flat(outer.verbs, inner.verbs)) return false;
  if (inner.resources.length > 0) {
    if (!flat(outer.apiGroups, inner.apiGroups)) return false;
    if (!inner.resources.every((r) => outer.resources.some((o) => meetResource(o, r) === r))) return false;
    if (outer.resourceNames.length > 0 && (inner.resourceNames.length === 0 || !inner.resourceNames.every((n) => outer.resourceNames.includes(n)))) return false;
  }
  if (inner.nonResourceURLs.length > 0 && !inner.nonResourceURLs.every((u) => outer.nonResourceURLs.some((o) => meetURL(o, u) === u))) return false;
  return true;
}

/**
 * The effective rules: every request they allow, both `requested` and `granted` allow, and every
 * request both allow, they allow. Normalized, without a rule another one subsumes, sorted.
 */
export function intersectRules(requested: readonly PolicyRule[], granted: readonly PolicyRule[]): PolicyRule[] {
  const all: PolicyRule[] = [];
  for (const r of requested) for (const g of granted) all.push(...intersectRule(r, g));
  const rules = sortRules(all);
  // Pruning subsumed rules is for readability only (it changes no decision): skip it when large.
  if (rules.length > 512) return rules;
  return rules.filter((r, i) => !rules.some((o, j) => j !== i && subsumes(o, r) && (!subsumes(r, o) || j < i)));
}

// ---- coverage ------------------------------------------------------------------------------------

/** A value no pattern of `rules` names, so it stands for "anything else". */
function freshValue(rules: readonly PolicyRule[]): string {
  const used = new Set<string>();
  for (const r of rules) for (const xs of [r.verbs, r.apiGroups, r.resources, r.resourceNames, r.nonResourceURLs]) for (const x of xs) used.add(x);
  for (let c = 0; ; c++) {
    const candidate = String.fromCharCode(c);
    if (![...used].some((u) => u.includes(candidate))) return candidate;
  }
}

type Cell = string | readonly [string, string];

interface Dimension {
  /** The representatives of the values `rule` allows in this factor, relative to `against`. */
  cells(rule: PolicyRule, against: readonly PolicyRule[], fresh: string): Cell[];
  matches(rule: PolicyRule, cell: Cell): boolean;
}

function flatDimension(field: "verbs" | "apiGroups", matcher: (r: PolicyRule, v: string) => boolean): Dimension {
  return {
    cells(r, against, fresh) {
      if (!r[field].includes(WILDCARD)) return [...r[field]];
      const literals = new Set<string>();
      for (const g of against) for (const v of g[field]) if (v !== WILDCARD) literals.add(v);
      return [...literals, fresh];
    },
    matches: (r, cell) => matcher(r, cell as string),
  };
}

const verbs = flatDimension("verbs", verbMatches);
const apiGroups = flatDimension("apiGroups", apiGroupMatches);

const resources: Dimension = {
  cells(r, against, fresh) {
    const out = new Map<string, readonly [string, string]>();
    const add = (pair: readonly [string, string]): void => {
      out.set(`${pair[0]}\u0000${pair[1]}`, pair);
    };
    const literals: Array<[string, string]> = [];
    const subs = new Set<string>();
    for (const g of against) for (const p of g.resources) {
      const pat = resourcePattern(p);
      if (pat.kind === "literal") {
        const pair = literalPair(pat.value);
        if (pair !== null) literals.push(pair);
      } else if (pat.kind === "sub") subs.add(pat.sub);
    }
    for (const p of r.resources) {
      const pat = resourcePattern(p);
      if (pat.kind === "all") {
        for (const l of literals) add(l);
        for (const s of subs) add([fresh, s]);
        add([fresh, ""]);
        add([fresh, fresh]);
      } else if (pat.kind === "sub") {
        for (const l of literals) if (l[1] === pat.sub) add(l);
        add([fresh, pat.sub]);
      } else if (pat.kind === "literal") {
        const pair = literalPair(pat.value);
        if (pair !== null) add(pair);
      }
    }
    return [...out.values()];
  },
  matches: (r, cell) => resourceMatches(r, (cell as readonly [string, string])[0], (cell as readonly [string, string])[1]),
};

const resourceNames: Dimension = {
  cells(r, against, fresh) {
    if (r.resourceNames.length > 0) return [...r.resourceNames];
    const names = new Set<string>();
    for (const g of against) for (const n of g.resourceNames) names.add(n);
    return [...names, fresh];
  },
  matches: (r, cell) => resourceNameMatches(r, cell as string),
};

const urls: Dimension = {
  cells(r, against, fresh) {
    const out = new Set<string>();
    const literals: string[] = [];
    const prefixes: string[] = [];
    for (const g of against) for (const u of g.nonResourceURLs) {
      const pre = urlPrefix(u);
      if (pre === null) literals.push(u);
      else prefixes.push(pre);
    }
    for (const u of r.nonResourceURLs) {
      const pre = urlPrefix(u);
      if (pre === null) {
        out.add(u);
        continue;
      }
      for (const l of literals) if (l.startsWith(pre)) out.add(l);
      for (const p of prefixes) if (p.startsWith(pre)) out.add(p + fresh);
      out.add(pre + fresh);
    }
    return [...out];
  },
  matches: (r, cell) => nonResourceURLMatches(r, cell as string),
};

/** What one coverage question shares across its cells: the work left, memoized answers, rule ids. */
interface Search {
  left: number;
  readonly memo: Map<string, boolean>;
  readonly ids: Map<PolicyRule, number>;
  readonly fresh: string;
}

/** Whether every cell of `rule` along `dims[from..]` is allowed by some rule of `candidates`. */
function coveredFrom(rule: PolicyRule, dims: readonly Dimension[], from: number, candidates: readonly PolicyRule[], s: Search): boolean {
  if (candidates.length === 0) return false;
  if (from === dims.length) return true;
  const dim = dims[from] as Dimension;
  for (const cell of dim.cells(rule, candidates, s.fresh)) {
    if (--s.left < 0) return false;
    const next = candidates.filter((g) => dim.matches(g, cell));
    // The rest of the search depends only on the level and the rules still standing.
    const key = `${from}:${next.map((g) => s.ids.get(g)).join(",")}`;
    let ok = s.memo.get(key);
    if (ok === undefined) {
      ok = coveredFrom(rule, dims, from + 1, next, s);
      s.memo.set(key, ok);
    }
    if (!ok) return false;
  }
  return true;
}

/** Whether the `granted` rules allow every request `rule` allows (false, fail closed, past `budget` cells). */
export function ruleCovered(rule: PolicyRule, granted: readonly PolicyRule[], budget = COVERAGE_BUDGET): boolean {
  if (granted.some((g) => subsumes(g, rule))) return true;
  const ids = new Map(granted.map((g, i) => [g, i] as const));
  const fresh = freshValue([rule, ...granted]);
  let left = budget;
  const ask = (dims: readonly Dimension[], candidates: readonly PolicyRule[]): boolean => {
    const s: Search = { left, memo: new Map(), ids, fresh };
    const ok = coveredFrom(rule, dims, 0, candidates, s);
    left = s.left;
    return ok;
  };
  if (rule.resources.length > 0 && !ask([verbs, apiGroups, resources, resourceNames], granted.filter((g) => g.resources.length > 0))) return false;
  if (rule.nonResourceURLs.length > 0 && !ask([verbs, urls], granted.filter((g) => g.nonResourceURLs.length > 0))) return false;
  return true;
}

/** The requested rules the grant does not wholly allow: what waits for the owner's approval, sorted. */
export function uncoveredRules(requested: readonly PolicyRule[], granted: readonly PolicyRule[]): PolicyRule[] {
  return sortRules(requested.filter((r) => !ruleCovered(r, granted)));
}
