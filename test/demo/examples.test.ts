/**
 * The committed demo in examples/ is consistent: every Plugin and PluginGrant parses, every Plugin's
 * image is in examples/oci with its manifest as the signed label, every image verifies offline
 * against the owner signers in examples/trusted-signers.json, the v2 upgrade asks for exactly one
 * more host and is held back, the images are exactly what scripts/make-demo.ts builds, and the
 * WebAssembly plugins' (ecb-fx, ibkr-flex) one layer is the committed module. ibkr-flex's Plugin and
 * grant are in examples/ibkr-flex/, apart from the quick start's plugins/, its role mapped to its own Secret.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { Ajv } from "ajv";
import { afterAll, describe, expect, it } from "vitest";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { emptyCatalog, parseCatalog, parseOwnerSigners } from "../../src/plugins/catalog.js";
import { validateConfig } from "../../src/plugins/config-schema.js";
import { MANIFEST_LABEL } from "../../src/plugins/constants.js";
import { effective, needsApproval } from "../../src/plugins/effective.js";
import { uncoveredRules } from "../../src/plugins/rbac-scope.js";
import { formatHostPort } from "../../src/plugins/egress-host.js";
import { parseImageRef } from "../../src/plugins/image-ref.js";
import type { ImageRef } from "../../src/plugins/image-ref.js";
import { manifestEqual } from "../../src/plugins/manifest-equal.js";
import { parseManifestLabel } from "../../src/plugins/manifest-label.js";
import { planRollout } from "../../src/plugins/rollout.js";
import { isKeyIdentity } from "../../src/plugins/signers.js";
import type { Signer } from "../../src/plugins/signers.js";
import { newTrustPolicy } from "../../src/plugins/trust.js";
import type { Grant, Plugin } from "../../src/plugins/types.js";
import { parseGrant, parsePlugin } from "../../src/plugins/validate.js";
import { checkImage, readLabel } from "../../src/trust/image-check.js";
import { MEDIA_TYPE, parseImageManifest } from "../../src/trust/oci.js";
import { OciLayoutSource } from "../../src/trust/oci-layout.js";
import { loadShippedTrustedRoot } from "../../src/trust/trusted-root.js";
import {
  DEMO_IMAGES, DEMO_WASM_IMAGES, LEDGER_VIEW_RULES, LEDGER_VIEW_UI_DIR, UI_ARTIFACT_TYPE, UI_LAYER_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
  buildDemoImage, buildDemoWasmImage, makeDemo, uiBundleTar,
} from "../../scripts/make-demo.js";
import { readTar } from "../../src/views/tar.js";
import { SDK_VERSION } from "../../sdk/browser/sdk.js";
import { toJsonSchema } from "../support/crd-schema.js";

const ROOT = join(import.meta.dirname, "../..");
const EXAMPLES = join(ROOT, "examples");
const LAYOUT = join(EXAMPLES, "oci");
const trustedRoot = loadShippedTrustedRoot().root;

type Resource = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec: Record<string, unknown> };

function resource(path: string): Resource {
  const docs = parseAllDocuments(readFileSync(join(EXAMPLES, path), "utf8"));
  expect(docs).toHaveLength(1);
  return docs[0]?.toJS() as Resource;
}

function must<T>(r: { ok: true; value: T } | { ok: false; errors: readonly unknown[] }): T {
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}

const asPlugin = (r: Resource): Plugin => must(parsePlugin({ name: r.metadata.name, spec: r.spec }));
const asGrant = (r: Resource): Grant => must(parseGrant({ name: r.metadata.name, spec: r.spec }));
const imageOf = (p: Plugin): ImageRef => must(parseImageRef(p.spec.image));

const PLUGIN_FILES = ["plugins/nbp-fx.yaml", "plugins/ledger-view.yaml", "plugins/ecb-fx.yaml", "ibkr-flex/ibkr-flex.yaml", "upgrade/nbp-fx-v2.yaml"];
const GRANT_FILES = ["plugins/nbp-fx-grant.yaml", "plugins/ledger-view-grant.yaml", "plugins/ecb-fx-grant.yaml", "ibkr-flex/ibkr-flex-grant.yaml"];
const TAGS: Record<string, string> = {
  "plugins/nbp-fx.yaml": "nbp-fx-v1",
  "plugins/ledger-view.yaml": "ledger-view-v1",
  "plugins/ecb-fx.yaml": "ecb-fx-v1",
  "ibkr-flex/ibkr-flex.yaml": "ibkr-flex-v1",
  "upgrade/nbp-fx-v2.yaml": "nbp-fx-v2",
};
/** Every image in the layout, with its bundle: one index entry each; and the UI artifacts of the views. */
const ALL_IMAGES = [...DEMO_IMAGES, ...DEMO_WASM_IMAGES];
/** Each image and its demo-owner bundle; a release's second bundle (the release key); the views' UI artifacts. */
const INDEX_ENTRIES = 2 * ALL_IMAGES.length + ALL_IMAGES.filter((d) => d.released === true).length + DEMO_IMAGES.filter((d) => d.ui !== undefined).length;
const RELEASED = ["plugins/nbp-fx.yaml", "plugins/ledger-view.yaml", "plugins/ecb-fx.yaml", "ibkr-flex/ibkr-flex.yaml"];
/** Each WebAssembly plugin: its Plugin and grant, its module, the origins its grant approves. */
const WASM_PLUGINS = [
  { name: "ecb-fx", dir: "plugins", egress: ["www.ecb.europa.eu:443"], secrets: [] as unknown[] },
  { name: "ibkr-flex", dir: "ibkr-flex", egress: ["ndcdyn.interactivebrokers.com:443", "gdcdyn.interactivebrokers.com:443"], secrets: [{ name: "ibkr-flex-flex", role: "flex", mountPath: "/etc/openfief/ibkr-flex" }] },
];

