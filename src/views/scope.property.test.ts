/**
 * The scope algebra of the pure model checked against the gateway's matcher: for any requested
 * and granted rules, the effective rules allow a request if and only if both allow it (so
 * effective ⊆ requested and effective ⊆ granted, where ⊆ is "every request the left allows, the
 * right allows"), and a requested rule is pending exactly when some request it allows is refused
 * by the grant. Rules and requests are drawn from one small alphabet so they collide often.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { effective, intersectRules, needsApproval, ruleCovered } from "../plugins/index.js";
import type { PolicyRule } from "../plugins/index.js";
import { rulesAllow } from "./rbac-match.js";
import type { RequestAttributes } from "./request-info.js";

const VERBS = ["get", "list", "watch", "create", "delete"];
const GROUPS = ["", "apps", "openfief.io"];
const RES = ["pods", "deployments", "secrets"];
const SUBS = ["log", "scale", "status"];
const NAMES = ["a", "b", "c"];
const PATHS = ["/healthz", "/healthz/ready", "/apis", "/apis/openfief.io", "/version"];

const oneOrStar = (xs: string[]): fc.Arbitrary<string> => fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...xs) }, { weight: 1, arbitrary: fc.constant("*") });
const list = (a: fc.Arbitrary<string>, min = 1): fc.Arbitrary<string[]> => fc.uniqueArray(a, { minLength: min, maxLength: 3 });
const resourcePattern = fc.oneof(
  fc.constantFrom(...RES),
  fc.tuple(fc.constantFrom(...RES), fc.constantFrom(...SUBS)).map(([r, s]) => `${r}/${s}`),
  fc.constantFrom(...SUBS).map((s) => `*/${s}`),
  fc.constant("*"),
);
const urlPattern = fc.oneof(fc.constantFrom(...PATHS), fc.constantFrom("/healthz*", "/apis/*", "/apis*", "*", "/h*"));

const resourceRule: fc.Arbitrary<PolicyRule> = fc.record({
  verbs: list(oneOrStar(VERBS)),
  apiGroups: list(oneOrStar(GROUPS)),
  resources: list(resourcePattern),
  resourceNames: fc.oneof(fc.constant([] as string[]), list(fc.constantFrom(...NAMES))),
  nonResourceURLs: fc.constant([] as string[]),
});
const urlRule: fc.Arbitrary<PolicyRule> = fc.record({
  verbs: list(oneOrStar(VERBS)),
  apiGroups: fc.constant([] as string[]),
  resources: fc.constant([] as string[]),
  resourceNames: fc.constant([] as string[]),
  nonResourceURLs: list(urlPattern),
});
const rules = fc.array(fc.oneof({ weight: 3, arbitrary: resourceRule }, { weight: 1, arbitrary: urlRule }), { maxLength: 4 });

const request: fc.Arbitrary<RequestAttributes> = fc.oneof(
  fc.record({
    kind: fc.constant("resource" as const),
    verb: fc.constantFrom(...VERBS, "patch"),
    apiPrefix: fc.constant("apis"),
    apiGroup: fc.constantFrom(...GROUPS, "batch"),
    apiVersion: fc.constant("v1"),
    namespace: fc.constantFrom("", "ns"),
    resource: fc.constantFrom(...RES, "jobs"),
    subresource: fc.constantFrom("", ...SUBS, "exec"),
    name: fc.constantFrom("", ...NAMES, "d"),
    parts: fc.constant([] as string[]),
    path: fc.constant("/"),
    fieldSelector: fc.constant(""),
    labelSelector: fc.constant(""),
  }),
  fc.record({ kind: fc.constant("nonResource" as const), verb: fc.constantFrom(...VERBS, "head"), path: fc.constantFrom(...PATHS, "/healthzx", "/apis/openfief.io/v1alpha1", "/") }),
);

describe("the effective rules", () => {
  it("allow exactly the requests both the manifest's and the grant's rules allow", () => {
    fc.assert(
      fc.property(rules, rules, fc.array(request, { minLength: 20, maxLength: 20 }), (requested, granted, reqs) => {
        const eff = intersectRules(requested, granted);
        for (const a of reqs) {
          const e = rulesAllow(a, eff);
          // effective ⊆ requested and effective ⊆ granted …
          if (e) expect(rulesAllow(a, requested) && rulesAllow(a, granted)).toBe(true);
          // … and nothing both allow is lost.
          if (rulesAllow(a, requested) && rulesAllow(a, granted)) expect(e).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  it("are none unless the view capability is granted", () => {
    fc.assert(
      fc.property(rules, rules, fc.boolean(), (requested, granted, grantView) => {
        const base = { egress: [], secrets: [], dataTiers: [] };
        const e = effective({ ...base, capabilities: ["view", "connector"], rbac: requested }, { ...base, capabilities: grantView ? ["view"] : ["connector"], rbac: granted });
        if (!e.ok) throw new Error("effective");
        if (!grantView) expect(e.value.rbac).toEqual([]);
        else expect(e.value.rbac).toEqual(intersectRules(requested, granted));
      }),
      { numRuns: 100 },
    );
  });
});

describe("pending rules", () => {
  it("are the requested rules some of whose requests the grant refuses", () => {
    fc.assert(
      fc.property(fc.oneof(resourceRule, urlRule), rules, fc.array(request, { minLength: 30, maxLength: 30 }), (rule, granted, reqs) => {
        const covered = ruleCovered(rule, granted);
        if (covered) {
          // Every request the rule allows, the grant allows.
          for (const a of reqs) if (rulesAllow(a, [rule])) expect(rulesAllow(a, granted)).toBe(true);
        }
        // Covered exactly when the effective rules give back everything the rule allows.
        const eff = intersectRules([rule], granted);
        for (const a of reqs) if (covered && rulesAllow(a, [rule])) expect(rulesAllow(a, eff)).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it("leave nothing pending once the owner approves them", () => {
    fc.assert(
      fc.property(rules, rules, (requested, granted) => {
        const base = { capabilities: ["view" as const], egress: [], secrets: [], dataTiers: [] };
        const pending = needsApproval({ ...base, rbac: requested }, { ...base, rbac: granted });
        const approved = needsApproval({ ...base, rbac: requested }, { ...base, rbac: [...granted, ...(pending.rbac ?? [])] });
        expect(approved.rbac ?? []).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it("find a refused request whenever a rule is not covered", () => {
    // Exhaustive over the alphabet: a rule counted as uncovered has a request that shows it.
    const product = (lists: readonly string[][]): string[][] => lists.reduce<string[][]>((acc, xs) => acc.flatMap((a) => xs.map((x) => [...a, x])), [[]]);
    const all: RequestAttributes[] = product([[...VERBS, "patch"], [...GROUPS, "batch"], [...RES, "jobs"], ["", ...SUBS, "exec"], ["", ...NAMES, "d"]]).map(([verb, apiGroup, resource, subresource, name]) => ({
      kind: "resource", verb: verb as string, apiPrefix: "apis", apiGroup: apiGroup as string, apiVersion: "v1", namespace: "", resource: resource as string, subresource: subresource as string, name: name as string,
      parts: [], path: "/", fieldSelector: "", labelSelector: "",
    }));
    fc.assert(
      fc.property(resourceRule, fc.array(resourceRule, { maxLength: 3 }), (rule, granted) => {
        // Only rules without wildcards: a wildcard reaches values outside any finite alphabet.
        fc.pre(![...rule.verbs, ...rule.apiGroups, ...rule.resources].some((x) => x.includes("*")) && rule.resourceNames.length > 0);
        const refused = all.some((a) => rulesAllow(a, [rule]) && !rulesAllow(a, granted));
        expect(ruleCovered(rule, granted)).toBe(!refused);
      }),
      { numRuns: 300 },
    );
  });
});
