import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readGrantedSecrets, secretData } from "./instance-secrets.js";

let dir: string;
const lines: string[] = [];
const logger = pino({ level: "warn" }, { write: (l: string) => void lines.push(l) });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-secrets-"));
  await mkdir(join(dir, "secrets"));
  await writeFile(join(dir, "secrets", "ibkr-main-flex.yaml"), "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ibkr-main-flex\n  namespace: openfief\ndata:\n  token: " + Buffer.from("123456").toString("base64") + "\nstringData:\n  query-id: \"777\"\n");
  await writeFile(join(dir, "secrets", "broken.yaml"), "kind: Secret\nstringData:\n  token: [SECRET-VALUE-IN-BAD-YAML\n");
  await writeFile(join(dir, "secrets", "huge.yaml"), "x".repeat(2 * 1024 * 1024));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("an instance's Secrets in the embedded mode", () => {
  it("reads data (base64) and stringData of each granted Secret, keyed by the manifest's role", async () => {
    const got = await readGrantedSecrets(join(dir, "secrets"), [{ name: "ibkr-main-flex", role: "flex" }, { name: "absent" }], logger, "ibkr-main");
    expect([...got.entries()].map(([role, keys]) => [role, Object.fromEntries(keys)])).toEqual([["flex", { token: "123456", "query-id": "777" }]]);
  });

  it("leaves out a Secret it cannot read, and logs why without its content", async () => {
    lines.length = 0;
    const got = await readGrantedSecrets(join(dir, "secrets"), [{ name: "broken", role: "flex" }, { name: "huge" }], logger, "ibkr-main");
    expect(got.size).toBe(0);
    expect(lines).toHaveLength(2);
    expect(lines.join("")).not.toContain("SECRET-VALUE");
    expect(lines.join("")).toMatch(/not valid YAML/);
    expect(lines.join("")).toMatch(/larger than/);
  });

  it("refuses what is not a Kubernetes Secret of that name", () => {
    expect(() => secretData("kind: ConfigMap\n", "x")).toThrow("not a Kubernetes Secret");
    expect(() => secretData("kind: Secret\nmetadata:\n  name: other\n", "x")).toThrow("another Secret's");
    expect(() => secretData("kind: Secret\ndata:\n  k: '!!'\n", "x")).toThrow("data.k is not base64");
  });
});
