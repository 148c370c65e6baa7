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

/** From each schema to what applies to the same value: its in-place subschemas and what its references reach. */
function inPlaceEdges(nodes: readonly SchemaNode[], index: SchemaIndex): Map<string, Edge[]> {
  const edges = new Map<string, Edge[]>();
  const add = (from: string, edge: Edge): void => {
    const list = edges.get(from);
    if (list === undefined) edges.set(from, [edge]);
    else list.push(edge);
  };
  for (const n of nodes) {
    if (n.parent !== undefined && n.inPlace) add(n.parent, { to: n.pointer, ref: undefined });
    if (!isPlainObject(n.schema)) continue;
    for (const keyword of REF_KEYWORDS) {
      const ref = n.schema[keyword];
      const target = typeof ref === "string" ? index.resolve(keyword, ref) : undefined;
      if (target?.kind === "schema") for (const to of target.pointers) add(n.pointer, { to, ref: join(n.path, keyword) });
    }
  }
  return edges;
}

interface Frame {
  readonly node: string;
  /** The reference followed to get here; undefined for an in-place subschema or a start. */
  readonly via: string | undefined;
  next: number;
}

/** The path of a reference on the loop that `edge` closes, `path` being the search's current route. */
function loopReference(path: readonly Frame[], edge: Edge): string | undefined {
  const from = path.findIndex((f) => f.node === edge.to);
  const refs = [...path.slice(from + 1).map((f) => f.via), edge.ref].filter((r): r is string => r !== undefined);
  return refs[refs.length - 1];
}

/** One {@link ErrorCode.SchemaRefCycle} per loop found (at most one per reference), or none. */
export function referenceCycleProblems(nodes: readonly SchemaNode[], index: SchemaIndex): FieldError[] {
  const edges = inPlaceEdges(nodes, index);
  // Iterative depth-first search; a back edge closes a loop, which must contain a reference
  // (the subschemas alone form a tree).
  const state = new Map<string, "open" | "done">();
  const reported = new Set<string>();
  for (const start of nodes) {
    if (state.has(start.pointer)) continue;
    const path: Frame[] = [{ node: start.pointer, via: undefined, next: 0 }];
    state.set(start.pointer, "open");
    while (path.length > 0) {
      const top = path[path.length - 1] as Frame;
      const edge = edges.get(top.node)?.[top.next++];
      if (edge === undefined) {
        state.set(top.node, "done");
        path.pop();
      } else if (!state.has(edge.to)) {
        state.set(edge.to, "open");
        path.push({ node: edge.to, via: edge.ref, next: 0 });
      } else if (state.get(edge.to) === "open") {
        const at = loopReference(path, edge);
        if (at !== undefined) reported.add(at);
      }
    }
  }
  return [...reported].map((at) =>
    fieldError(
      ErrorCode.SchemaRefCycle,
      at,
      "the schema's references loop back to where they started without descending into the config, so no config could ever be checked",
    ),
  );
}
