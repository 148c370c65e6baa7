import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const SCRIPT = join(import.meta.dirname, "../../scripts/check-plugin-labels.mjs");
const PLUGIN = join(import.meta.dirname, "../../plugins/nbp-fx");
const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function tree(edit: (dockerfile: string, manifest: string) => void): string {
  const root = mkdtempSync(join(tmpdir(), "labels-"));
  roots.push(root);
  cpSync(join(PLUGIN, "Dockerfile"), join(root, "plugins/nbp-fx/Dockerfile"));
  cpSync(join(PLUGIN, "manifest.json"), join(root, "plugins/nbp-fx/manifest.json"));
  edit(join(root, "plugins/nbp-fx/Dockerfile"), join(root, "plugins/nbp-fx/manifest.json"));
  return root;
}

function replaceIn(file: string, from: string | RegExp, to: string): void {
  writeFileSync(file, readFileSync(file, "utf8").replace(from, to));
}

describe("check-plugin-labels", () => {
  it("passes on the repository's plugins", () => {
    expect(execFileSync("node", [SCRIPT], { encoding: "utf8" })).toContain("carry their manifest.json");
  });

  it("passes when manifest.json is only formatted differently", () => {
    const root = tree((_d, m) => writeFileSync(m, JSON.stringify(JSON.parse(readFileSync(m, "utf8")), null, 8)));
    expect(spawnSync("node", [SCRIPT, "--root", root]).status).toBe(0);
  });

  it.each([
    ["manifest.json asks for another host", (_d: string, m: string) => replaceIn(m, "api.nbp.pl", "api.nbp.pl.evil.example")],
    ["the label asks for another tier", (d: string) => replaceIn(d, '"dataTiers":["fx-rates"]', '"dataTiers":["fx-rates","ledger"]')],
    ["the label is not JSON", (d: string) => replaceIn(d, "manifest='{", "manifest='{{")],
    ["the label is missing", (d: string) => replaceIn(d, /^LABEL .*$/m, "")],
    ["the label sits in the build stage only", (d: string) => {
      const label = /^LABEL .*$/m.exec(readFileSync(d, "utf8"))?.[0] ?? "";
      replaceIn(d, label, "");
      replaceIn(d, "WORKDIR /src", `WORKDIR /src\n${label}`);
    }],
    ["the image runs as a named user", (d: string) => replaceIn(d, "USER 65532:65532", "USER nonroot")],
  ])("fails when %s", (_name, edit) => {
    const root = tree(edit);
    expect(spawnSync("node", [SCRIPT, "--root", root]).status).toBe(1);
  });

  it("rewrites a stale label from manifest.json with --write", () => {
    const root = tree((_d, m) => replaceIn(m, '"fx-rates"', '"fx-rates", "prices"'));
    expect(spawnSync("node", [SCRIPT, "--root", root]).status).toBe(1);
    expect(spawnSync("node", [SCRIPT, "--root", root, "--write"]).status).toBe(0);
    expect(readFileSync(join(root, "plugins/nbp-fx/Dockerfile"), "utf8")).toContain('"dataTiers":["fx-rates","prices"]');
  });
});
