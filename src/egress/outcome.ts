/**
 * What one CONNECT came to, as a value: a tunnel to a checked address, or a refusal from the
 * table. The proxy builds one per CONNECT, answers from it, records from it, counts it and logs it
 * in one line; nothing is passed around by mutation.
 */
import type { DestinationDecision } from "./decide.js";
import type { ProxyError } from "./proxy-status.js";
import { REFUSALS, type RefusalCode } from "./refusals.js";

/** What is known of the request when it ends (each set once its step ran). */
export interface ConnectFacts {
  readonly host?: string;
  readonly port?: number;
  readonly plugin?: string;
  /** The destination decision, once the plugin was identified. */
  readonly destination?: DestinationDecision;
}

/** A CONNECT's end. */
export type ConnectOutcome =
  | (ConnectFacts & { readonly kind: "tunnel"; readonly plugin: string; readonly host: string; readonly port: number; readonly address: string })
  | (ConnectFacts & {
      readonly kind: "refused";
      readonly code: RefusalCode;
      /** The address whose decision was committed before the refusal (a dial that then failed). */
      readonly address?: string;
      readonly headers?: Readonly<Record<string, string>>;
      /** A more precise `Proxy-Status` error than the table's row gives (a failed dial's). */
      readonly proxyError?: ProxyError;
    });

/** A refusal with the facts gathered so far. */
export function refused(code: RefusalCode, facts: ConnectFacts = {}, extra: { address?: string; headers?: Readonly<Record<string, string>>; proxyError?: ProxyError } = {}): ConnectOutcome {
  return { ...facts, kind: "refused", code, ...extra };
}

/** The detail appended to a refusal's answer: which address check refused (never the address). */
export function refusalDetail(o: ConnectOutcome): string | undefined {
  const d = o.destination;
  return o.kind === "refused" && o.code === "forbidden_address" && d !== undefined && !d.allowed && d.reason === "forbidden_address" ? d.addressRefusal : undefined;
}

/** The `decision` object of the pino line; built field by field (no spreads): once per CONNECT. */
export function decisionLine(o: ConnectOutcome, status: number): Record<string, unknown> {
  const line: Record<string, unknown> = { allowed: o.kind === "tunnel", outcome: o.kind === "tunnel" ? "allowed" : REFUSALS[o.code].outcome, status, code: o.kind === "tunnel" ? "tunnel" : o.code };
  if (o.plugin !== undefined) line.plugin = o.plugin;
  if (o.host !== undefined) line.host = o.host;
  if (o.port !== undefined) line.port = o.port;
  const d = o.destination;
  if (d !== undefined) line.reason = d.reason;
  if (o.address !== undefined) line.address = o.address;
  if (d !== undefined && !d.allowed && d.reason === "forbidden_address") line.refusedAddress = d.refusedAddress;
  return line;
}
