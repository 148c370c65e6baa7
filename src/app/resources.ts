/**
 * Plugin and PluginGrant resources as written for the cluster (`apiVersion: openfief.io/v1alpha1`,
 * `kind`, `metadata.name`, namespace `openfief` when given, `spec`), from YAML or JSON text: a
 * file, standard input or an HTTP body. Caps are checked before anything is parsed (the text's
 * bytes, then the number of documents); the model validates the spec with its own caps (every list
 * as the CRD's). Every problem is reported at once, each with its source and document number.
 */
import { parseAllDocuments } from "yaml";
import { API_GROUP, API_VERSION, formatErrors, NAMESPACE, parseGrant, parsePlugin } from "../plugins/index.js";
import type { FieldError, Grant, Plugin } from "../plugins/index.js";
import { AppError } from "./errors.js";

/** A resource as read: validated, with its spec as given (what `apply` records). */
export type Resource =
  | { readonly kind: "Plugin"; readonly name: string; readonly plugin: Plugin; readonly raw: unknown; readonly source: string }
  | { readonly kind: "PluginGrant"; readonly name: string; readonly grant: Grant; readonly raw: unknown; readonly source: string };

/** The most bytes one input (a file, standard input, a request body) may hold. */
export const MAX_RESOURCE_BYTES = 1 << 20;
/** The most documents one input may hold. */
export const MAX_RESOURCE_DOCUMENTS = 64;
/** YAML aliases allowed per document (a billion-laughs document is refused, not expanded). */
const MAX_ALIASES = 16;

const API = `${API_GROUP}/${API_VERSION}`;
const TOP_LEVEL = new Set(["apiVersion", "kind", "metadata", "spec"]);
const METADATA = new Set(["name", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"]);

/** Refuses an input over {@link MAX_RESOURCE_BYTES}, before it is decoded or parsed. */
export function checkResourceSize(bytes: number, source: string): void {
  if (bytes > MAX_RESOURCE_BYTES) throw new AppError("too_large", `${source}: ${bytes} bytes is over the ${MAX_RESOURCE_BYTES}-byte limit of one input`);
}

/** Parses every resource of one input's text; throws an `invalid_resource` AppError naming every problem. */
export function parseResources(text: string, source: string): Resource[] {
  checkResourceSize(Buffer.byteLength(text, "utf8"), source);
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  if (list.length > MAX_RESOURCE_DOCUMENTS) throw new AppError("too_large", `${source}: ${list.length} documents is over the limit of ${MAX_RESOURCE_DOCUMENTS}`);
  const out: Resource[] = [];
  const problems: string[] = [];
  // The field of the first problem, for the HTTP API's `field` (every problem is in the message).
  let field: string | undefined;
  list.forEach((doc, i) => {
    const where = list.length > 1 ? `${source} (document ${i + 1})` : source;
    if (doc.errors.length > 0) {
      problems.push(`${where}: invalid YAML: ${doc.errors[0]?.message.split("\n")[0] ?? "parse error"}`);
      return;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIASES });
    } catch (err) {
      problems.push(`${where}: invalid YAML: ${err instanceof Error ? err.message.split("\n")[0] : "parse error"}`);
      return;
    }
    if (value === null || value === undefined) return; // an empty document, e.g. after a trailing ---
    const r = toResource(value, where);
    if ("problem" in r) {
      problems.push(r.problem);
      field ??= r.field;
    } else out.push(r);
  });
  if (problems.length > 0) throw new AppError("invalid_resource", problems.join("; "), field);
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `unknown field "x"` / `unknown fields "x", "y"`, for the keys of `o` not in `known`; null when none. */
function unknownFields(o: Record<string, unknown>, known: ReadonlySet<string>, what: string): string | null {
  const extra = Object.keys(o).filter((k) => !known.has(k));
  return extra.length === 0 ? null : `unknown ${what}${extra.length > 1 ? "s" : ""} ${extra.map((k) => JSON.stringify(k)).join(", ")}`;
}

/** Why the envelope (apiVersion, kind, metadata) is not a resource's, or null. */
function envelopeProblem(v: Record<string, unknown>): string | null {
  // The cluster would drop or reject these; accepting them here would record what never applies.
  const top = unknownFields(v, TOP_LEVEL, "field");
  if (top !== null) return `${top} (a resource has apiVersion, kind, metadata and spec${"status" in v ? "; status is the cluster's to write" : ""})`;
  if (v.apiVersion !== API) return `apiVersion must be ${API}`;
  if (v.kind !== "Plugin" && v.kind !== "PluginGrant") return "kind must be Plugin or PluginGrant";
  if (!isObject(v.metadata)) return "metadata.name is required";
  const meta = unknownFields(v.metadata, METADATA, "metadata field");
  if (meta !== null) return meta;
  if (v.metadata.namespace !== undefined && v.metadata.namespace !== NAMESPACE) return `metadata.namespace must be ${NAMESPACE}`;
  return null;
}

function toResource(value: unknown, where: string): Resource | { problem: string; field?: string } {
  if (!isObject(value)) return { problem: `${where}: not a resource object` };
  const v = value;
  const problem = envelopeProblem(v);
  if (problem !== null) return { problem: `${where}: ${problem}` };
  const name = (v.metadata as Record<string, unknown>).name;
  if (v.kind === "Plugin") {
    const r = parsePlugin({ name, spec: v.spec });
    if (!r.ok) return { problem: `${where}: Plugin ${shown(name)}: ${formatErrors(r.errors)}`, ...fieldOf(r.errors) };
    return { kind: "Plugin", name: r.value.name, plugin: r.value, raw: v.spec, source: where };
  }
  const r = parseGrant({ name, spec: v.spec ?? {} });
  if (!r.ok) return { problem: `${where}: PluginGrant ${shown(name)}: ${formatErrors(r.errors)}`, ...fieldOf(r.errors) };
  return { kind: "PluginGrant", name: r.value.name, grant: r.value, raw: v.spec ?? {}, source: where };
}

/** The first problem's path, as the resource document names it (`spec.manifest.egress[0]`). */
function fieldOf(errors: readonly FieldError[]): { field?: string } {
  const path = errors[0]?.path;
  if (path === undefined) return {};
  return { field: path === "" ? "spec" : path.startsWith("spec") || path.startsWith("metadata") ? path : `spec.${path}` };
}

/** A name as an error shows it: quoted, and cut short when it is long. */
function shown(name: unknown): string {
  const s = typeof name === "string" ? name : String(name);
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
}
