/**
 * What the log already says about a config schema (ADR 0186): a reader that finds the config
 * verdict the reconciler recorded for exactly the spec it reads, or a signature verdict naming that
 * very manifest, parses and words the plugin without loading the config-schema checks, and says
 * what the checks would say; anything else loads them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { manifestDigest, openStore } from "../events/index.js";
import type { EventLog, NewEvent } from "../events/index.js";
import { loadSchemaChecks, parsePlugin, resetSchemaChecksForTests, schemaChecksLoaded } from "../plugins/index.js";
import type { JsonValue, SchemaChecks } from "../plugins/index.js";
import { standingBlockers } from "./blockers.js";
import { readySchemaCheck, recordedConfigVerdict, withSchemaChecks } from "./schema-facts.js";

const NAME = "echo";
const STREAM = `plugin/${NAME}`;
const DIGEST = `sha256:${"a".repeat(64)}`;
const IMAGE = `registry.example/echo@${DIGEST}`;
const SCHEMA = { type: "object", additionalProperties: false, properties: { startDate: { type: "string", pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" } } };
const spec = (config: JsonValue, schema: JsonValue = SCHEMA): JsonValue => ({ image: IMAGE, manifest: { capabilities: ["connector"], configSchema: schema }, config });

let dir: string;
let n = 0;
let checks: SchemaChecks;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-schema-facts-"));
  checks = await loadSchemaChecks();
});
afterEach(() => resetSchemaChecksForTests(checks));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A log holding `s` observed, then (unless told not to) the config verdict the checks give for it, caused by that observation. */
async function logWith(s: JsonValue, o: { verdict?: boolean; signature?: boolean } = {}): Promise<EventLog> {
  const store = await openStore({ file: join(dir, `log-${n++}.db`) });
  const [observed] = await store.append([{ stream: STREAM, type: "plugin.observed", actor: "test", data: { name: NAME, spec: s } }]);
  const parsed = parsePlugin({ name: NAME, spec: s });
  if (!parsed.ok || observed === undefined) throw new Error("the fixture must parse");
  const events: NewEvent[] = [];
  if (o.verdict !== false) {
    const errors = checks.validateConfig(parsed.value.spec.manifest.configSchema ?? {}, parsed.value.spec.config, "spec.config").map((e) => ({ code: e.code, path: e.path, message: e.message }));
    events.push({ stream: STREAM, type: "config.verdict", actor: "test", causedBy: observed.seq, data: { name: NAME, image: IMAGE, rules: 1, ok: errors.length === 0, errors } });
  }
  if (o.signature === true) {
    events.push({
      stream: "trust", type: "signature.verdict", actor: "test", causedBy: observed.seq,
      data: { digest: DIGEST, manifest: manifestDigest(parsed.value.spec.manifest), image: IMAGE, outcome: "unverified", signers: [], identities: [], trustRoot: "r".repeat(64), catalog: "c".repeat(64), rules: 1 },
    });
  }
  if (events.length > 0) await store.append(events);
  return store;
}

describe("a reader of a plugin whose schema the log vouches for", () => {
  it("finds the config verdict recorded for exactly this spec, and none for a changed config", async () => {
    const store = await logWith(spec({ startDate: "2026-11-02" }));
    expect((await recordedConfigVerdict(store, NAME, spec({ startDate: "2026-11-02" })))?.data.ok).toBe(true);
    expect(await recordedConfigVerdict(store, NAME, spec({ startDate: "2026-11-03" }))).toBeNull();
    expect(await recordedConfigVerdict(store, NAME, spec({ startDate: "2026-11-02" }, { ...SCHEMA, required: ["startDate"] }))).toBeNull();
    await store.close();
  });

  it.each([
    ["a config verdict", { verdict: true, signature: false }],
    ["a signature verdict naming the manifest", { verdict: false, signature: true }],
  ])("does not load the checks when %s vouches for the schema, and blocks as they would", async (_what, o) => {
    const s = spec({ startDate: "2026-11-02" });
    const store = await logWith(s, o);
    const expected = await standingBlockers(store, NAME, s);
    resetSchemaChecksForTests();
    await readySchemaCheck(store, NAME, s);
    expect(schemaChecksLoaded()).toBe(false);
    expect(() => parsePlugin({ name: NAME, spec: s })).not.toThrow();
    if (o.verdict) expect(await standingBlockers(store, NAME, s)).toEqual(expected);
    expect(schemaChecksLoaded()).toBe(false);
    await store.close();
  });

  it("words a refused config from the recorded verdict without the checks, as the checks word it", async () => {
    const s = spec({ startDate: "yesterday" });
    const store = await logWith(s);
    const expected = await standingBlockers(store, NAME, s);
    expect(expected.map((b) => b.code)).toEqual(["config_mismatch"]);
    resetSchemaChecksForTests();
    expect(await standingBlockers(store, NAME, s)).toEqual(expected);
    expect(schemaChecksLoaded()).toBe(false);
    await store.close();
  });

  it("loads the checks for a spec nothing vouches for, and answers as before", async () => {
    const s = spec({ startDate: "yesterday" });
    const store = await logWith(s, { verdict: false });
    const expected = await standingBlockers(store, NAME, s);
    resetSchemaChecksForTests();
    expect(await standingBlockers(store, NAME, s)).toEqual(expected);
    expect(schemaChecksLoaded()).toBe(true);
    await store.close();
  });

  it("runs a read again with the checks loaded when it meets a schema nothing vouched for", async () => {
    resetSchemaChecksForTests();
    let runs = 0;
    const ok = await withSchemaChecks(async () => {
      runs++;
      return parsePlugin({ name: NAME, spec: spec({}) }).ok;
    });
    expect([ok, runs, schemaChecksLoaded()]).toEqual([true, 2, true]);
  });
});
