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
 * ({@link COVERAGE_BUDGET} cells per call); past the bound a rule counts as not covered, so it
 * waits for the owner's approval (fail closed) rather than stalling the planner.
 */
import { WILDCARD, nonResourceURLMatches, resourceMatches, sortRules } from "./rbac.js";
import type { PolicyRule } from "./rbac.js";

/**
 * The most cells one call of {@link uncoveredRules} examines, over all its rules, before counting
 * the rules it has not decided as not covered: a vendor cannot multiply the work by adding rules.
 */
export const COVERAGE_BUDGET = 20_000;

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

/** A resource list by kind of pattern: `*`, the subresources of `*\/s`, the literals. */
interface ResourceSet {
  readonly all: boolean;
  readonly subs: ReadonlySet<string>;
  readonly literals: ReadonlySet<string>;
}

const resourceSets = new WeakMap<readonly string[], ResourceSet>();

/** The subresource a literal names ("" for none), or undefined when no request can have it. */
function subOf(x: string): string | undefined {
  const i = x.indexOf("/");
  if (i < 0) return "";
  if (x.indexOf("/", i + 1) >= 0 || i === x.length - 1) return undefined;
  return x.slice(i + 1);
}

function resourceSet(list: readonly string[]): ResourceSet {
  const hit = resourceSets.get(list);
  if (hit !== undefined) return hit;
  let all = false;
  const subs = new Set<string>();
  const literals = new Set<string>();
  for (const p of list) {
    const pat = resourcePattern(p);
    if (pat.kind === "all") all = true;
    else if (pat.kind === "sub") subs.add(pat.sub);
    else if (pat.kind === "literal") literals.add(pat.value);
  }
  const set = { all, subs, literals };
  resourceSets.set(list, set);
  return set;
}

function patternsOf(r: ResourceSet): string[] {
  return r.all ? [WILDCARD] : [...[...r.subs].map((s) => `*/${s}`), ...r.literals];
}

/**
 * Resources: the union of every pairwise intersection, in linear time: `*` meets anything as that
 * thing; `*\/s` meets `*\/s`, and any literal `x/s`; a literal meets itself. Literals a `*\/s` of
 * the result already covers are dropped.
 */
function meetResources(a: readonly string[], b: readonly string[]): string[] {
  const A = resourceSet(a);
  const B = resourceSet(b);
  if (A.all) return patternsOf(B);
  if (B.all) return patternsOf(A);
  const subs = new Set([...A.subs].filter((s) => B.subs.has(s)));
  const literals = new Set<string>();
  const sub = subOf;
  for (const x of A.literals) if (B.literals.has(x) || B.subs.has(sub(x) ?? "\u0000")) literals.add(x);
  for (const x of B.literals) if (A.subs.has(sub(x) ?? "\u0000")) literals.add(x);
  return [...[...subs].map((s) => `*/${s}`), ...[...literals].filter((x) => !subs.has(sub(x) ?? "\u0000"))];
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

const flatSets = new WeakMap<readonly string[], ReadonlySet<string>>();

function flatSet(list: readonly string[]): ReadonlySet<string> {
  let set = flatSets.get(list);
  if (set === undefined) {
    set = new Set(list);
    flatSets.set(list, set);
  }
  return set;
}

/** Whether every resource `inner` names, `outer` names too. */
function resourcesWithin(outer: readonly string[], inner: readonly string[]): boolean {
  const o = resourceSet(outer);
  if (o.all) return true;
  const i = resourceSet(inner);
  if (i.all) return false;
  for (const s of i.subs) if (!o.subs.has(s)) return false;
  for (const x of i.literals) if (!o.literals.has(x) && !o.subs.has(subOf(x) || "\u0000")) return false;
  return true;
}

/** Whether `outer` alone allows every request `inner` allows (a cheap, factor-wise test). */
function subsumes(outer: PolicyRule, inner: PolicyRule): boolean {
  const flat = (o: readonly string[], i: readonly string[]): boolean => {
    const os = flatSet(o);
    return os.has(WILDCARD) || i.every((x) => x !== WILDCARD && os.has(x));
  };
  if (!flat(outer.verbs, inner.verbs)) return false;
  if (inner.resources.length > 0) {
    if (!flat(outer.apiGroups, inner.apiGroups)) return false;
    if (!resourcesWithin(outer.resources, inner.resources)) return false;
    // Names have no wildcard: `*` in resourceNames is a name like any other.
    const names = flatSet(outer.resourceNames);
    if (outer.resourceNames.length > 0 && (inner.resourceNames.length === 0 || !inner.resourceNames.every((n) => names.has(n)))) return false;
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
      // "Anything else" first: it is the cell a grant without a wildcard fails at once.
      return [fresh, ...literals];
    },
    matches: (r, cell) => matcher(r, cell as string),
  };
}

// Set lookups (cached per list) instead of the list scans of verbMatches and apiGroupMatches: same answers.
const verbs = flatDimension("verbs", (r, v) => { const s = flatSet(r.verbs); return s.has(WILDCARD) || s.has(v); });
const apiGroups = flatDimension("apiGroups", (r, v) => { const s = flatSet(r.apiGroups); return s.has(WILDCARD) || s.has(v); });

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
        add([fresh, ""]);
        add([fresh, fresh]);
        for (const s of subs) add([fresh, s]);
        for (const l of literals) add(l);
      } else if (pat.kind === "sub") {
        add([fresh, pat.sub]);
        for (const l of literals) if (l[1] === pat.sub) add(l);
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
    return [fresh, ...names];
  },
  matches: (r, cell) => r.resourceNames.length === 0 || flatSet(r.resourceNames).has(cell as string),
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

/** The work left to a coverage question, shared by every rule of one {@link uncoveredRules} call. */
export interface CoverageBudget {
  left: number;
}

/** What one coverage question shares across its cells: the work left, memoized answers, rule ids. */
interface Search {
  readonly budget: CoverageBudget;
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
    if (--s.budget.left < 0) return false;
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

/**
 * Whether the `granted` rules allow every request `rule` allows. False, failing closed, once the
 * budget (a number of cells, or one shared with other questions) runs out.
 */
export function ruleCovered(rule: PolicyRule, granted: readonly PolicyRule[], budget: number | CoverageBudget = COVERAGE_BUDGET): boolean {
  if (granted.some((g) => subsumes(g, rule))) return true;
  const ids = new Map(granted.map((g, i) => [g, i] as const));
  const fresh = freshValue([rule, ...granted]);
  const shared = typeof budget === "number" ? { left: budget } : budget;
  const ask = (dims: readonly Dimension[], candidates: readonly PolicyRule[]): boolean =>
    coveredFrom(rule, dims, 0, candidates, { budget: shared, memo: new Map(), ids, fresh });
  if (rule.resources.length > 0 && !ask([verbs, apiGroups, resources, resourceNames], granted.filter((g) => g.resources.length > 0))) return false;
  if (rule.nonResourceURLs.length > 0 && !ask([verbs, urls], granted.filter((g) => g.nonResourceURLs.length > 0))) return false;
  return true;
}

/** The requested rules the grant does not wholly allow: what waits for the owner's approval, sorted. */
export function uncoveredRules(requested: readonly PolicyRule[], granted: readonly PolicyRule[], cells = COVERAGE_BUDGET): PolicyRule[] {
  const budget: CoverageBudget = { left: cells };
  return sortRules(requested.filter((r) => !ruleCovered(r, granted, budget)));
}
