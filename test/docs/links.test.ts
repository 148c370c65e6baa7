/** Every relative link in the README and docs/ names a file or folder that exists. */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function markdown(dir: string, keep: (name: string) => boolean = (n) => n.endsWith(".md")): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === "node_modules" ? [] : markdown(join(dir, e.name), keep)) : keep(e.name) ? [join(dir, e.name)] : [],
  );
}

const pages = ["README.md", ...markdown("docs"), ...["sdk", "plugins", "examples", "bench"].flatMap((d) => markdown(d, (n) => n === "README.md"))];

/** `[text](target)` links that are not URLs or anchors, without their `#fragment`. */
function relativeLinks(text: string): string[] {
  const withoutCode = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...withoutCode.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string).filter((t) => !/^[a-z]+:|^#/.test(t)).map((t) => t.replace(/#.*$/, ""));
}

describe("links in the documentation", () => {
  it.each(pages)("%s links only to what exists", (path) => {
    const broken = relativeLinks(readFileSync(join(ROOT, path), "utf8")).filter((t) => !existsSync(join(ROOT, dirname(path), t)));
    expect(broken).toEqual([]);
  });
});
