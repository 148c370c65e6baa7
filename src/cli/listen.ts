/**
 * The flags of a command that serves the owner's face: `--listen host:port`, and the TLS
 * certificate and key (`openfief up`, `openfief console`).
 */
import { readFileSync } from "node:fs";
import { AppError } from "../app/index.js";

/** `host:port` or `[v6]:port`. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = Number(m?.[3]);
  if (m === null || port > 65535) throw new AppError("usage", `--listen must be host:port, such as 127.0.0.1:4780 or [::1]:4780, not ${JSON.stringify(text.slice(0, 64))}`);
  return { host: m[1] ?? m[2] ?? "", port };
}

/** A PEM file's text (at most 1 MiB); `usage` naming the flag when it cannot be read as PEM. */
export function readPem(path: string, flag: string): string {
  try {
    const text = readFileSync(path, "utf8");
    if (text.length > 1 << 20 || !text.includes("-----BEGIN ")) throw new Error("not PEM");
    return text;
  } catch {
    throw new AppError("usage", `${flag} ${path}: cannot read a PEM file there`);
  }
}

/** The TLS settings of `--tls-cert` and `--tls-key` (given together, or neither). */
export function tlsOf(o: { readonly tlsCert?: string | undefined; readonly tlsKey?: string | undefined }): { cert: string; key: string } | undefined {
  if ((o.tlsCert === undefined) !== (o.tlsKey === undefined)) throw new AppError("usage", "give --tls-cert and --tls-key together");
  return o.tlsCert !== undefined && o.tlsKey !== undefined ? { cert: readPem(o.tlsCert, "--tls-cert"), key: readPem(o.tlsKey, "--tls-key") } : undefined;
}
