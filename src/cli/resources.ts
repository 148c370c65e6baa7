/**
 * Reading Plugin and PluginGrant resources from YAML, as they would be written for the cluster:
 * `apiVersion: openfief.io/v1alpha1`, `kind`, `metadata.name` (namespace `openfief` when given),
 * `spec`. A file may hold several documents; a folder is read in name order (`*.yaml`, `*.yml`,
 * `*.json`). Every problem is reported, with its file and document number.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { API_GROUP, API_VERSION, formatErrors, NAMESPACE, parseGrant, parsePlugin } from "../plugins/index.js";
import type { Grant, Plugin } from "../plugins/index.js";
import { CliError } from "./cli-error.js";

export type Resource =
  | { readonly kind: "Plugin"; readonly name: string; readonly plugin: Plugin; readonly raw: unknown; readonly source: string }
  | { readonly kind: "PluginGrant"; readonly name: string; readonly grant: Grant; readonly raw: unknown; readonly source: string };

const API = `${API_GROUP}/${API_VERSION}`;

/** Reads every resource under `path` (a file or a folder), or throws a CliError naming each problem. */
export async function readResources(path: string): Promise<Resource[]> {
  let files: string[];
  try {
    const st = await stat(path);
    files = st.isDirectory()
      ? (await readdir(path)).filter((f) => /\.(ya?ml|json)$/.test(f)).sort().map((f) => join(path, f))
      : [path];
  } catch {
    throw new CliError(`cannot read ${path}: no such file or folder`);
  }
  if (files.length === 0) throw new CliError(`${path}: no .yaml, .yml or .json files`);
  const out: Resource[] = [];
  const problems: string[] = [];
  for (const file of files) {
    const text = await readFile(file, "utf8");
    const docs = parseAllDocuments(text, { uniqueKeys: true });
    docs.forEach((doc, i) => {
      const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
      if (doc.errors.length > 0) {
        problems.push(`${where}: invalid YAML: ${doc.errors[0]?.message.split("\n")[0] ?? "parse error"}`);
        return;
      }
      const value: unknown = doc.toJSON();
      if (value === null || value === undefined) return; // an empty document, e.g. after a trailing ---
      const r = toResource(value, where);
      if (typeof r === "string") problems.push(r);
      else out.push(r);
    });
  }
  if (problems.length > 0) throw new CliError(problems.join("; "));
  if (out.length === 0) throw new CliError(`${path}: no Plugin or PluginGrant resources`);
  return out;
}

function toResource(value: unknown, where: string): Resource | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return `${where}: not a resource object`;
  const v = value as Record<string, unknown>;
  if (v.apiVersion !== API) return `${where}: apiVersion must be ${API}`;
  if (v.kind !== "Plugin" && v.kind !== "PluginGrant") return `${where}: kind must be Plugin or PluginGrant`;
  const meta = v.metadata;
  if (typeof meta !== "object" || meta === null) return `${where}: metadata.name is required`;
  const m = meta as Record<string, unknown>;
  if (m.namespace !== undefined && m.namespace !== NAMESPACE) return `${where}: metadata.namespace must be ${NAMESPACE}`;
  const name = m.name;
  if (v.kind === "Plugin") {
    const r = parsePlugin({ name, spec: v.spec });
    if (!r.ok) return `${where}: Plugin ${String(name)}: ${formatErrors(r.errors)}`;
    return { kind: "Plugin", name: r.value.name, plugin: r.value, raw: v.spec, source: where };
  }
  const r = parseGrant({ name, spec: v.spec ?? {} });
  if (!r.ok) return `${where}: PluginGrant ${String(name)}: ${formatErrors(r.errors)}`;
  return { kind: "PluginGrant", name: r.value.name, grant: r.value, raw: v.spec ?? {}, source: where };
}
