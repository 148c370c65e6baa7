/** What long-running commands write where, and how the CLI names itself in what it tells people to run. */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commandName } from "./context.js";
import { terminalLog } from "./logger.js";

describe("where a long-running command's log shows", () => {
  it.each<[string, Parameters<typeof terminalLog>[0], ReturnType<typeof terminalLog>]>([
    ["up on a terminal: lines for people", { format: "text", stderrIsTTY: true }, "stderr-text"],
    ["up piped or in a service: still lines for people (the JSON is in the file)", { format: "text", stderrIsTTY: false }, "stderr-text"],
    ["up with --json: its log still for people", { format: "text", json: true, stderrIsTTY: false }, "stderr-text"],
    ["up --log-format json: JSON lines on stdout", { format: "json", stderrIsTTY: true }, "stdout-json"],
    ["another command on a terminal", { stderrIsTTY: true }, "stderr-text"],
    ["another command piped", { stderrIsTTY: false }, "stderr-json"],
    ["another command with --json", { json: true, stderrIsTTY: true }, "stderr-json"],
  ])("%s", (_what, o, where) => {
    expect(terminalLog(o)).toBe(where);
  });
});

describe("the command's name in what it tells people to run", () => {
  const dir = mkdtempSync(join(tmpdir(), "openfief-name-"));
  const checkout = join(dir, "checkout");
  const script = join(checkout, "bin", "openfief.js");
  const linked = join(dir, "linked");
  const other = join(dir, "other");
  for (const d of [join(checkout, "bin"), linked, other]) mkdirSync(d, { recursive: true });
  writeFileSync(script, "");
  symlinkSync(script, join(linked, "openfief"));
  writeFileSync(join(other, "openfief"), "another openfief");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each<[string, Parameters<typeof commandName>[0], string]>([
    ["openfief when that name on the PATH is this command (npm link)", { argv1: script, path: `${other}:${linked}`, cwd: checkout }, "openfief"],
    ["the path from the checkout when the PATH's openfief is another one", { argv1: script, path: other, cwd: checkout }, "./bin/openfief.js"],
    ["the whole path from elsewhere", { argv1: script, path: other, cwd: other }, script],
    ["openfief when started without a script path", { argv1: undefined }, "openfief"],
  ])("is %s", (_what, o, name) => {
    expect(commandName(o)).toBe(name);
  });
});
