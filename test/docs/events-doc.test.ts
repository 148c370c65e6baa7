/**
 * docs/events.md is generated from the event catalog (`npm run docs:events`): it is current, and
 * every event type the log accepts, and no other, has the words that say what causes it.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createCatalog } from "../../src/events/catalog.js";
import { CAUSES, catalogTypes, generate, OUTPUT } from "../../scripts/gen-events-doc.js";

describe("docs/events.md", () => {
  it("is what the catalog generates now (run `npm run docs:events` when this fails)", () => {
    expect(readFileSync(OUTPUT, "utf8")).toBe(generate());
  });

  it("covers every event type the store's catalog accepts", () => {
    expect([...catalogTypes()].sort()).toEqual(createCatalog().types().sort());
    expect(Object.keys(CAUSES).sort()).toEqual([...catalogTypes()].sort());
  });

  it.each(catalogTypes())("has a section for %s with its version and fields", (type) => {
    const page = readFileSync(OUTPUT, "utf8");
    const section = page.split("\n### ").find((s) => s.startsWith(`\`${type}\``));
    expect(section).toBeDefined();
    expect(section).toMatch(/^Version \d+/m);
    expect(section).toContain("**What causes it.**");
  });
});
