import { constants } from "node:fs";
import { open, readlink, realpath } from "node:fs/promises";
import { basename, dirname, resolve, sep } from "node:path";
import { DEFAULT_TOKEN_FILE, ENV, type Environment } from "./env.js";
import { SdkError } from "./errors.js";

/** Where the current value of a bearer token comes from; called once per use. */
export type TokenSource = () => Promise<string>;

const MAX_TOKEN_BYTES = 64 * 1024;

function insideOf(dir: string, path: string): boolean {
  const prefix = dir.endsWith(sep) ? dir : dir + sep;
  return path.startsWith(prefix);
}

/**
 * Reads a file confined to its own directory, like Go's os.Root: the path may not contain `..`,
 * and whatever it resolves to through symlinks (the kubelet's `..data` links included) must stay
 * inside the directory. Reads at most `maxBytes`.
 */
export async function readConfinedFile(path: string, maxBytes: number): Promise<Buffer> {
  if (path.split(/[\\/]/).includes("..")) {
    throw new SdkError("file_outside_directory", "the path contains '..'");
  }
  const absolute = resolve(path);
  const name = basename(absolute);
  let root: string;
  let target: string;
  try {
    root = await realpath(dirname(absolute));
    target = await realpath(absolute);
  } catch (cause) {
    throw new SdkError("file_unreadable", `cannot read ${name}`, { cause });
  }
  if (!insideOf(root, target)) {
    throw new SdkError("file_outside_directory", `${name} resolves outside its directory`);
  }
  let handle;
  try {
    // O_NOFOLLOW: a symlink swapped in after the check is refused rather than followed.
    handle = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (cause) {
    throw new SdkError("file_unreadable", `cannot read ${name}`, { cause });
  }
  try {
    let opened: string | undefined;
    try {
      opened = await readlink(`/proc/self/fd/${handle.fd}`);
    } catch {
      opened = undefined; // no /proc: the realpath check above stands alone
    }
    if (opened !== undefined && !insideOf(root, opened)) {
      throw new SdkError("file_outside_directory", `${name} resolves outside its directory`);
    }
    const info = await handle.stat();
    if (!info.isFile()) throw new SdkError("file_unreadable", `${name} is not a regular file`);
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > maxBytes) throw new SdkError("file_too_large", `${name} is larger than ${maxBytes} bytes`);
    }
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}

/**
 * Reads a projected token from its file. Called on every use because the kubelet rotates
 * projected tokens; confined to the file's directory (readConfinedFile).
 */
export async function readTokenFile(path: string): Promise<string> {
  const token = (await readConfinedFile(path, MAX_TOKEN_BYTES)).toString("utf8").trim();
  if (token === "") throw new SdkError("token_empty", `${basename(path)} is empty`);
  return token;
}

/** A TokenSource over one token file, read afresh on every call. */
export function tokenFile(path: string): TokenSource {
  return () => readTokenFile(path);
}

/** The `openfief-core` token: OPENFIEF_TOKEN_FILE, else /var/run/secrets/openfief/token. */
export function coreTokenSource(env: Environment = process.env): TokenSource {
  const configured = env[ENV.tokenFile];
  return tokenFile(configured !== undefined && configured.trim() !== "" ? configured.trim() : DEFAULT_TOKEN_FILE);
}
