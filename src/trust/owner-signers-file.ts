/**
 * The owner's trusted signers, read at start from a file: the content of the optional ConfigMap
 * `openfief-trusted-signers` in a cluster, or a file given to the CLI. An invalid file stops the
 * process with a message naming the bad entry, because running with half of the owner's list
 * would trust the wrong images or refuse the right ones.
 */
import { readFileSync } from "node:fs";
import { formatErrors, parseOwnerSigners } from "../plugins/index.js";
import type { FieldError, Signer } from "../plugins/index.js";

/** The owner signers file could not be read or is invalid; `errors` name every bad entry. */
export class OwnerSignersError extends Error {
  constructor(
    readonly path: string,
    readonly errors: readonly FieldError[],
    message: string,
  ) {
    super(message);
    this.name = "OwnerSignersError";
  }
}

/** Parses the file's text; throws {@link OwnerSignersError} listing every problem. */
export function parseOwnerSignersText(text: string, path: string): Signer[] {
  const result = parseOwnerSigners(text);
  if (!result.ok) {
    throw new OwnerSignersError(path, result.errors, `invalid trusted signers file ${path}: ${formatErrors(result.errors)}`);
  }
  return result.value;
}

/**
 * Reads the owner's signers. A missing file is no owner signers when `optional` (the ConfigMap
 * is optional), an error otherwise.
 */
export function loadOwnerSignersFile(path: string, options: { optional?: boolean } = {}): Signer[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && options.optional === true) return [];
    throw new OwnerSignersError(path, [], `cannot read trusted signers file ${path}: ${code ?? "error"}`);
  }
  return parseOwnerSignersText(text, path);
}

/**
 * For process start: the owner's signers, or a one-line message on stderr and exit 1 when the
 * file is invalid. `exit` and `write` are injected so the behaviour can be tested.
 */
export function loadOwnerSignersAtStart(
  path: string,
  options: { optional?: boolean; exit?: (code: number) => never; write?: (line: string) => void } = {},
): Signer[] {
  try {
    return loadOwnerSignersFile(path, options.optional === undefined ? {} : { optional: options.optional });
  } catch (err) {
    const write = options.write ?? ((line: string) => void process.stderr.write(line));
    const exit = options.exit ?? ((code: number): never => process.exit(code));
    write(`openfief: ${err instanceof Error ? err.message : String(err)}\n`);
    return exit(1);
  }
}
