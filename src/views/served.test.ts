import { describe, expect, it } from "vitest";
import { parseRequestTarget } from "./go-url.js";
import { watchTarget } from "./kube-upstream.js";
import { requestInfo } from "./request-info.js";
import type { ResourceAttributes } from "./request-info.js";
import { escapeFieldValue, selectionOf } from "./served.js";

function select(target: string, method = "GET") {
  const a = requestInfo(method, target);
  const t = parseRequestTarget(target);
  if (!a.ok || a.value.kind !== "resource" || !t.ok) throw new Error(`not a resource request: ${target}`);
  return { a: a.value, s: selectionOf(a.value, t.value.query) };
}

describe("what a list or watch is served", () => {
  it.each([
    ["a /watch/ naming the object in its path", "/apis/openfief.io/v1alpha1/watch/namespaces/openfief/plugingrants/ledger-view", "metadata.name=ledger-view", "ledger-view"],
    ["a /watch/ with the same name in its field selector", "/apis/openfief.io/v1alpha1/watch/namespaces/openfief/plugingrants/ledger-view?fieldSelector=metadata.name%3Dledger-view,metadata.namespace%3Dopenfief", "metadata.name=ledger-view,metadata.namespace=openfief", "ledger-view"],
    ["a /watch/ of a name to escape", "/api/v1/watch/namespaces/ns/configmaps/a,b=c", "metadata.name=a\\,b\\=c", "a,b=c"],
    ["a /watch/ of the collection", "/apis/openfief.io/v1alpha1/watch/namespaces/openfief/plugingrants?fieldSelector=metadata.name%3Dx", "metadata.name=x", ""],
    ["a watch named by its field selector", "/api/v1/namespaces/ns/pods?watch=1&fieldSelector=metadata.name%3Dweb&labelSelector=app%3Dx", "metadata.name=web", "web"],
    ["a plain list", "/api/v1/namespaces/ns/pods", "", ""],
    ["a list whose field selector does not parse (the upstream's to refuse)", "/api/v1/namespaces/ns/pods?fieldSelector=x", "x", ""],
  ])("%s", (_what, target, fieldSelector, name) => {
    const { s } = select(target);
    expect(s).toMatchObject({ ok: true, value: { fieldSelector, name } });
  });

  it.each([
    ["another name in the field selector", "/api/v1/watch/namespaces/ns/pods/web?fieldSelector=metadata.name%3Dother", "name_mismatch"],
    ["a selector on another field only", "/api/v1/watch/namespaces/ns/pods/web?fieldSelector=status.phase%3DRunning", "name_mismatch"],
    ["a field selector that does not parse", "/api/v1/watch/namespaces/ns/pods/web?fieldSelector=nonsense", "bad_field_selector"],
  ])("refuses a watch named in its path beside %s", (_what, target, reason) => {
    expect(select(target).s).toMatchObject({ ok: false, problem: { reason } });
  });

  it.each([["a get", "GET", "/api/v1/namespaces/ns/pods/web"], ["a create", "POST", "/api/v1/namespaces/ns/pods"], ["a deletecollection", "DELETE", "/api/v1/namespaces/ns/pods"]])("selects nothing for %s", (_what, method, target) => {
    expect(select(target, method).s).toEqual({ ok: true, value: null });
  });

  it("escapes as apimachinery does", () => {
    expect(escapeFieldValue("a\\b,c=d")).toBe("a\\\\b\\,c\\=d");
  });
});

describe("the target a watch is sent upstream as", () => {
  const now = 1_000_000;
  const sent = (target: string, endsAt: number | null = null): { sentTarget: string; before: ResourceAttributes; after: ResourceAttributes } => {
    const { a, s } = select(target);
    if (!s.ok) throw new Error("refused");
    const sentTarget = watchTarget({ attributes: a, target, served: s.value, endsAt }, now);
    const after = requestInfo("GET", sentTarget);
    if (!after.ok || after.value.kind !== "resource") throw new Error("unreadable");
    return { sentTarget, before: a, after: after.value };
  };

  it.each([
    ["/apis/openfief.io/v1alpha1/watch/namespaces/openfief/plugingrants/ledger-view", "/apis/openfief.io/v1alpha1/namespaces/openfief/plugingrants?watch=true&fieldSelector=metadata.name%3Dledger-view"],
    ["/api/v1/watch/namespaces/ns/configmaps?labelSelector=a%3Db&resourceVersion=5", "/api/v1/namespaces/ns/configmaps?labelSelector=a%3Db&resourceVersion=5&watch=true"],
    ["/api/v1/watch/nodes/n1", "/api/v1/nodes?watch=true&fieldSelector=metadata.name%3Dn1"],
  ])("sends %s as %s, read by RequestInfo as the same request", (target, want) => {
    const { sentTarget, before, after } = sent(target);
    expect(sentTarget).toBe(want);
    for (const k of ["verb", "apiGroup", "apiVersion", "namespace", "resource", "subresource", "name"] as const) expect(after[k]).toBe(before[k]);
  });

  it("ends the watch by the token's expiry, sooner than the client asked", () => {
    expect(sent("/api/v1/namespaces/ns/pods?watch=1&timeoutSeconds=3600", now + 120_000).sentTarget).toBe("/api/v1/namespaces/ns/pods?watch=true&timeoutSeconds=120");
    expect(sent("/api/v1/namespaces/ns/pods?watch=1&timeoutSeconds=30", now + 120_000).sentTarget).toBe("/api/v1/namespaces/ns/pods?watch=true&timeoutSeconds=30");
  });

  it("sends a subresource's watch, a namespace's own, and anything that is not a watch, as it came", () => {
    expect(sent("/api/v1/watch/namespaces/ns/pods/web/status").sentTarget).toBe("/api/v1/watch/namespaces/ns/pods/web/status");
    expect(sent("/api/v1/watch/namespaces/x").sentTarget).toBe("/api/v1/watch/namespaces/x");
    const list = select("/api/v1/namespaces/ns/pods?limit=5");
    if (!list.s.ok) throw new Error("refused");
    expect(watchTarget({ attributes: list.a, target: "/api/v1/namespaces/ns/pods?limit=5", served: list.s.value, endsAt: null }, now)).toBe("/api/v1/namespaces/ns/pods?limit=5");
  });
});
