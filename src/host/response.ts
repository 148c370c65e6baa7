/**
 * Reading a plugin's answer (docs/abi.md): UTF-8 JSON, exactly `{"result": any}` or
 * `{"error": {"code", "message"}}` with one of the ABI's guest codes. Anything else is the
 * plugin's failure to speak the ABI (`plugin_failed`), so a plugin can never report a host code.
 */
import type { JsonValue } from "../plugins/index.js";
import { hostError, HostErrorCode, isGuestErrorCode, type HostError, type PluginError } from "./errors.js";

/** A parsed answer. */
export type ParsedResponse = { readonly ok: true; readonly result: JsonValue } | { readonly ok: false; readonly error: HostError | PluginError };

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

function notAbi(why: string): ParsedResponse {
  return { ok: false, error: hostError(HostErrorCode.Failed, `the plugin's response does not follow the ABI: ${why}`) };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Parses a response of at most the message cap (the caller checked the size). */
export function parseResponse(bytes: Uint8Array): ParsedResponse {
  let value: unknown;
  try {
    value = JSON.parse(STRICT_UTF8.decode(bytes));
  } catch {
    return notAbi("it is not UTF-8 JSON");
  }
  return parseEnvelope(value);
}

/**
 * Reads a parsed envelope; `ignore` names a field besides the answer that may be there (`id` of
 * an unconfined plugin's frame).
 */
export function parseEnvelope(value: unknown, ignore?: string): ParsedResponse {
  if (!isObject(value)) return notAbi("it is not a JSON object");
  const keys = Object.keys(value).filter((k) => k !== ignore);
  if (keys.length !== 1 || (keys[0] !== "result" && keys[0] !== "error")) return notAbi('it must have exactly one field, "result" or "error"');
  if (keys[0] === "result") return { ok: true, result: value.result as JsonValue };
  const e = value.error;
  if (!isObject(e) || typeof e.code !== "string" || typeof e.message !== "string") return notAbi("error must be {code: string, message: string}");
  if (!isGuestErrorCode(e.code)) return notAbi(`error code ${JSON.stringify(e.code.slice(0, 64))} is not one of the ABI's codes`);
  return { ok: false, error: { source: "plugin", code: e.code, message: e.message.slice(0, 4000) } };
}
