import { describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import { SA_JWKS_CONFIGMAP, SA_JWKS_DIR, SA_JWKS_ITEMS, coreSubjectProblems } from "./jwks.js";

describe("the openfief-sa-jwks names", () => {
  it("mount the ConfigMap where the SDK looks by default, with both files it reads", () => {
    expect(SA_JWKS_CONFIGMAP).toBe("openfief-sa-jwks");
    expect(SA_JWKS_DIR).toBe("/var/run/secrets/openfief-sa-jwks");
    expect(SA_JWKS_ITEMS).toEqual(["issuer", "jwks.json"]);
  });
});

describe("coreSubjectProblems", () => {
  it.each([
    "system:serviceaccount:openfief:openfief-core",
    "system:serviceaccount:kube-system:core",
    "system:serviceaccount:openfief:core.v2",
    "system:serviceaccount:openfief:plugin",
    "system:serviceaccount:other:plugin-nbp-fx",
  ])("accepts the ServiceAccount username %s", (subject) => {
    expect(coreSubjectProblems(subject, "coreSubject")).toEqual([]);
  });

  it.each([
    ["nothing", undefined],
    ["a number", 7],
    ["the empty string", ""],
    ["a user name", "alice"],
    ["a group", "system:serviceaccounts:openfief"],
    ["a missing name", "system:serviceaccount:openfief:"],
    ["a missing namespace", "system:serviceaccount::core"],
    ["an extra part", "system:serviceaccount:openfief:core:x"],
    ["upper case", "system:serviceaccount:openfief:Core"],
    ["a namespace with a dot", "system:serviceaccount:a.b:core"],
    ["a namespace too long", `system:serviceaccount:${"a".repeat(64)}:core`],
    ["a trailing newline", "system:serviceaccount:openfief:core\n"],
    ["a plugin's own ServiceAccount", "system:serviceaccount:openfief:plugin-nbp-fx"],
  ])("refuses %s, naming the field", (_what, subject) => {
    const errors = coreSubjectProblems(subject, "topology.coreSubject");
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e).toMatchObject({ code: ErrorCode.InvalidTopology, path: "topology.coreSubject" });
  });

  it("never repeats the value in its message", () => {
    const errors = coreSubjectProblems("system:serviceaccount:Secret-Value:x", "p");
    expect(errors.map((e) => e.message).join(" ")).not.toContain("Secret-Value");
  });
});
