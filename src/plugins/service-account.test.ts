import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import { pluginForServiceAccount, serviceAccountName, serviceAccountUsername } from "./service-account.js";

describe("plugin identities", () => {
  it("names the ServiceAccount plugin-<name>", () => {
    expect(serviceAccountName("ibkr-main")).toBe("plugin-ibkr-main");
  });

  it("names its username in the openfief namespace", () => {
    expect(serviceAccountUsername("ibkr-main")).toBe("system:serviceaccount:openfief:plugin-ibkr-main");
  });

  it.each([["ibkr-main"], ["a"], ["a".repeat(56)]])("maps the username of %s back to the plugin", (name) => {
    expect(pluginForServiceAccount(serviceAccountUsername(name))).toEqual({ ok: true, value: name });
  });

  it.each([
    ["another namespace", "system:serviceaccount:default:plugin-ibkr"],
    ["a namespace sharing the prefix", "system:serviceaccount:openfief-x:plugin-ibkr"],
    ["extra colons in the name", "system:serviceaccount:openfief:plugin-ibkr:x"],
    ["the core's own ServiceAccount", "system:serviceaccount:openfief:openfief-core"],
    ["the egress proxy's ServiceAccount", "system:serviceaccount:openfief:openfief-egress"],
    ["an empty plugin name", "system:serviceaccount:openfief:plugin-"],
    ["a plugin name that is too long", `system:serviceaccount:openfief:plugin-${"a".repeat(57)}`],
    ["an upper-case plugin name", "system:serviceaccount:openfief:plugin-IBKR"],
    ["a plugin name starting with a digit", "system:serviceaccount:openfief:plugin-1x"],
    ["an upper-case prefix", "System:ServiceAccount:openfief:plugin-ibkr"],
    ["a ServiceAccount without the plugin- prefix", "system:serviceaccount:openfief:ibkr"],
    ["a user that is not a ServiceAccount", "plugin-ibkr"],
    ["a node", "system:node:plugin-ibkr"],
    ["trailing whitespace", "system:serviceaccount:openfief:plugin-ibkr "],
    ["an empty username", ""],
  ])("refuses %s", (_what, username) => {
    const result = pluginForServiceAccount(username);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.errors.map((e) => e.code)).toEqual([ErrorCode.NotAPlugin]);
      // One fixed message: the username, which a caller controls, is never echoed.
      const reference = pluginForServiceAccount("reference");
      expect(result.errors[0]?.message).toBe(reference.ok ? "" : reference.errors[0]?.message);
    }
  });

  it("round-trips every valid plugin name", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z](?:[a-z0-9-]{0,54}[a-z0-9])?$/), (name) => {
        expect(pluginForServiceAccount(serviceAccountUsername(name))).toEqual({ ok: true, value: name });
      }),
      { numRuns: 100 },
    );
  });
});
