/**
 * scripts/plugin-image.ts as a plugin author runs it (docs/plugin-authors.md): a WebAssembly
 * connector and a view packed into an OCI layout with their manifests in the label, signed with
 * the author's key, the view's UI attached, pushed to a real registry (Debian's docker-registry on
 * 127.0.0.1), and installed: verified, decided and running, read back from the registry.
 */
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256, tarOf } from "../../scripts/plugin-image.js";
import { json, ok, openfief, ROOT } from "../e2e/support.js";
import { startRegistry } from "../support/registry.js";
import type { TestRegistry } from "../support/registry.js";

const TSX = join(ROOT, "node_modules", ".bin", "tsx");
const TOOL = join(ROOT, "scripts", "plugin-image.ts");

let dir: string;
let registry: TestRegistry;

function pluginImage(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(TSX, [TOOL, ...args], { cwd: dir, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout.trim(), stderr: r.stderr.trim() };
}

function must(...args: string[]): string {
  const r = pluginImage(...args);
  if (r.code !== 0) throw new Error(`plugin-image ${args.join(" ")} exited ${String(r.code)}: ${r.stderr}`);
  return r.stdout;
}

function write(name: string, text: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

interface Row { name: string; status: string; verdict: string | null; pending: string[] }

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-plugin-image-"));
  registry = await startRegistry();
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  write("acme.key", privateKey.export({ type: "pkcs8", format: "pem" }).toString());
  write("acme.pub", publicKey.export({ type: "spki", format: "pem" }).toString());
  write("signers.json", JSON.stringify({ signers: [{ name: "acme", publicKey: publicKey.export({ type: "spki", format: "pem" }).toString() }] }));
}, 120_000);

afterAll(async () => {
  await registry?.stop();
  rmSync(dir, { recursive: true, force: true });
});

// Each step starts the tool through tsx, as an author does: seconds each on a busy machine.
describe("packing, signing and pushing a plugin", { timeout: 180_000 }, () => {
  let wasmImage: string;
  let viewImage: string;

  it("builds a WebAssembly connector whose label and Plugin carry the same manifest, and signs it", async () => {
    wasmImage = must(
      "build", "--name", "hello-fx", "--version", "1.0.0", "--manifest", join(ROOT, "plugins/ecb-fx/manifest.json"),
      "--wasm", join(ROOT, "plugins/ecb-fx/build/ecb-fx.wasm"), "--repository", `${registry.host}/acme/hello-fx`, "--layout", "oci", "--plugin-out", "hello-fx.yaml",
    );
    expect(wasmImage).toMatch(new RegExp(`^${registry.host}/acme/hello-fx@sha256:[0-9a-f]{64}$`));
    expect(readFileSync(join(dir, "hello-fx.yaml"), "utf8")).toContain(`image: ${wasmImage}`);
    expect(must("sign", "--layout", "oci", "--image", wasmImage, "--key", "acme.key")).toContain("signed");
    const verified = await openfief(["verify", "--plugin", join(dir, "hello-fx.yaml"), "--oci-layout", join(dir, "oci"), "--key", join(dir, "acme.pub")]);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/^trusted: .*signed by .*, a signer you trust/);
  });

  it("refuses an image nobody signed", async () => {
    const unsigned = must("build", "--name", "other", "--version", "1.0.0", "--manifest", join(ROOT, "plugins/ecb-fx/manifest.json"), "--wasm", join(ROOT, "plugins/ecb-fx/build/ecb-fx.wasm"), "--repository", "localhost/acme/other", "--layout", "unsigned");
    const refused = await openfief(["verify", unsigned, "--oci-layout", join(dir, "unsigned"), "--key", join(dir, "acme.pub")]);
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toContain("unsigned");
  });

  it("names a view's UI bundle by digest in its label, and attaches only that bundle", () => {
    mkdirSync(join(dir, "image"), { recursive: true });
    write("image/README", "the view's pod\n");
    const bundle = tarOf([["index.html", Buffer.from("<!doctype html><title>v</title>")]]);
    write("ui.tar", bundle);
    write("other.tar", tarOf([["index.html", Buffer.from("something else")]]));
    write("view.json", JSON.stringify({ capabilities: ["view"], egress: [], secrets: [], dataTiers: [], rbac: [{ apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["list"] }], ui: { entry: "index.html" } }));
    viewImage = must("build", "--name", "plugin-count", "--version", "1.0.0", "--manifest", "view.json", "--files", "image", "--ui", "ui.tar", "--repository", `${registry.host}/acme/plugin-count`, "--layout", "oci", "--plugin-out", "plugin-count.yaml");
    expect(readFileSync(join(dir, "plugin-count.yaml"), "utf8")).toContain(`bundle: ${sha256(bundle)}`);
    must("sign", "--layout", "oci", "--image", viewImage, "--key", "acme.key");
    const wrong = pluginImage("attach", "--layout", "oci", "--image", viewImage, "--ui", "other.tar");
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`names ${sha256(bundle)}`);
    expect(must("attach", "--layout", "oci", "--image", viewImage, "--ui", "ui.tar")).toContain("attached");
  });

  it("pushes each image with everything attached to it, so the control plane verifies and runs it from the registry", async () => {
    expect(must("push", "--layout", "oci", "--image", wasmImage, "--insecure")).toContain("1 attached");
    expect(must("push", "--layout", "oci", "--image", viewImage, "--insecure")).toContain("2 attached");
    const data = ["--data", join(dir, "data")];
    write("grants.yaml", [
      "apiVersion: openfief.io/v1alpha1", "kind: PluginGrant", "metadata: {name: hello-fx, namespace: openfief}", "spec: {capabilities: [connector], egress: [{host: www.ecb.europa.eu}], dataTiers: [fx-rates]}", "---",
      "apiVersion: openfief.io/v1alpha1", "kind: PluginGrant", "metadata: {name: plugin-count, namespace: openfief}", "spec: {capabilities: [view], rbac: [{apiGroups: [openfief.io], resources: [plugins], verbs: [list]}]}", "",
    ].join("\n"));
    await ok(["apply", "-f", join(dir, "hello-fx.yaml"), "-f", join(dir, "plugin-count.yaml"), "-f", join(dir, "grants.yaml"), ...data]);
    await ok(["reconcile", ...data, "--trusted-signers", join(dir, "signers.json"), "--insecure-registry", registry.host]);
    const rows = await json<Row[]>(["get", "plugins", ...data]);
    expect(rows.map((r) => [r.name, r.status, r.verdict, r.pending])).toEqual([
      ["hello-fx", "running", "unverified", []],
      ["plugin-count", "running", "unverified", []],
    ]);
  });
});
