import { describe, expect, it } from "vitest";
import { serveHostCall, type HostCallContext, type HostCallRecord } from "./host-call.js";
import { MAX_WAIT_MS, serveSecret, serveWait } from "./secret-call.js";

const secrets = new Map([["flex", new Map([["token", "T0K3N"], ["query-id", "42"]])]]);
const decode = (b: Uint8Array): unknown => JSON.parse(new TextDecoder().decode(b));

describe("the secret host call", () => {
  it("answers a granted role's key, and records the call without the value", () => {
    const records: HostCallRecord[] = [];
    expect(decode(serveSecret({ role: "flex", key: "token" }, secrets, (r) => records.push(r)))).toEqual({ result: { value: "T0K3N" } });
    expect(records).toEqual([{ method: "secret" }]);
  });

  it.each([
    ["a role not granted", { role: "other", key: "token" }, "no Secret is granted to this instance for the role other, or it does not exist"],
    ["a key the Secret lacks", { role: "flex", key: "password" }, "the Secret granted for the role flex has no key password"],
    ["a malformed name", { role: "../x", key: "token" }, "secret's role and key are Secret names and keys (letters, digits, -, _ and .)"],
    ["an extra field", { role: "flex", key: "token", all: true }, 'secret takes {"role": string, "key": string}'],
  ])("refuses %s with invalid_request", (_n, params, message) => {
    expect(decode(serveSecret(params, secrets, () => undefined))).toEqual({ error: { code: "invalid_request", message } });
  });

  it("grants nothing to a call without Secrets", () => {
    expect(decode(serveSecret({ role: "flex", key: "token" }, undefined, () => undefined))).toMatchObject({ error: { code: "invalid_request" } });
  });
});

describe("the wait host call", () => {
  const signal = new AbortController().signal;

  it("waits, then answers an empty result", async () => {
    const started = performance.now();
    expect(decode(await serveWait({ ms: 30 }, signal, () => 5000, () => undefined))).toEqual({ result: {} });
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });

  it("refuses at once a pause the call has no time for, or one out of range", async () => {
    expect(decode(await serveWait({ ms: 1000 }, signal, () => 1200, () => undefined))).toEqual({ error: { code: "invalid_request", message: "the call has 1200 ms left, too little to wait 1000 ms" } });
    expect(decode(await serveWait({ ms: MAX_WAIT_MS + 1 }, signal, () => 60_000, () => undefined))).toMatchObject({ error: { code: "invalid_request" } });
    expect(decode(await serveWait({ ms: 10 }, signal, undefined, () => undefined))).toMatchObject({ error: { code: "invalid_request" } });
  });

  it("ends early when the call's deadline aborts it", async () => {
    const c = new AbortController();
    const started = performance.now();
    setTimeout(() => c.abort(), 20);
    await serveWait({ ms: 3000 }, c.signal, () => 10_000, () => undefined);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("host_call dispatch", () => {
  const context: HostCallContext = { origins: new Set(["https://api.example.com"]), egressToken: "t", http: undefined, signal: new AbortController().signal, messageBytes: 1 << 20, requestBodyBytes: 1024, responseBodyBytes: 1024, secrets, remainingMs: () => 5000 };
  const call = async (v: unknown) => decode(await serveHostCall(new TextEncoder().encode(JSON.stringify(v)), context, () => undefined));

  it("serves secret and wait beside http, and names all three when refusing another method", async () => {
    expect(await call({ method: "secret", params: { role: "flex", key: "query-id" } })).toEqual({ result: { value: "42" } });
    expect(await call({ method: "wait", params: { ms: 1 } })).toEqual({ result: {} });
    expect(await call({ method: "sleep", params: {} })).toEqual({ error: { code: "unknown_method", message: "host_call serves only the methods http, secret and wait" } });
  });

  it("takes answerBase64 only as a boolean", async () => {
    expect(await call({ method: "http", params: { method: "GET", url: "https://api.example.com/x", answerBase64: "yes" } })).toEqual({ error: { code: "invalid_request", message: "params.answerBase64 must be a boolean" } });
  });
});
