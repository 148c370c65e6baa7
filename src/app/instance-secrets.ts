/**
 * The Secrets a WebAssembly plugin's instance was granted, read for each call (docs/adr/0184).
 * In the embedded mode an instance's Secret is the owner's file `<cluster folder>/secrets/<name>.yaml`
 * (a Kubernetes Secret, as a container plugin would mount it; OpenFief never writes it). Each is
 * read with a size cap before it is parsed, under the role the manifest names, so a rotated value is
 * used by the next call. A file that is absent, too large or not a Secret grants nothing; the
 * warning names the Secret and why, never a value.
 */
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { parse } from "yaml";
import { validateSecretName } from "../plugins/index.js";

/** A Secret a call may read: the role the manifest names and the instance's Secret it maps to. */
export interface GrantedSecretRef {
  readonly name: string;
  readonly role?: string;
}

/** Kubernetes' own cap on a Secret (1 MiB), and so the cap on the file. */
const MAX_SECRET_FILE_BYTES = 1024 * 1024 + 64 * 1024;
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The file's bytes, or null when absent; throws when over the cap. */
async function readCapped(file: string): Promise<Buffer | null> {
  let handle;
  try {
    handle = await open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  try {
    const buf = Buffer.alloc(MAX_SECRET_FILE_BYTES + 1);
    let total = 0;
    while (total < buf.length) {
      const { bytesRead } = await handle.read(buf, total, buf.length - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
    }
    if (total > MAX_SECRET_FILE_BYTES) throw new Error(`larger than ${MAX_SECRET_FILE_BYTES} bytes`);
    return buf.subarray(0, total);
  } finally {
    await handle.close();
  }
}

/** One `data` value: base64 of UTF-8 text. */
function decodeValue(k: string, v: unknown): string {
  const b64 = typeof v === "string" ? v.replace(/\s/g, "") : "";
  if (typeof v !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) throw new Error(`data.${k} is not base64`);
  try {
    return STRICT_UTF8.decode(Buffer.from(b64, "base64"));
  } catch {
    throw new Error(`data.${k} is not UTF-8 text`);
  }
}

/** A Secret's keys and values from its YAML: `data` (base64) and `stringData`, the latter winning. */
export function secretData(text: string, name: string): Map<string, string> {
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 0 });
  } catch {
    // The parser's message quotes the source, which is the Secret: say only that it is not YAML.
    throw new Error("not valid YAML");
  }
  if (!isRecord(doc) || doc.kind !== "Secret") throw new Error("not a Kubernetes Secret");
  const meta = doc.metadata;
  if (isRecord(meta) && meta.name !== undefined && meta.name !== name) throw new Error("its metadata.name is another Secret's");
  const out = new Map<string, string>();
  const data = doc.data ?? {};
  const stringData = doc.stringData ?? {};
  if (!isRecord(data) || !isRecord(stringData)) throw new Error("data and stringData must be maps");
  for (const [k, v] of Object.entries(data)) out.set(k, decodeValue(k, v));
  for (const [k, v] of Object.entries(stringData)) {
    if (typeof v !== "string") throw new Error(`stringData.${k} is not a string`);
    out.set(k, v);
  }
  return out;
}

/**
 * Reads each granted Secret from `secretsDir`, keyed by its role. An unreadable one is left out
 * (the plugin is told the role has no Secret) and logged without its content.
 */
export async function readGrantedSecrets(secretsDir: string, granted: readonly GrantedSecretRef[], logger: Logger, plugin: string): Promise<Map<string, Map<string, string>>> {
  const out = new Map<string, Map<string, string>>();
  for (const s of granted) {
    if (validateSecretName(s.name, "name").length > 0) continue;
    const file = join(secretsDir, `${s.name}.yaml`);
    try {
      const bytes = await readCapped(file);
      if (bytes === null) continue;
      out.set(s.role ?? s.name, secretData(STRICT_UTF8.decode(bytes), s.name));
    } catch (err) {
      logger.warn({ plugin, secret: s.name, err: err instanceof Error ? err.message : "unreadable" }, "the plugin's Secret cannot be read; the call goes on without it");
    }
  }
  return out;
}
