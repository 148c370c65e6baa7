/** `openfief token` and `openfief egress`, run in-process through commander. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { decodeJwt } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { openDataStore } from "../../src/app/index.js";
import { CliError } from "../../src/cli/cli-error.js";
import { parseListen, register as registerEgress } from "../../src/cli/commands/egress.js";
import { register as registerToken } from "../../src/cli/commands/token.js";
import { EMBEDDED_ISSUER, readEmbeddedJwks } from "../../src/egress/embedded-key.js";
import { JwksTokenReviewer } from "../../src/egress/jwks-reviewer.js";

const dir = mkdtempSync(join(tmpdir(), "egress-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const IMAGE = `registry.example/alpha@sha256:${"a".repeat(64)}`;
const MANIFEST = { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] };

// A token is minted only for a plugin of the data folder's log.
beforeAll(async () => {
  const store = await openDataStore(dir);
  for (const name of ["alpha", "beta"]) await store.append([{ stream: `plugin/${name}`, type: "plugin.observed", actor: "owner:test", data: { name, spec: { image: IMAGE, manifest: MANIFEST } } }]);
  await store.close();
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

async function run(argv: string[]): Promise<string> {
  const program = new Command("openfief").exitOverride();
  registerToken(program);
  registerEgress(program);
  let out = "";
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    out += chunk.toString();
    return true;
  });
  try {
    await program.parseAsync(argv, { from: "user" });
  } finally {
    vi.restoreAllMocks();
  }
  return out;
}

describe("openfief token", () => {
  it("mints a token for the plugin that the JWKS reviewer accepts", async () => {
    const token = (await run(["token", "alpha", "--data", dir])).trim();
    const claims = decodeJwt(token);
    expect(claims.sub).toBe("system:serviceaccount:openfief:plugin-alpha");
    expect(claims.aud).toBe("openfief-egress");
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBeLessThanOrEqual(3600);
    const r = new JwksTokenReviewer({ jwks: readEmbeddedJwks(dir), issuer: EMBEDDED_ISSUER });
    expect(await r.review(token)).toEqual({ ok: true, username: "system:serviceaccount:openfief:plugin-alpha" });
  });

  it("prints JSON with --json", async () => {
    const out = JSON.parse(await run(["token", "beta", "--data", dir, "--ttl", "60", "--json"])) as { subject: string; audience: string; expiresAt: string };
    expect(out.subject).toBe("system:serviceaccount:openfief:plugin-beta");
    expect(out.audience).toBe("openfief-egress");
    expect(Date.parse(out.expiresAt)).toBeGreaterThan(Date.now());
  });

  it.each([
    [["token", "Bad_Name", "--data", dir], /invalid plugin name/],
    [["token", "alpha", "--data", dir, "--ttl", "3601"], /--ttl/],
    [["token", "alpha", "--data", dir, "--ttl", "0"], /--ttl/],
    [["token", "alpha", "--data", dir, "--ttl", "1e3"], /--ttl/],
    [["token", "nosuch", "--data", dir], /no plugin nosuch/],
    [["token", "alpha", "--data", join(dir, "mistyped")], /no event log in/],
  ])("refuses %j", async (argv, message) => {
    await expect(run(argv)).rejects.toThrow(message);
  });
});

describe("openfief egress", () => {
  it("refuses to start with HTTPS_PROXY set", async () => {
    vi.stubEnv("HTTPS_PROXY", "http://10.0.0.1:3128");
    await expect(run(["egress", "--kubeconfig", "/nonexistent"])).rejects.toThrow(/HTTPS_PROXY/);
  });

  it("exits instead of serving when the allow-lists are not synced at start", async () => {
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(kubeconfig, JSON.stringify({
      apiVersion: "v1", kind: "Config", "current-context": "d",
      clusters: [{ name: "d", cluster: { server: "http://127.0.0.1:1" } }],
      users: [{ name: "u", user: {} }],
      contexts: [{ name: "d", context: { cluster: "d", user: "u" } }],
    }));
    const err = await run(["egress", "--kubeconfig", kubeconfig, "--sync-timeout", "2000", "--listen", "127.0.0.1:0"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(1);
    expect((err as CliError).message).toMatch(/not synced/);
  });

  it.each([
    [["--store", "/var/lib/x.db", "--store-file", "/run/secrets/store"], /give --store or --store-file, not both/],
    [["--store", "mysql://root:hunter2@db/x"], /--store has the scheme "mysql:"/],
    [["--store", "postgres://app:hunter2@db:5432/"], /--store names no database \(postgres:\/\/app@db:5432\/\)/],
    [["--identity", "not a name"], /--identity must be a name/],
  ])("refuses %j before anything starts, never showing a password", async (args, message) => {
    const err = await run(["egress", "--kubeconfig", "/nonexistent", ...args]).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain("hunter2");
  });

  it.each([
    [":4750", { host: "0.0.0.0", port: 4750 }],
    ["4750", { host: "0.0.0.0", port: 4750 }],
    ["127.0.0.1:4750", { host: "127.0.0.1", port: 4750 }],
    ["[::1]:4750", { host: "::1", port: 4750 }],
  ])("reads --listen %s", (text, expected) => {
    expect(parseListen(text)).toEqual(expected);
  });

  it.each(["", "host:", "host:99999", "a:b:c"])("refuses --listen %j", (text) => {
    expect(() => parseListen(text)).toThrow(CliError);
  });
});
