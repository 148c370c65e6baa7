/**
 * The OpenAPI document and the route table agree: every API and operator route is in the
 * document with the same method, path, parameters, headers and statuses, and the document holds
 * no route the server does not answer. (The API test checks the other half: every status it saw
 * is one its route declares.)
 */
import { describe, expect, it } from "vitest";
import { OPENAPI, routeTable } from "../../src/server/index.js";
import type { Route } from "../../src/server/index.js";

interface Param { name: string; in: string; required?: boolean }
type Operation = { parameters?: (Param | { $ref: string })[]; responses: Record<string, unknown>; security?: unknown[] };

const doc = OPENAPI as unknown as { paths: Record<string, Record<string, Operation>>; components: { parameters: Record<string, Param> } };
const routes = routeTable().filter((r) => r.kind === "api" || r.kind === "ops");

function params(op: Operation): Param[] {
  return (op.parameters ?? []).map((p) => ("$ref" in p ? doc.components.parameters[p.$ref.split("/").at(-1) ?? ""] : p)).filter((p): p is Param => p !== undefined);
}

function operation(r: Route): Operation | undefined {
  return doc.paths[r.path]?.[r.method.toLowerCase()];
}

const sorted = (xs: Iterable<string>) => [...xs].sort();

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1 and resolves every parameter it refers to", () => {
    expect(OPENAPI.openapi).toBe("3.1.0");
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops)) expect(params(op).length).toBe((op.parameters ?? []).length);
    }
  });

  it("holds no operation the server does not answer", () => {
    const served = new Set(routes.map((r) => `${r.method} ${r.path}`));
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.filter((d) => !served.has(d))).toEqual([]);
  });

  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))("describes %s as the route table does", (_key, r) => {
    const op = operation(r);
    expect(op, "missing from the document").toBeDefined();
    if (op === undefined) return;
    const ps = params(op);
    expect(sorted(ps.filter((p) => p.in === "query").map((p) => p.name))).toEqual(sorted(r.query));
    expect(sorted(ps.filter((p) => p.in === "header").map((p) => p.name.toLowerCase()))).toEqual(sorted(r.headers.map((h) => h.toLowerCase())));
    expect(sorted(ps.filter((p) => p.in === "path").map((p) => p.name))).toEqual(sorted([...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? "")));
    expect(sorted(Object.keys(op.responses))).toEqual(sorted(r.statuses.map(String)));
    // A public route needs no session; every other one does.
    expect((op.security ?? []).length === 0).toBe(r.access === "public");
  });

  it("requires If-Match exactly where a missing one is 428", () => {
    for (const r of routes) {
      const ifMatch = params(operation(r) ?? { responses: {} }).find((p) => p.name === "If-Match");
      expect([r.path, ifMatch?.required === true]).toEqual([r.path, r.statuses.includes(428)]);
    }
  });
});
