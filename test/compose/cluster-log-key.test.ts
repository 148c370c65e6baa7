/**
 * The console serves a published log key only when it checks (docs/adr/0192): a signed-note
 * Ed25519 verifier key named as the checkpoints' origin. Anything else is not served.
 */
import { describe, expect, it } from "vitest";
import { newLogSignerKey } from "../../src/app/index.js";
import { publishedKeyProblem } from "../../src/compose/index.js";
import { parseSignerKey } from "../../src/tlog/index.js";

const signer = parseSignerKey(newLogSignerKey("cluster.test/log"));
if (!signer.ok) throw new Error(signer.error.message);
const verifierKey = signer.value.verifierKey;

describe("a published log key, checked before the console serves it", () => {
  it.each<[string, { origin: string; verifierKey: string }, RegExp | null]>([
    ["the key and its origin", { origin: "cluster.test/log", verifierKey }, null],
    ["a key named for another origin", { origin: "other.test/log", verifierKey }, /is for "cluster\.test\/log", not the origin "other\.test\/log"/],
    ["text that is no verifier key", { origin: "cluster.test/log", verifierKey: "not a key" }, /does not parse/],
    ["a private key pasted by mistake", { origin: "cluster.test/log", verifierKey: newLogSignerKey("cluster.test/log") }, /does not parse/],
  ])("%s", (_name, published, problem) => {
    const found = publishedKeyProblem(published);
    if (problem === null) expect(found).toBeNull();
    else expect(found).toMatch(problem);
  });
});
