import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { coreAccount, failureOf, statusName } from "./operator-syncs.js";

describe("the leader's calls of connectors", () => {
  it.each([
    ["system:serviceaccount:openfief:openfief-core", { namespace: "openfief", name: "openfief-core" }],
    ["system:serviceaccount:other:core", { namespace: "other", name: "core" }],
  ])("asks tokens of the ServiceAccount the core's subject %s names", (subject, account) => {
    expect(coreAccount(subject)).toEqual(account);
  });

  it.each(["system:serviceaccount::x", "system:node:x", "openfief-core", "system:serviceaccount:a:b:c"])("refuses a core subject that names no ServiceAccount: %s", (subject) => {
    expect(() => coreAccount(subject)).toThrow(/no ServiceAccount/);
  });

  it.each([
    [Code.Unavailable, "unavailable"], [Code.InvalidArgument, "invalid_argument"], [Code.DeadlineExceeded, "deadline_exceeded"],
    [Code.PermissionDenied, "permission_denied"], [Code.Unauthenticated, "unauthenticated"], [Code.ResourceExhausted, "resource_exhausted"],
  ])("names Connect's code %s as the scheduler's status %s", (code, name) => {
    expect(statusName(code)).toBe(name);
  });

  it.each([
    ["the plugin host's own code before its message", new ConnectError("http_failed: the ECB answered HTTP 503", Code.Unavailable), { code: "http_failed", status: "unavailable" }],
    ["the status when the message names no code", new ConnectError("the statement cannot be read", Code.InvalidArgument), { code: "invalid_argument", status: "invalid_argument" }],
    ["an instance the plugin host does not run yet, to retry", new ConnectError("the plugin host does not run ecb-fx", Code.PermissionDenied), { code: "plugin_not_running", status: "unavailable" }],
    ["a refused token, not retried", new ConnectError("the core's token was refused", Code.Unauthenticated), { code: "unauthenticated", status: "unauthenticated" }],
    ["a failure that is no Connect error", new Error("socket hang up"), { code: "unknown", status: "unknown" }],
  ])("records %s", (_what, err, expected) => {
    expect(failureOf(err)).toEqual({ ok: false, ...expected });
  });
});
