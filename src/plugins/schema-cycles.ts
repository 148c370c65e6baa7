/**
 * Reference loops that never reach a smaller part of the config. `{"$ref": "#"}`, or two
 * definitions that `$ref` each other through `allOf`, make a validator call itself on the same
 * value forever: ajv compiles such a schema, and every check of a config then ends in a stack
 * overflow, so the schema can never check anything. A recursive schema is fine when each round
 * goes through a keyword that descends into the value (`properties`, `items`, …): the config is
 * finite, so the recursion ends.
 *
 * The check: a graph whose nodes are the schema's subschemas and whose edges lead from a schema to
 * what applies to the same value (its in-place subschemas, and what its references reach); any
 * cycle is refused at the path of a reference on it.
 */
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import { isPlainObject } from "./json.js";
import type { SchemaIndex } from "./schema-refs.js";
import type { SchemaNode } from "./schema-walk.js";
import { REF_KEYWORDS } from "./schema-walk.js";

interface Edge {
  readonly to: string;
  /** The path of the reference this edge follows; undefined for an in-place subschema. */
  readonly ref: string | undefined;
}

/** One {@link ErrorCode.SchemaRefCycle} per loop found (at most one per reference), or none. */
export function referenceCycleProblems(nodes: readonly SchemaNode[], index: SchemaIndex): FieldError[] {
  const edges = new Map<string, Edge[]>();
  const out = (p: string): Edge[] => {
    let list = edges.get(p);
    if (list === undefined) edges.set(p, (list = []));
    return list;
  };
  for (const n of nodes) {
    if (n.parent !== undefined && n.inPlace) out(n.parent).push({ to: n.pointer, ref: undefined });
    if (!isPlainObject(n.schema)) continue;
    for (const keyword of REF_KEYWORDS) {
      const ref = n.schema[keyword];
      if (typeof ref !== "string") continue;
      const target = index.resolve(keyword, ref);
      if (target.kind !== "schema") continue;
      for (const to of target.pointers) out(n.pointer).push({ to, ref: join(n.path, keyword) });
    }
  }

  // Iterative depth-first search; a back edge closes a cycle, which must contain a reference
  // (the subschemas alone form a tree).
  const state = new Map<string, "open" | "done">();
  const reported = new Set<string>();
  const errors: FieldError[] = [];
  for (const start of nodes) {
    if (state.has(start.pointer)) continue;
    const path: { readonly node: string; readonly via: string | undefined; next: number }[] = [{ node: start.pointer, via: undefined, next: 0 }];
    state.set(start.pointer, "open");
    while (path.length > 0) {
      const top = path[path.length - 1] as (typeof path)[number];
      const list = edges.get(top.node) ?? [];
      if (top.next >= list.length) {
        state.set(top.node, "done");
        path.pop();
        continue;
      }
      const edge = list[top.next++] as Edge;
      const seen = state.get(edge.to);
      if (seen === undefined) {
        state.set(edge.to, "open");
        path.push({ node: edge.to, via: edge.ref, next: 0 });
      } else if (seen === "open") {
        // The loop: from where edge.to was entered up to this edge.
        const from = path.findIndex((f) => f.node === edge.to);
        const refs = [...path.slice(from + 1).map((f) => f.via), edge.ref].filter((r): r is string => r !== undefined);
        const at = refs[refs.length - 1];
        if (at !== undefined && !reported.has(at)) {
          reported.add(at);
          errors.push(
            fieldError(
              ErrorCode.SchemaRefCycle,
              at,
              "the schema's references loop back to where they started without descending into the config, so no config could ever be checked",
            ),
          );
        }
      }
    }
  }
  return errors;
}
