/**
 * A CRD's `openAPIV3Schema` as a JSON Schema ajv understands, so tests can check objects against
 * the CRDs in deploy/crds as the API server would: `x-kubernetes-*` dropped, `nullable` mapped,
 * list-type `set` as `uniqueItems`, and unknown fields refused where the server would prune them
 * (so a typo in a sample or in what the operator writes shows).
 */
export function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (typeof node !== "object" || node === null) return node;
  const src = node as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(src)) {
    if (k.startsWith("x-kubernetes-") || k === "nullable" || k === "format") continue;
    out[k] = k === "properties" ? Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([p, s]) => [p, toJsonSchema(s)])) : toJsonSchema(v);
  }
  if (src["nullable"] === true && typeof src["type"] === "string") out["type"] = [src["type"], "null"];
  if (src["type"] === "object" && src["properties"] !== undefined && src["x-kubernetes-preserve-unknown-fields"] !== true) out["additionalProperties"] = false;
  if (src["x-kubernetes-list-type"] === "set") out["uniqueItems"] = true;
  return out;
}
