import { describe, expect, it } from "vitest";
import type { PolicyRule } from "../plugins/index.js";
import { ruleAllows } from "./rbac-match.js";
import { requestInfo } from "./request-info.js";

const R = (p: Partial<PolicyRule>): PolicyRule => ({ apiGroups: [], resources: [], verbs: [], resourceNames: [], nonResourceURLs: [], ...p });

function allows(rule: PolicyRule, method: string, url: string): boolean {
  const a = requestInfo(method, url);
  if (!a.ok) throw new Error(a.problem);
  return ruleAllows(a.value, rule);
}

const secretsCA = R({ apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch"], resourceNames: ["ca"] });
const pods = R({ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] });

describe("ruleAllows, with Kubernetes RBAC semantics", () => {
  it.each([
    // resourceNames: a named get; a list or watch only when a field selector names the object.
    { rule: secretsCA, method: "GET", url: "/api/v1/namespaces/ns/secrets/ca", want: true },
    { rule: secretsCA, method: "GET", url: "/api/v1/namespaces/ns/secrets/other", want: false },
    { rule: secretsCA, method: "GET", url: "/api/v1/namespaces/ns/secrets", want: false },
    { rule: secretsCA, method: "GET", url: "/api/v1/namespaces/ns/secrets?watch=1", want: false },
    { rule: secretsCA, method: "GET", url: "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Dca", want: true },
    { rule: secretsCA, method: "GET", url: "/api/v1/namespaces/ns/secrets?watch=true&fieldSelector=metadata.name%3Dca", want: true },
    { rule: secretsCA, method: "GET", url: "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Dca,type%3Dx", want: true },
    { rule: secretsCA, method: "GET", url: "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Dca&limit=x", want: false },
    { rule: secretsCA, method: "GET", url: "/api/v1/watch/namespaces/ns/secrets/ca", want: true },
    { rule: secretsCA, method: "GET", url: "/api/v1/watch/namespaces/ns/secrets?fieldSelector=metadata.name%3Dca", want: false },
    // create never carries a name, so resourceNames never allow it.
    { rule: R({ apiGroups: [""], resources: ["secrets"], verbs: ["create"], resourceNames: ["ca"] }), method: "POST", url: "/api/v1/namespaces/ns/secrets", want: false },
    // subresources need their own rule.
    { rule: pods, method: "GET", url: "/api/v1/namespaces/ns/pods/p/log", want: false },
    { rule: R({ apiGroups: [""], resources: ["pods/log"], verbs: ["get"] }), method: "GET", url: "/api/v1/namespaces/ns/pods/p/log", want: true },
    { rule: R({ apiGroups: [""], resources: ["pods/*"], verbs: ["get"] }), method: "GET", url: "/api/v1/namespaces/ns/pods/p/log", want: false },
    { rule: R({ apiGroups: ["*"], resources: ["*/scale"], verbs: ["get", "update"] }), method: "PUT", url: "/apis/apps/v1/namespaces/ns/deployments/web/scale", want: true },
    { rule: R({ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }), method: "POST", url: "/api/v1/namespaces/ns/pods/p/exec", want: true },
    // the API group must match: the core group is "".
    { rule: pods, method: "GET", url: "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods", want: false },
    // verbs: deletecollection is not delete; a watch is not a list; proxy is its own verb.
    { rule: R({ apiGroups: [""], resources: ["pods"], verbs: ["delete"] }), method: "DELETE", url: "/api/v1/namespaces/ns/pods", want: false },
    { rule: R({ apiGroups: [""], resources: ["pods"], verbs: ["list"] }), method: "GET", url: "/api/v1/namespaces/ns/pods?watch=1", want: false },
    { rule: pods, method: "GET", url: "/api/v1/proxy/namespaces/ns/pods/p", want: false },
    // namespaces are objects of the resource "namespaces".
    { rule: R({ apiGroups: [""], resources: ["namespaces"], verbs: ["get"], resourceNames: ["ns"] }), method: "GET", url: "/api/v1/namespaces/ns", want: true },
    { rule: R({ apiGroups: [""], resources: ["namespaces"], verbs: ["get"] }), method: "GET", url: "/api/v1/namespaces/ns/pods", want: false },
    { rule: R({ apiGroups: [""], resources: ["namespaces/status"], verbs: ["update"] }), method: "PUT", url: "/api/v1/namespaces/ns/status", want: true },
    // a resource rule never allows a non-resource URL, nor the reverse.
    { rule: R({ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }), method: "GET", url: "/healthz", want: false },
    { rule: R({ nonResourceURLs: ["*"], verbs: ["*"] }), method: "GET", url: "/api/v1/pods", want: false },
    // non-resource URLs: the verb is the lower-case method; a trailing * is a prefix.
    { rule: R({ nonResourceURLs: ["/healthz"], verbs: ["get"] }), method: "GET", url: "/healthz", want: true },
    { rule: R({ nonResourceURLs: ["/healthz"], verbs: ["get"] }), method: "HEAD", url: "/healthz", want: false },
    { rule: R({ nonResourceURLs: ["/healthz/*"], verbs: ["get"] }), method: "GET", url: "/healthz/etcd", want: true },
    { rule: R({ nonResourceURLs: ["/healthz/*"], verbs: ["get"] }), method: "GET", url: "/healthz", want: false },
    { rule: R({ nonResourceURLs: ["/apis/*"], verbs: ["get"] }), method: "GET", url: "/apis/openfief.io/v1alpha1", want: true },
  ])("$method $url is $want", ({ rule, method, url, want }) => {
    expect(allows(rule, method, url)).toBe(want);
  });
});