function ownerSigners(dir = EXAMPLES): Signer[] {
  return must(parseOwnerSigners(readFileSync(join(dir, "trusted-signers.json"), "utf8")));
}

function shippedCatalog() {
  return must(parseCatalog(readFileSync(join(ROOT, "catalog/plugins.json"), "utf8")));
}


function crdValidator(file: string) {
  const crd = parseYaml(readFileSync(join(ROOT, "deploy/crds", file), "utf8")) as { spec: { versions: Array<{ schema: { openAPIV3Schema: unknown } }> } };
  return new Ajv({ allErrors: true, strict: false }).compile(toJsonSchema(crd.spec.versions[0]?.schema.openAPIV3Schema) as object);
}

describe("the demo's resources", () => {
  it.each(PLUGIN_FILES)("%s is a Plugin in openfief that parsePlugin accepts and the CRD admits", (file) => {
    const r = resource(file);
    expect(r).toMatchObject({ apiVersion: "openfief.io/v1alpha1", kind: "Plugin", metadata: { namespace: "openfief" } });
    const p = asPlugin(r);
    expect(p.spec.image).toMatch(/^localhost\/openfief-demo\/[a-z-]+@sha256:[0-9a-f]{64}$/);
    const validate = crdValidator("plugins.openfief.io.yaml");
    expect(validate(r), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each(GRANT_FILES)("%s is a PluginGrant in openfief that parseGrant accepts and the CRD admits", (file) => {
    const r = resource(file);
    expect(r).toMatchObject({ apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { namespace: "openfief" } });
    asGrant(r);
    const validate = crdValidator("plugingrants.openfief.io.yaml");
    expect(validate(r), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each(PLUGIN_FILES)("%s has a config its manifest's schema accepts", (file) => {
    const p = asPlugin(resource(file));
    const schema = p.spec.manifest.configSchema;
    if (schema === undefined) expect(p.spec.config).toBeUndefined();
    else expect(validateConfig(schema, p.spec.config, "spec.config")).toEqual([]);
  });

  it("gives each installed plugin a grant that approves everything it asks for", () => {
    for (const [dir, name] of [["plugins", "nbp-fx"], ["plugins", "ledger-view"], ["plugins", "ecb-fx"], ["ibkr-flex", "ibkr-flex"]]) {
      const p = asPlugin(resource(`${dir}/${name}.yaml`));
      const g = asGrant(resource(`${dir}/${name}-grant.yaml`));
      expect(g.name).toBe(p.name);
      expect(needsApproval(p.spec.manifest, g.spec)).toEqual({ capabilities: [], egress: [], secrets: [], dataTiers: [] });
      const e = must(effective(p.spec.manifest, g.spec));
      expect(e.capabilities.length).toBeGreaterThan(0);
    }
  });

  it("names the owner's demo key, the same one as demo-owner.pub, as the only trusted signer", () => {
    const signers = ownerSigners();
    expect(signers).toHaveLength(1);
    const [s] = signers;
    expect(s?.name).toBe("demo-owner");
    expect(s?.kind).toBe("owner");
    const pem = readFileSync(join(EXAMPLES, "demo-owner.pub"), "utf8");
    expect(pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/);
    expect(s !== undefined && isKeyIdentity(s.identity) ? s.identity.publicKey : undefined).toBe(pem);
  });

  it("never contains a private key", () => {
    const files = [...PLUGIN_FILES, ...GRANT_FILES, "trusted-signers.json", "demo-owner.pub", "README.md", "oci/index.json"];
    for (const f of files) expect(readFileSync(join(EXAMPLES, f), "utf8")).not.toMatch(/PRIVATE KEY/);
  });
});

describe("the demo's images", () => {
  const source = new OciLayoutSource(LAYOUT);

  it("are listed in the layout's index.json under their tags, each with the demo owner's Sigstore bundle and a release's with the release key's", async () => {
    const index = await source.index();
    const tagged = index.filter((d) => d.annotations?.["org.opencontainers.image.ref.name"] !== undefined);
    expect(tagged.map((d) => d.annotations?.["org.opencontainers.image.ref.name"]).sort()).toEqual(["ecb-fx-v1", "ibkr-flex-v1", "ledger-view-v1", "nbp-fx-v1", "nbp-fx-v2"]);
    for (const d of tagged) {
      const referrers = await source.referrers("any", d.digest);
      const tag = d.annotations?.["org.opencontainers.image.ref.name"];
      expect(referrers.filter((r) => r.artifactType === MEDIA_TYPE.sigstoreBundle)).toHaveLength(tag === "nbp-fx-v2" ? 1 : 2);
      // The only other referrer is a view's UI bundle.
      const ui = d.annotations?.["org.opencontainers.image.ref.name"] === "ledger-view-v1" ? [UI_ARTIFACT_TYPE] : [];
      expect(referrers.filter((r) => r.artifactType !== MEDIA_TYPE.sigstoreBundle).map((r) => r.artifactType)).toEqual(ui);
    }
    expect(index).toHaveLength(INDEX_ENTRIES);
  });

  it.each(PLUGIN_FILES)("%s names an image in the layout, under its tag, whose signed label equals spec.manifest", async (file) => {
    const p = asPlugin(resource(file));
    const image = imageOf(p);
    const listed = (await source.index()).find((d) => d.digest === image.digest);
    expect(listed?.annotations?.["org.opencontainers.image.ref.name"]).toBe(TAGS[file]);
    const fetched = await source.manifest(image.repository, image.digest);
    const m = parseImageManifest(fetched.bytes, fetched.mediaType);
    const label = readLabel(await source.blob(image.repository, m.config.digest, 1 << 20));
    expect(label).toBeDefined();
    // Compact JSON, as a Dockerfile LABEL carries it.
    expect(label).toBe(JSON.stringify(JSON.parse(label as string)));
    expect(manifestEqual(must(parseManifestLabel(label as string)), p.spec.manifest)).toBe(true);
  });

  it.each(RELEASED)("%s verifies offline as verified: the catalog pins its digest, and the release key signed it", async (file) => {
    const p = asPlugin(resource(file));
    const policy = newTrustPolicy(shippedCatalog(), ownerSigners());
    const verdict = await checkImage({ image: imageOf(p), source, trustedRoot, policy, declared: p.spec.manifest });
    expect(verdict).toMatchObject({ outcome: "verified", catalogEntry: p.name, rejectedBundles: [] });
    expect(verdict.signers).toEqual([{ name: "demo-owner", kind: "owner" }, { name: "openfief-release", kind: "publisher" }]);
    expect(verdict.manifest !== undefined && manifestEqual(verdict.manifest, p.spec.manifest)).toBe(true);
    // Without the owner's signers the release key alone still makes it verified; without the catalog, the demo owner makes it trusted.
    expect((await checkImage({ image: imageOf(p), source, trustedRoot, policy: newTrustPolicy(shippedCatalog(), []), declared: p.spec.manifest })).outcome).toBe("verified");
    expect((await checkImage({ image: imageOf(p), source, trustedRoot, policy: newTrustPolicy(emptyCatalog(), ownerSigners()), declared: p.spec.manifest })).outcome).toBe("unverified");
  });

  it("upgrade/nbp-fx-v2.yaml verifies offline as unverified: signed by the demo owner, at a digest the catalog does not pin", async () => {
    const p = asPlugin(resource("upgrade/nbp-fx-v2.yaml"));
    const verdict = await checkImage({ image: imageOf(p), source, trustedRoot, policy: newTrustPolicy(shippedCatalog(), ownerSigners()), declared: p.spec.manifest });
    expect(verdict).toMatchObject({ outcome: "unverified", signers: [{ name: "demo-owner", kind: "owner" }], rejectedBundles: [] });
    expect(shippedCatalog().standing({ name: "nbp-fx", repository: imageOf(p).name, digest: imageOf(p).digest }, verdict.identities)).toMatchObject({ kind: "other_digest", entry: { name: "nbp-fx" } });
  });

  it("catalog/plugins.json pins each release's digest with the committed release key as its publisher", () => {
    const pub = readFileSync(join(ROOT, "catalog/openfief-release.pub"), "utf8");
    expect(pub).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    const entries = shippedCatalog().entries;
    expect(entries.map((e) => [e.name, e.image.toString()])).toEqual(RELEASED.map((f) => [asPlugin(resource(f)).name, asPlugin(resource(f)).spec.image]));
    for (const e of entries) expect(e.publisher).toEqual({ name: "openfief-release", kind: "publisher", identity: { publicKey: pub } });
    expect(readFileSync(join(ROOT, "catalog/plugins.json"), "utf8")).not.toMatch(/PRIVATE KEY/);
  });

  it("are refused when the owner trusts neither the demo key nor the catalog", async () => {
    const p = asPlugin(resource("plugins/nbp-fx.yaml"));
    const verdict = await checkImage({ image: imageOf(p), source, trustedRoot, policy: newTrustPolicy(emptyCatalog(), []), declared: p.spec.manifest });
    expect(verdict.outcome).toBe("refused");
  });

  it("are refused for a Plugin whose manifest differs from the signed label", async () => {
    const v1 = asPlugin(resource("plugins/nbp-fx.yaml"));
    const v2 = asPlugin(resource("upgrade/nbp-fx-v2.yaml"));
    const policy = newTrustPolicy(shippedCatalog(), ownerSigners());
    const verdict = await checkImage({ image: imageOf(v1), source, trustedRoot, policy, declared: v2.spec.manifest });
    expect(verdict).toMatchObject({ outcome: "refused", reason: "manifest_mismatch" });
  });

  it.each(DEMO_IMAGES.map((d) => [d.tag, d] as const))("%s is exactly what scripts/make-demo.ts builds, with one README layer at a fixed mtime", async (tag, demo) => {
    const built = buildDemoImage(demo);
    const listed = (await source.index()).find((d) => d.annotations?.["org.opencontainers.image.ref.name"] === tag);
    expect(listed?.digest).toBe(built.digest);
    const m = parseImageManifest((await source.manifest("any", built.digest)).bytes, MEDIA_TYPE.ociManifest);
    expect(m.layers).toHaveLength(1);
    const tar = gunzipSync(await source.blob("any", m.layers[0]?.digest as string, 1 << 20));
    expect(tar.subarray(0, 6).toString("latin1")).toBe("README");
    expect(parseInt(tar.subarray(136, 147).toString("latin1"), 8)).toBe(1_767_225_600);
    const config = JSON.parse(Buffer.from(await source.blob("any", m.config.digest, 1 << 20)).toString("utf8")) as { config: { Labels: Record<string, string>; User: string } };
    expect(config.config.User).toBe("65532:65532");
    expect(config.config.Labels[MANIFEST_LABEL]).toBe(built.label);
  });
});

describe("the demo's WebAssembly plugin", () => {
  const source = new OciLayoutSource(LAYOUT);

  it.each(DEMO_WASM_IMAGES.map((d) => [d.tag, d] as const))("%s is exactly what scripts/make-demo.ts builds: an image config with the label and one WebAssembly layer", async (tag, demo) => {
    const built = buildDemoWasmImage(demo);
    const listed = (await source.index()).find((d) => d.annotations?.["org.opencontainers.image.ref.name"] === tag);
    expect(listed?.digest).toBe(built.digest);
    const m = parseImageManifest((await source.manifest("any", built.digest)).bytes, MEDIA_TYPE.ociManifest);
    expect(m.config.mediaType).toBe(MEDIA_TYPE.ociConfig);
    const config = JSON.parse(Buffer.from(await source.blob("any", m.config.digest, 1 << 20)).toString("utf8")) as { config: { Labels: Record<string, string> } };
    expect(config.config.Labels[MANIFEST_LABEL]).toBe(built.label);
    expect(m.layers.map((l) => l.mediaType)).toEqual([WASM_LAYER_MEDIA_TYPE]);
  });

  it.each(WASM_PLUGINS)("$name carries the committed module, its layer digest the module's lowercase hex SHA-256", async ({ name, dir }) => {
    const module = readFileSync(join(ROOT, `plugins/${name}/build/${name}.wasm`));
    const moduleHex = createHash("sha256").update(module).digest("hex");
    const p = asPlugin(resource(`${dir}/${name}.yaml`));
    const m = parseImageManifest((await source.manifest("any", imageOf(p).digest)).bytes, MEDIA_TYPE.ociManifest);
    expect(m.layers[0]?.digest).toBe(`sha256:${moduleHex}`);
    expect(m.layers[0]?.size).toBe(module.length);
    expect(Buffer.from(await source.blob("any", `sha256:${moduleHex}`, 16 << 20)).equals(module)).toBe(true);
    expect(readFileSync(join(ROOT, `plugins/${name}/build/${name}.wasm.sha256`), "utf8")).toBe(`${moduleHex}  ${name}.wasm\n`);
  });

  it.each(WASM_PLUGINS)("$name asks for exactly its manifest.json, and its grant approves its origins and Secrets and nothing more", ({ name, dir, egress, secrets }) => {
    const p = asPlugin(resource(`${dir}/${name}.yaml`));
    const manifest = JSON.parse(readFileSync(join(ROOT, `plugins/${name}/manifest.json`), "utf8")) as unknown;
    expect(manifestEqual(must(parseManifestLabel(JSON.stringify(manifest))), p.spec.manifest)).toBe(true);
    const e = must(effective(p.spec.manifest, asGrant(resource(`${dir}/${name}-grant.yaml`)).spec));
    expect(e.egress.map(formatHostPort).sort()).toEqual([...egress].sort());
    expect(e.capabilities).toEqual(["connector"]);
    expect(e.secrets).toEqual(secrets);
  });

  it("keeps ibkr-flex out of the quick start's plugins/, with a README on giving it its Secret", () => {
    expect(PLUGIN_FILES.filter((f) => f.startsWith("plugins/")).some((f) => f.includes("ibkr"))).toBe(false);
    const readme = readFileSync(join(EXAMPLES, "ibkr-flex/README.md"), "utf8");
    expect(readme).toContain("cluster/secrets/ibkr-flex-flex.yaml");
    expect(readme).toContain("openfief apply -f examples/ibkr-flex/");
  });
});

describe("the demo's view, ledger-view", () => {
  const source = new OciLayoutSource(LAYOUT);
  const p = asPlugin(resource("plugins/ledger-view.yaml"));
  const grant = asGrant(resource("plugins/ledger-view-grant.yaml"));
  const ui = p.spec.manifest.ui;

  it("names its UI bundle by the digest of the tar of plugins/ledger-view/ui, framing index.html", () => {
    expect(ui).toEqual({ bundle: createHash("sha256").update(uiBundleTar(LEDGER_VIEW_UI_DIR)).digest("hex").replace(/^/, "sha256:"), entry: "index.html" });
  });

  it("has the bundle in the layout, attached to its image as a UI artifact whose one layer is the bundle", async () => {
    const image = imageOf(p);
    const referrers = await source.referrers("any", image.digest);
    const artifact = referrers.find((r) => r.artifactType === UI_ARTIFACT_TYPE);
    expect(artifact).toBeDefined();
    const m = parseImageManifest((await source.manifest("any", artifact?.digest as string)).bytes, MEDIA_TYPE.ociManifest);
    expect(m.subject?.digest).toBe(image.digest);
    expect(m.layers.map((l) => [l.mediaType, l.digest])).toEqual([[UI_LAYER_MEDIA_TYPE, ui?.bundle]]);
  });

  it("ships an HTML page, a script and a stylesheet in separate files, read by the plugin proxy's tar reader", async () => {
    const tar = readTar(await source.blob("any", ui?.bundle as string, 1 << 20));
    expect(tar.ok).toBe(true);
    const files = tar.ok ? tar.files : new Map<string, Uint8Array>();
    expect([...files.keys()].sort()).toEqual(["app.js", "index.html", "style.css"]);
    for (const [name, bytes] of files) expect(Buffer.from(bytes).equals(readFileSync(join(ROOT, LEDGER_VIEW_UI_DIR, name)))).toBe(true);
  });

  it("has no inline script, style or event handler in its page (the CSP would block them)", () => {
    const html = readFileSync(join(ROOT, LEDGER_VIEW_UI_DIR, "index.html"), "utf8");
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attrs, body] of scripts) {
      expect(attrs).toMatch(/\bsrc="[^"]+"/);
      expect(body?.trim()).toBe("");
    }
    expect(html).not.toMatch(/<style\b/i);
    expect(html).not.toMatch(/\sstyle=/i);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).not.toMatch(/javascript:/i);
  });

  it("loads the SDK the plugin proxy serves, from its own origin", () => {
    const app = readFileSync(join(ROOT, LEDGER_VIEW_UI_DIR, "app.js"), "utf8");
    expect(app).toContain(`from "/plugins/sdk/${SDK_VERSION}/sdk.js"`);
    expect(app).not.toMatch(/https?:\/\//);
    expect(app).not.toMatch(/localStorage|sessionStorage|indexedDB|document\.cookie|innerHTML/);
  });

  it("asks to read plugins and plugin grants, and its grant approves exactly those rules", () => {
    expect(p.spec.manifest.capabilities).toEqual(["view"]);
    expect(p.spec.manifest.rbac).toHaveLength(LEDGER_VIEW_RULES.length);
    expect(uncoveredRules(p.spec.manifest.rbac ?? [], grant.spec.rbac ?? [])).toEqual([]);
    const e = must(effective(p.spec.manifest, grant.spec));
    expect(e.capabilities).toContain("view");
    const shape = (rules: readonly { apiGroups: readonly string[]; resources: readonly string[]; verbs: readonly string[] }[]) =>
      rules.map((r) => JSON.stringify([r.apiGroups, r.resources, [...r.verbs].sort()])).sort();
    expect(shape(e.rbac)).toEqual(shape(LEDGER_VIEW_RULES));
  });
});

describe("the upgrade to nbp-fx v2", () => {
  const v1 = asPlugin(resource("plugins/nbp-fx.yaml"));
  const v2 = asPlugin(resource("upgrade/nbp-fx-v2.yaml"));
  const grant = asGrant(resource("plugins/nbp-fx-grant.yaml"));

  it("is the same instance on a new image that asks for exactly one more host and nothing else", () => {
    expect(v2.name).toBe(v1.name);
    expect(imageOf(v2).repository).toBe(imageOf(v1).repository);
    expect(imageOf(v2).digest).not.toBe(imageOf(v1).digest);
    const hosts = (p: Plugin) => p.spec.manifest.egress.map(formatHostPort);
    const added = hosts(v2).filter((h) => !hosts(v1).includes(h));
    expect(added).toEqual(["static.nbp.pl:443"]);
    expect(hosts(v1).every((h) => hosts(v2).includes(h))).toBe(true);
    expect(hosts(v2)).toHaveLength(hosts(v1).length + 1);
    expect(manifestEqual({ ...v2.spec.manifest, egress: v1.spec.manifest.egress }, v1.spec.manifest)).toBe(true);
    expect(v2.spec.config).toEqual(v1.spec.config);
  });

  it("is held back: v1 keeps running under the grant and only the new host is pending", () => {
    const version = (p: Plugin) => ({ image: imageOf(p), manifest: p.spec.manifest, ...(p.spec.config === undefined ? {} : { config: p.spec.config }) });
    const plan = planRollout({ current: version(v2), currentDeployable: true, previous: version(v1), grant: grant.spec });
    expect(plan.outcome).toBe("previous");
    expect(plan.run?.version.image.digest).toBe(imageOf(v1).digest);
    expect(plan.run?.permissions.egress.map(formatHostPort)).toEqual(["api.nbp.pl:443"]);
    expect(plan.pending).toEqual({ capabilities: [], egress: [{ host: "static.nbp.pl", port: 443 }], secrets: [], dataTiers: [] });
  });
});

describe("scripts/make-demo.ts", () => {
  const out = mkdtempSync(join(tmpdir(), "openfief-demo-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("writes the same images and resources on every run, with a new key that verifies them", async () => {
    const releaseKeyFile = join(out, "home", "release-key.pem");
    const first = await makeDemo(out, { releaseKeyFile });
    expect(first.releaseKey).toEqual({ file: releaseKeyFile, generated: true });
    expect(statSync(releaseKeyFile).mode & 0o777).toBe(0o600);
    const firstKey = readFileSync(join(out, "demo-owner.pub"), "utf8");
    const firstRelease = readFileSync(join(out, "catalog", "openfief-release.pub"), "utf8");
    const second = await makeDemo(out, { releaseKeyFile });
    expect(second.releaseKey.generated).toBe(false);
    expect(second.images).toEqual(first.images);
    // The release key is kept and reused; the catalog it writes matches it, and is the shipped one but for the key.
    expect(readFileSync(join(out, "catalog", "openfief-release.pub"), "utf8")).toBe(firstRelease);
    const shippedPub = readFileSync(join(ROOT, "catalog/openfief-release.pub"), "utf8");
    expect(readFileSync(join(out, "catalog", "plugins.json"), "utf8")).toBe(readFileSync(join(ROOT, "catalog/plugins.json"), "utf8").split(JSON.stringify(shippedPub)).join(JSON.stringify(firstRelease)));
    expect(readFileSync(join(out, "demo-owner.pub"), "utf8")).not.toBe(firstKey);
    for (const file of [...PLUGIN_FILES, ...GRANT_FILES]) {
      expect(readFileSync(join(out, file), "utf8")).toBe(readFileSync(join(EXAMPLES, file), "utf8"));
    }
    // A rerun replaces the old signatures instead of piling them up.
    const source = new OciLayoutSource(join(out, "oci"));
    expect(await source.index()).toHaveLength(INDEX_ENTRIES);
    const p = asPlugin(resource("plugins/nbp-fx.yaml"));
    const ownCatalog = must(parseCatalog(readFileSync(join(out, "catalog", "plugins.json"), "utf8")));
    expect((await checkImage({ image: imageOf(p), source, trustedRoot, policy: newTrustPolicy(emptyCatalog(), ownerSigners(out)), declared: p.spec.manifest })).outcome).toBe("unverified");
    expect((await checkImage({ image: imageOf(p), source, trustedRoot, policy: newTrustPolicy(ownCatalog, []), declared: p.spec.manifest })).outcome).toBe("verified");
  });
});
