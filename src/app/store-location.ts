/**
 * Where a command's event log is: `--store` (or `OPENFIEF_STORE`) names a SQLite file
 * (`sqlite:PATH`) or a PostgreSQL database (`postgres://…` / `postgresql://…`); without either the
 * log is the data folder's own SQLite file. A location is checked before anything opens it, and
 * what a message shows of a PostgreSQL URL never holds its password.
 */
import { readFileSync } from "node:fs";
import { AppError } from "./errors.js";

/** A log named by `--store`. */
export type StoreLocation =
  | { readonly kind: "sqlite"; readonly file: string }
  | { readonly kind: "postgres"; readonly url: string; /** The URL without its password, for messages. */ readonly shown: string };

/** The longest location accepted (a URL with a long password and host fits well within it). */
const MAX_LOCATION = 2048;

/** The URL without its password and without its query, for a message. */
export function shownUrl(u: URL): string {
  const user = u.username === "" ? "" : `${u.username}@`;
  return `${u.protocol}//${user}${u.host}${u.pathname}`;
}

/**
 * Reads a `--store` value. `flag` names where it came from (`--store`, `$OPENFIEF_STORE`). Refuses
 * (`usage`, one line that never repeats a password) an empty value, an unknown scheme, a URL that
 * does not parse or names no database, and a `sqlite:` with no path.
 */
export function parseStoreLocation(text: string, flag = "--store"): StoreLocation {
  const bad = (why: string): never => {
    throw new AppError("usage", `${flag} ${why}: give sqlite:PATH or postgres://USER@HOST:PORT/DATABASE`, "store");
  };
  if (text.length === 0) bad("is empty");
  if (text.length > MAX_LOCATION) bad(`is longer than ${MAX_LOCATION} characters`);
  if (text.startsWith("sqlite:")) {
    const file = text.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "");
    if (file.length === 0) bad("names no file after sqlite:");
    return { kind: "sqlite", file };
  }
  if (!/^postgres(ql)?:\/\//.test(text)) {
    // Only the scheme is shown: whatever follows may hold a password.
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]{0,20}:/.exec(text)?.[0];
    bad(scheme === undefined ? "is neither a sqlite: path nor a postgres:// URL" : `has the scheme ${JSON.stringify(scheme)}, which is not sqlite: or postgres://`);
  }
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return bad("is not a URL that parses");
  }
  if (u.hostname === "" && u.searchParams.get("host") === null) bad(`names no host (${shownUrl(u)})`);
  if (u.pathname.length <= 1) bad(`names no database (${shownUrl(u)})`);
  return { kind: "postgres", url: text, shown: shownUrl(u) };
}

/** The largest file a location is read from (a Secret's key holding one URL). */
const MAX_LOCATION_FILE = 16 * 1024;

/**
 * The location written in the file at `path` (a Secret's key mounted as a file, its trailing
 * newline ignored). `flag` names where the path came from; the file's content is never shown.
 */
export function readStoreFile(path: string, flag = "--store-file"): StoreLocation {
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_LOCATION_FILE) throw new Error("too large");
    text = bytes.toString("utf8").trim();
  } catch {
    throw new AppError("usage", `${flag} ${path}: cannot read the log's location there (a file holding sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE)`, "store");
  }
  return parseStoreLocation(text, `${flag} ${path}`);
}

/** Where a command is told its log is: the flags, then the environment. */
export interface StoreFlags {
  /** `--store`: the location itself. */
  readonly store?: string | undefined;
  /** `--store-file`: a file holding it (a Secret mounted as a file). */
  readonly storeFile?: string | undefined;
}

/**
 * The log a command should open: `--store`, else the file `--store-file` names, else
 * `$OPENFIEF_STORE`, else the file `$OPENFIEF_STORE_FILE` names (each when set and not empty;
 * the environment's two are what a Secret gives a pod: a variable or a mounted file), else null
 * (the data folder's own file). `--store` with `--store-file`, or both variables, is refused.
 */
export function storeLocationOf(o: StoreFlags, env: NodeJS.ProcessEnv = process.env): StoreLocation | null {
  if (o.store !== undefined && o.storeFile !== undefined) throw new AppError("usage", "give --store or --store-file, not both", "store");
  if (o.store !== undefined) return parseStoreLocation(o.store, "--store");
  if (o.storeFile !== undefined) return readStoreFile(o.storeFile, "--store-file");
  const fromEnv = env["OPENFIEF_STORE"];
  const fileEnv = env["OPENFIEF_STORE_FILE"];
  const hasEnv = fromEnv !== undefined && fromEnv !== "";
  const hasFile = fileEnv !== undefined && fileEnv !== "";
  if (hasEnv && hasFile) throw new AppError("usage", "set $OPENFIEF_STORE or $OPENFIEF_STORE_FILE, not both", "store");
  if (hasEnv) return parseStoreLocation(fromEnv, "$OPENFIEF_STORE");
  return hasFile ? readStoreFile(fileEnv, "$OPENFIEF_STORE_FILE") : null;
}
