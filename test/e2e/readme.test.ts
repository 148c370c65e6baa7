/**
 * The README's sample outputs are what the program prints: each command of a sample block is run
 * as a user would (the bundle, as a process) and its standard output compared with the `# ` lines
 * under it, line by line (`…` in a sample stands for the rest of a digest).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, spawnOpenfief } from "./support.js";

interface Sample {
  readonly args: string[];
  readonly output: string[];
}

/** The commands of the first `sh` block under `heading`, each with the output lines under it. */
function samples(heading: string): Sample[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf(heading));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  const out: { args: string[]; output: string[] }[] = [];
  let pending = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("#")) {
      out.at(-1)?.output.push(line.replace(/^# ?/, ""));
      continue;
    }
    pending += line.replace(/\\$/, " ");
    if (line.endsWith("\\") || line.trim() === "") continue;
    out.push({ args: pending.trim().replace(/^(npx )?openfief /, "").split(/\s+/), output: [] });
    pending = "";
  }
  return out;
}

/** A sample line as a pattern: itself, but for `…`, the rest of a digest. */
function pattern(line: string): RegExp {
  return new RegExp(`^${line.split("…").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[0-9a-f]*")}$`);
}

describe("the README's samples", () => {
  const verify = samples("### Verifying an image");

  it("has the samples this test runs", () => {
    expect(verify.map((s) => s.args[0])).toEqual(["verify", "verify", "verify"]);
  });

  it.each(verify.map((s) => [s.args.join(" "), s] as const))("prints what `openfief %s` shows", async (_cmd, s) => {
    const r = await spawnOpenfief(s.args);
    const lines = r.stdout.replace(/\n$/, "").split("\n");
    expect(lines).toHaveLength(s.output.length);
    lines.forEach((line, i) => expect(line).toMatch(pattern(s.output[i] ?? "")));
  }, 60_000);
});
