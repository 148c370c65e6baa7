/**
 * The `secret` and `wait` host calls (docs/abi.md, docs/adr/0184). `secret` hands a guest one
 * value of a Secret its instance was granted, by the manifest's role and the Secret's key; the
 * caller reads the Secrets for each call and the host puts every value on the call's redaction
 * list, so nothing the plugin logs or reports carries one. `wait` pauses the guest (WASI preview 1
 * has no sleep the host serves) and refuses at once a pause that would outlast the call.
 */
import { GuestErrorCode } from "./errors.js";
import type { HostCallRecord } from "./host-call.js";

/** A call's granted Secrets: role → key → value. */
export type GrantedSecretValues = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** The longest one `wait` pauses (ms). */
export const MAX_WAIT_MS = 5000;
/** A pause is refused unless this much of the call's time is left after it (ms). */
const WAIT_MARGIN_MS = 500;
const ENCODER = new TextEncoder();

function reply(value: unknown): Uint8Array {
  return ENCODER.encode(JSON.stringify(value));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A role or key as it may be named: a Kubernetes Secret name or data key, at most 253 characters. */
function isName(v: unknown): v is string {
  if (typeof v !== "string" || v.length === 0 || v.length > 253) return false;
  for (const c of v) if (!/[-._a-zA-Z0-9]/.test(c)) return false;
  return true;
}

/** `{"role": string, "key": string}` → `{"result": {"value": string}}`. */
export function serveSecret(params: unknown, secrets: GrantedSecretValues | undefined, record: (r: HostCallRecord) => void): Uint8Array {
  const refuse = (message: string): Uint8Array => {
    record({ method: "secret", code: GuestErrorCode.InvalidRequest });
    return reply({ error: { code: GuestErrorCode.InvalidRequest, message } });
  };
  if (!isObject(params) || Object.keys(params).some((k) => k !== "role" && k !== "key")) return refuse('secret takes {"role": string, "key": string}');
  const { role, key } = params;
  if (!isName(role) || !isName(key)) return refuse("secret's role and key are Secret names and keys (letters, digits, -, _ and .)");
  const granted = secrets?.get(role);
  if (granted === undefined) return refuse(`no Secret is granted to this instance for the role ${role}, or it does not exist`);
  const value = granted.get(key);
  if (value === undefined) return refuse(`the Secret granted for the role ${role} has no key ${key}`);
  record({ method: "secret" });
  return reply({ result: { value } });
}

/** `{"ms": 1..5000}` → `{"result": {}}` once waited, or refused at once when the call has not the time. */
export async function serveWait(params: unknown, signal: AbortSignal, remainingMs: (() => number) | undefined, record: (r: HostCallRecord) => void): Promise<Uint8Array> {
  const refuse = (code: string, message: string): Uint8Array => {
    record({ method: "wait", code });
    return reply({ error: { code, message } });
  };
  if (!isObject(params) || Object.keys(params).some((k) => k !== "ms")) return refuse(GuestErrorCode.InvalidRequest, 'wait takes {"ms": integer}');
  const ms = params.ms;
  if (typeof ms !== "number" || !Number.isInteger(ms) || ms < 1 || ms > MAX_WAIT_MS) return refuse(GuestErrorCode.InvalidRequest, `wait's ms is an integer from 1 to ${MAX_WAIT_MS}`);
  const left = remainingMs?.() ?? 0;
  if (left < ms + WAIT_MARGIN_MS) return refuse(GuestErrorCode.InvalidRequest, `the call has ${Math.floor(left)} ms left, too little to wait ${ms} ms`);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
  record({ method: "wait" });
  return reply({ result: {} });
}
