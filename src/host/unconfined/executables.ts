/**
 * The unconfined plugin directory (seed 003, `Unconfined.Executables`): regular files with an
 * execute permission whose names are 1–128 letters, digits, dots, underscores and hyphens, not
 * starting with a dot, underscore or hyphen. Listing reads and hashes them; it runs none of them.
 * Each start of an executable runs a sealed copy: copied from the directory into a private one
 * while hashed, refused unless the digest is the one permitted.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { chmod, mkdir, open, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { hostError, HostErrorCode, type HostResult } from "../errors.js";

/** An executable in the unconfined plugin directory. */
export interface ExecutableFile {
  readonly name: string;
  /** Lowercase hex SHA-256 of its bytes. */
  readonly digest: string;
  readonly size: number;
}

const NAME_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const NAME_REST = `${NAME_FIRST}._-`;

/** The seed's name rule, without a regex. */
export function isExecutableName(name: string): boolean {
  if (name.length < 1 || name.length > 128) return false;
  if (!NAME_FIRST.includes(name[0] as string)) return false;
  for (const c of name) if (!NAME_REST.includes(c)) return false;
  return true;
}

/**
 * Opens `dir/name` without following a symlink and checks it is a regular executable file of at
 * most `maxBytes`; hashes it (and copies it to `copyTo` when given) in one pass.
 */
async function readExecutable(dir: string, name: string, maxBytes: number, copyTo?: string): Promise<HostResult<ExecutableFile>> {
  const unknown = (why: string) => ({ ok: false as const, error: hostError(HostErrorCode.ExecutableUnknown, `${name}: ${why}`, "executable") });
  if (!isExecutableName(name)) return unknown("not an executable name (1–128 letters, digits, '.', '_', '-', not starting with '.', '_' or '-')");
  let handle;
  try {
    handle = await open(join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return unknown("no such executable in the unconfined plugin directory");
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return unknown("not a regular file");
    if ((st.mode & 0o111) === 0) return unknown("not executable");
    if (st.size > maxBytes) return unknown(`larger than the cap of ${maxBytes} bytes`);
    const hash = createHash("sha256");
    const out = copyTo === undefined ? undefined : await open(copyTo, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      let size = 0;
      const buf = Buffer.alloc(1024 * 1024);
      for (;;) {
        const { bytesRead } = await handle.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        size += bytesRead;
        if (size > maxBytes) return unknown(`larger than the cap of ${maxBytes} bytes`);
        hash.update(buf.subarray(0, bytesRead));
        if (out !== undefined) await out.write(buf.subarray(0, bytesRead));
      }
      return { ok: true, value: { name, digest: hash.digest("hex"), size } };
    } finally {
      await out?.close();
    }
  } finally {
    await handle.close();
  }
}

/** The executables of `dir`, by name; never runs one. */
export async function listExecutables(dir: string, maxBytes: number): Promise<ExecutableFile[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const out: ExecutableFile[] = [];
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (!e.isFile() || !isExecutableName(e.name)) continue;
    const r = await readExecutable(dir, e.name, maxBytes);
    if (r.ok) out.push(r.value);
  }
  return out;
}

/** One executable, by name (`plugin_executable_unknown` when there is none by the rule). */
export function inspectExecutable(dir: string, name: string, maxBytes: number): Promise<HostResult<ExecutableFile>> {
  return readExecutable(dir, name, maxBytes);
}

/**
 * Copies `dir/name` into `sealedDir` while hashing it; the copy is kept (read and execute for the
 * owner only) when its digest is `digest`, else removed and the start refused with
 * `plugin_executable_changed`. The caller runs the copy and removes it when the process ends.
 */
export async function sealExecutable(dir: string, name: string, digest: string, sealedDir: string, maxBytes: number): Promise<HostResult<string>> {
  await mkdir(sealedDir, { recursive: true, mode: 0o700 });
  const path = join(sealedDir, `${digest.slice(0, 16)}-${randomBytes(6).toString("hex")}-${name}`);
  const r = await readExecutable(dir, name, maxBytes, path).catch(() => undefined);
  if (r === undefined || !r.ok) {
    await rm(path, { force: true });
    return r ?? { ok: false, error: hostError(HostErrorCode.ExecutableInvalid, `${name}: could not be copied to start it`, "executable") };
  }
  if (r.value.digest !== digest) {
    await rm(path, { force: true });
    return { ok: false, error: hostError(HostErrorCode.ExecutableChanged, `${name} now has digest ${r.value.digest}, not the permitted ${digest}`, "executable") };
  }
  await chmod(path, 0o500);
  return { ok: true, value: path };
}
