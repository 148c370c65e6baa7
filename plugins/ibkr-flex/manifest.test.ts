import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatHostPort, parseManifestLabel } from "../../src/plugins/index.js";

const text = readFileSync(join(import.meta.dirname, "manifest.json"), "utf8");
const manifest = JSON.parse(text) as Record<string, unknown>;

describe("ibkr-flex's manifest", () => {
  it("asks for exactly what the plugin needs: a connector reaching IBKR's Flex Web Service, one Secret role, no config", () => {
    expect(Object.keys(manifest).sort()).toEqual(["capabilities", "dataTiers", "egress", "secrets"]);
    const parsed = parseManifestLabel(JSON.stringify(manifest));
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    expect(parsed.value.capabilities).toEqual(["connector"]);
    expect(parsed.value.egress.map(formatHostPort)).toEqual(["ndcdyn.interactivebrokers.com:443", "gdcdyn.interactivebrokers.com:443"]);
    expect(parsed.value.secrets).toEqual([{ name: "flex", mountPath: "/etc/openfief/ibkr-flex" }]);
    expect(parsed.value.dataTiers).toEqual(["brokerage"]);
  });
});
