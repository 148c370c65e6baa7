/**
 * A PolicyRule matcher with Kubernetes RBAC semantics exactly (`plugin/pkg/auth/authorizer/rbac/
 * rbac.go` `RuleAllows`): a resource request is allowed by a rule when its verb, API group,
 * combined resource (`pods/log`) and name all match; a non-resource request when its verb (the
 * lower-case method) and path match. Rules only ever allow: no rule denies, so a request no rule
 * allows is refused. The field matchers are the pure model's (`src/plugins/rbac.ts`), shared with
 * the scope algebra so the two cannot read a rule differently.
 */
import { apiGroupMatches, nonResourceURLMatches, resourceMatches, resourceNameMatches, verbMatches } from "../plugins/index.js";
import type { PolicyRule } from "../plugins/index.js";
import type { RequestAttributes } from "./request-info.js";

/** Whether `rule` allows the request. */
export function ruleAllows(attrs: RequestAttributes, rule: PolicyRule): boolean {
  if (attrs.kind === "resource") {
    return verbMatches(rule, attrs.verb) && apiGroupMatches(rule, attrs.apiGroup) && resourceMatches(rule, attrs.resource, attrs.subresource) && resourceNameMatches(rule, attrs.name);
  }
  return verbMatches(rule, attrs.verb) && nonResourceURLMatches(rule, attrs.path);
}

/** Whether any of `rules` allows the request; the index of the first that does, or -1. */
export function firstAllowing(attrs: RequestAttributes, rules: readonly PolicyRule[]): number {
  return rules.findIndex((r) => ruleAllows(attrs, r));
}

/** Whether any of `rules` allows the request. */
export function rulesAllow(attrs: RequestAttributes, rules: readonly PolicyRule[]): boolean {
  return firstAllowing(attrs, rules) >= 0;
}
