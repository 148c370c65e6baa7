import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const manifest = JSON.parse(readFileSync(join(import.meta.dirname, "manifest.json"), "utf8")) as Record<string, unknown>;

describe("nbp-fx's manifest", () => {
  it("asks for exactly what the plugin needs: a connector reaching api.nbp.pl, no Secrets", () => {
    expect(manifest.capabilities).toEqual(["connector"]);
    expect(manifest.egress).toEqual([{ host: "api.nbp.pl" }]);
    expect(manifest.secrets).toEqual([]);
    expect(manifest.dataTiers).toEqual(["fx-rates"]);
    expect(Object.keys(manifest).sort()).toEqual(["capabilities", "configSchema", "dataTiers", "egress", "secrets"]);
  });

  it("describes the only setting the plugin reads, startDate", () => {
    expect(manifest.configSchema).toMatchObject({ type: "object", additionalProperties: false, properties: { startDate: { type: "string" } } });
  });
});
