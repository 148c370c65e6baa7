import { describe, expect, it } from "vitest";
import { requestInfo } from "./request-info.js";
import type { ResourceAttributes } from "./request-info.js";

function resource(method: string, url: string): ResourceAttributes {
  const r = requestInfo(method, url);
  if (!r.ok) throw new Error(`${method} ${url}: ${r.problem}`);
  if (r.value.kind !== "resource") throw new Error(`${method} ${url}: not a resource request`);
  return r.value;
}

// kube-apiserver's TestGetAPIRequestInfo: method, url, verb, apiPrefix, apiGroup, apiVersion,
// namespace, resource, subresource, name, parts.
const KUBE_CASES: Array<[string, string, string, string, string, string, string, string, string, string, string[]]> = [
  // resource paths
  ["GET", "/api/v1/namespaces", "list", "api", "", "v1", "", "namespaces", "", "", ["namespaces"]],
  ["GET", "/api/v1/namespaces/other", "get", "api", "", "v1", "other", "namespaces", "", "other", ["namespaces", "other"]],
  ["GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", ["pods", "foo"]],
  ["HEAD", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", ["pods", "foo"]],
  ["GET", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", ["pods"]],
  ["HEAD", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", ["pods"]],
  // special verbs
  ["GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "api", "", "v1", "other", "pods", "", "foo", ["pods", "foo"]],
  ["GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "api", "", "v1", "other", "pods", "", "foo", ["pods", "foo", "subpath", "not", "a", "subresource"]],
  ["GET", "/api/v1/watch/pods", "watch", "api", "", "v1", "", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/pods?watch=true", "watch", "api", "", "v1", "", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/pods?watch=false", "list", "api", "", "v1", "", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/watch/namespaces/other/pods", "watch", "api", "", "v1", "other", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/namespaces/other/pods?watch=1", "watch", "api", "", "v1", "other", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/namespaces/other/pods?watch=0", "list", "api", "", "v1", "other", "pods", "", "", ["pods"]],
  // subresource identification
  ["GET", "/api/v1/namespaces/other/pods/foo/status", "get", "api", "", "v1", "other", "pods", "status", "foo", ["pods", "foo", "status"]],
  ["GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "api", "", "v1", "other", "pods", "proxy", "foo", ["pods", "foo", "proxy", "subpath"]],
  ["PUT", "/api/v1/namespaces/other/finalize", "update", "api", "", "v1", "other", "namespaces", "finalize", "other", ["namespaces", "other", "finalize"]],
  ["PUT", "/api/v1/namespaces/other/status", "update", "api", "", "v1", "other", "namespaces", "status", "other", ["namespaces", "other", "status"]],
  // verb identification
  ["PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "api", "", "v1", "other", "pods", "", "foo", ["pods", "foo"]],
  ["DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "api", "", "v1", "other", "pods", "", "foo", ["pods", "foo"]],
  ["POST", "/api/v1/namespaces/other/pods", "create", "api", "", "v1", "other", "pods", "", "", ["pods"]],
  // deletecollection verb identification
  ["DELETE", "/api/v1/nodes", "deletecollection", "api", "", "v1", "", "nodes", "", "", ["nodes"]],
  ["DELETE", "/api/v1/namespaces", "deletecollection", "api", "", "v1", "", "namespaces", "", "", ["namespaces"]],
  ["DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "api", "", "v1", "other", "pods", "", "", ["pods"]],
  ["DELETE", "/apis/extensions/v1/namespaces/other/pods", "deletecollection", "apis", "extensions", "v1", "other", "pods", "", "", ["pods"]],
  // api group identification
  ["POST", "/apis/extensions/v1/namespaces/other/pods", "create", "apis", "extensions", "v1", "other", "pods", "", "", ["pods"]],
  // api version identification
  ["POST", "/apis/extensions/v1beta3/namespaces/other/pods", "create", "apis", "extensions", "v1beta3", "other", "pods", "", "", ["pods"]],
];

// Cases beyond kube-apiserver's table, each checked against its code.
const MORE_CASES: Array<[string, string, string, string, string, string, string, string, string, string, string[]]> = [
  // A server-side apply that creates a namespace keeps the namespace attribute (kubernetes#94656 was never merged).
  ["PATCH", "/api/v1/namespaces/new-namespace", "patch", "api", "", "v1", "new-namespace", "namespaces", "", "new-namespace", ["namespaces", "new-namespace"]],
  ["DELETE", "/api/v1/namespaces/gone", "delete", "api", "", "v1", "gone", "namespaces", "", "gone", ["namespaces", "gone"]],
  // Any method kube-apiserver does not map has the empty verb on a resource.
  ["OPTIONS", "/api/v1/namespaces/other/pods", "", "api", "", "v1", "other", "pods", "", "", ["pods"]],
  ["CONNECT", "/api/v1/namespaces/other/pods/foo/exec", "", "api", "", "v1", "other", "pods", "exec", "foo", ["pods", "foo", "exec"]],
  // exec, attach, log and port-forward are subresources: POST is create, GET is get.
  ["POST", "/api/v1/namespaces/other/pods/foo/exec?command=ls", "create", "api", "", "v1", "other", "pods", "exec", "foo", ["pods", "foo", "exec"]],
  ["GET", "/api/v1/namespaces/other/pods/foo/log?follow=true", "get", "api", "", "v1", "other", "pods", "log", "foo", ["pods", "foo", "log"]],
  ["GET", "/apis/apps/v1/namespaces/other/deployments/web/scale", "get", "apis", "apps", "v1", "other", "deployments", "scale", "web", ["deployments", "web", "scale"]],
  // The watch parameter: only "false" and "0" in any case are false; an empty value is true.
  ["GET", "/api/v1/pods?watch=", "watch", "api", "", "v1", "", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/pods?watch=FALSE", "list", "api", "", "v1", "", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/pods?watch=no", "watch", "api", "", "v1", "", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/pods?watch", "watch", "api", "", "v1", "", "pods", "", "", ["pods"]],
  ["GET", "/api/v1/pods?watch=0&watch=1", "list", "api", "", "v1", "", "pods", "", "", ["pods"]],
  // A named get ignores the watch parameter.
  ["GET", "/api/v1/namespaces/other/pods/foo?watch=true", "get", "api", "", "v1", "other", "pods", "", "foo", ["pods", "foo"]],
  // The deprecated watch prefix on one object.
  ["GET", "/api/v1/watch/namespaces/other/pods/foo", "watch", "api", "", "v1", "other", "pods", "", "foo", ["pods", "foo"]],
  // Go decodes the path before splitting: %2F is a separator.
  ["GET", "/api/v1/namespaces/a%2Fb/pods", "get", "api", "", "v1", "a", "b", "", "pods", ["b", "pods"]],
  // Slashes at the ends are trimmed; empty parts inside are kept.
  ["GET", "/api/v1/namespaces/other/pods/", "list", "api", "", "v1", "other", "pods", "", "", ["pods"]],
  ["GET", "//api/v1//pods", "get", "api", "", "v1", "", "", "", "pods", ["", "pods"]],
  // Cluster-scoped resources of a group.
  ["GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", "get", "apis", "rbac.authorization.k8s.io", "v1", "", "clusterroles", "", "admin", ["clusterroles", "admin"]],
  ["GET", "/apis/openfief.io/v1alpha1/plugins", "list", "apis", "openfief.io", "v1alpha1", "", "plugins", "", "", ["plugins"]],
];

describe("requestInfo", () => {
  it.each([...KUBE_CASES, ...MORE_CASES])("reads %s %s as verb %s", (method, url, ...want) => {
    const [verb, apiPrefix, apiGroup, apiVersion, namespace, res, subresource, name, parts] = want;
    const r = resource(method, url);
    expect(r).toMatchObject({ verb, apiPrefix, apiGroup, apiVersion, namespace, resource: res, subresource, name });
    expect(r.parts).toEqual(parts);
  });

  // kube-apiserver's error cases and TestGetNonAPIRequestInfo: not resource requests.
  it.each([
    "/", "/api/version/", "/apis/group/version/", "/badprefix/version/resource", "/apis/version/resource",
    "/not-api/version/resource", "/apis/extensions/v1beta1", "/apis/extensions/v1beta1/", "/api/version", "/api", "/healthz", "/version",
    "/apis", "/apis/openfief.io", "/apis/openfief.io/v1alpha1", "/openapi/v2",
  ])("reads %s as a non-resource request", (url) => {
    const r = requestInfo("GET", url);
    expect(r.ok && r.value.kind).toBe("nonResource");
  });

  it.each([
    ["/api/version/resource", true], ["/apis/group/version/resource/name/subresource", true], ["/api/version/resource/name/subresource", true],
    ["/apis/batch/v1/job", true], ["/apis/batch/v1/job/foo", true], ["/apis/batch/v1/job/foo/scale", true],
  ] as const)("reads %s as a resource request: %s", (url, want) => {
    const r = requestInfo("GET", url);
    expect(r.ok && r.value.kind === "resource").toBe(want);
  });

  it.each([
    ["GET", "get"], ["HEAD", "head"], ["OPTIONS", "options"], ["POST", "post"], ["DELETE", "delete"],
  ])("gives a non-resource %s the verb %s", (method, verb) => {
    const r = requestInfo(method, "/healthz");
    expect(r.ok && r.value).toEqual({ kind: "nonResource", verb, path: "/healthz" });
  });

  it("keeps the decoded path of a non-resource request", () => {
    const r = requestInfo("GET", "/logs/a%20b");
    expect(r.ok && r.value.path).toBe("/logs/a b");
  });

  it.each(["/api/v1/watch", "/api/v1/proxy", "/apis/g/v/watch/"])("fails as kube-apiserver does on %s, which names no resource", (url) => {
    expect(requestInfo("GET", url)).toEqual({ ok: false, problem: "unresolvable" });
  });

  it.each([
    ["/api/v1/pods/%zz", "bad_escape"],
    ["/api/v1/pods/%2", "bad_escape"],
    ["/api/v1/pods/%ff", "not_utf8"],
    ["/api/v1/pods?fieldSelector=metadata.name%3D%ff", "not_utf8"],
    ["http://evil/api/v1/pods", "not_origin_form"],
    ["/api/v1/pods/a\u0001b", "control_character"],
  ])("refuses %s (%s)", (url, problem) => {
    expect(requestInfo("GET", url)).toEqual({ ok: false, problem });
  });
});

// kube-apiserver's TestSelectorParsing (AuthorizeWithSelectors on), and more.
describe("requestInfo with selectors", () => {
  it.each([
    { name: "no selector", method: "GET", url: "/apis/group/version/resource", verb: "list", named: "", field: "", label: "" },
    { name: "metadata.name selector", method: "GET", url: "/apis/group/version/resource?fieldSelector=metadata.name=name1", verb: "list", named: "name1", field: "metadata.name=name1", label: "" },
    { name: "metadata.name selector with watch", method: "GET", url: "/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1", verb: "watch", named: "name1", field: "metadata.name=name1", label: "" },
    { name: "random selector", method: "GET", url: "/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux", verb: "list", named: "", field: "foo=bar", label: "baz=qux" },
    { name: "invalid selector with metadata.name", method: "GET", url: "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo", verb: "list", named: "", field: "metadata.name=name1,foo", label: "" },
    { name: "invalid selector with metadata.name with watch", method: "GET", url: "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true", verb: "watch", named: "", field: "metadata.name=name1,foo", label: "" },
    { name: "invalid selector with metadata.name with watch false", method: "GET", url: "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=false", verb: "list", named: "", field: "metadata.name=name1,foo", label: "" },
    { name: "selector on deletecollection is honored", method: "DELETE", url: "/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux", verb: "deletecollection", named: "", field: "foo=bar", label: "baz=qux" },
    { name: "selector on repeated param matches parsed param", method: "GET", url: "/apis/group/version/resource?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar&labelSelector=foo=bar&labelSelector=foo=baz", verb: "list", named: "foo", field: "metadata.name=foo", label: "foo=bar" },
    { name: "selector on other verb is ignored", method: "GET", url: "/apis/group/version/resource/name?fieldSelector=foo=bar&labelSelector=foo=bar", verb: "get", named: "name", field: "", label: "" },
    { name: "selector on deprecated root type watch is not parsed", method: "GET", url: "/apis/group/version/watch/resource?fieldSelector=metadata.name=foo&labelSelector=foo=bar", verb: "watch", named: "", field: "", label: "" },
    { name: "selector on deprecated root item watch is not parsed", method: "GET", url: "/apis/group/version/watch/resource/name?fieldSelector=metadata.name=foo&labelSelector=foo=bar", verb: "watch", named: "name", field: "", label: "" },
    // beyond kube-apiserver's table
    { name: "a == selector names the object", method: "GET", url: "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3D%3Dca", verb: "list", named: "ca", field: "metadata.name==ca", label: "" },
    { name: "a != selector names nothing", method: "GET", url: "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name!%3Dca", verb: "list", named: "", field: "metadata.name!=ca", label: "" },
    { name: "the first name in sorted order wins", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Db,metadata.name%3Da", verb: "list", named: "a", field: "metadata.name=b,metadata.name=a", label: "" },
    { name: "an escaped value", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Da%5C%2Cb", verb: "list", named: "a,b", field: "metadata.name=a\\,b", label: "" },
    { name: "an unescaped = in the value fails the selector", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Da%3Db", verb: "list", named: "", field: "metadata.name=a=b", label: "" },
    { name: "a bad escape fails the selector", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Da%5Cb", verb: "list", named: "", field: "metadata.name=a\\b", label: "" },
    { name: "a name that is no path segment is dropped", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3D..", verb: "list", named: "", field: "metadata.name=..", label: "" },
    { name: "a name with % is dropped", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Da%25b", verb: "list", named: "", field: "metadata.name=a%b", label: "" },
    { name: "a namespace selector names no object", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.namespace%3Dns", verb: "list", named: "", field: "metadata.namespace=ns", label: "" },
    { name: "a bad label selector leaves the list unnamed", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Dca&labelSelector=a%3D%3D%3D", verb: "list", named: "", field: "metadata.name=ca", label: "a===" },
    { name: "a bad limit leaves the list unnamed", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Dca&limit=ten", verb: "list", named: "", field: "metadata.name=ca", label: "" },
    { name: "an empty timeout leaves the watch unnamed", method: "GET", url: "/api/v1/secrets?watch=1&fieldSelector=metadata.name%3Dca&timeoutSeconds=", verb: "watch", named: "", field: "metadata.name=ca", label: "" },
    { name: "a signed limit decodes", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Dca&limit=%2B5", verb: "list", named: "ca", field: "metadata.name=ca", label: "" },
    { name: "a limit beyond int64 does not", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Dca&limit=9223372036854775808", verb: "list", named: "", field: "metadata.name=ca", label: "" },
    { name: "a pair with ; is dropped", method: "GET", url: "/api/v1/secrets?fieldSelector=metadata.name%3Dca;x=1", verb: "list", named: "", field: "", label: "" },
    { name: "+ is a space in the query", method: "GET", url: "/api/v1/secrets?labelSelector=app+in+(a,b)&fieldSelector=metadata.name%3Dca", verb: "list", named: "ca", field: "metadata.name=ca", label: "app in (a,b)" },
    { name: "a fieldSelector never names a deletecollection", method: "DELETE", url: "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Dca", verb: "deletecollection", named: "", field: "metadata.name=ca", label: "" },
  ])("$name", ({ method, url, verb, named, field, label }) => {
    const r = resource(method, url);
    expect({ verb: r.verb, name: r.name, fieldSelector: r.fieldSelector, labelSelector: r.labelSelector }).toEqual({ verb, name: named, fieldSelector: field, labelSelector: label });
  });
});
