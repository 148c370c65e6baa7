/**
 * Registries that misbehave, served by a tiny node:http fake on 127.0.0.1: wrong bytes under a
 * digest, oversized or malformed referrer indexes, a referrers API, bearer auth, and a registry
 * that is down (the verifier keeps its last verdict and retries every minute).
 */
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { emptyCatalog } from "../../src/plugins/catalog.js";
import { parseImageRef } from "../../src/plugins/image-ref.js";
import type { ImageRef } from "../../src/plugins/image-ref.js";
import { newTrustPolicy } from "../../src/plugins/trust.js";
import { buildBundleReferrer } from "../../src/trust/bundle-referrer.js";
import { checkImage } from "../../src/trust/image-check.js";
import { MEDIA_TYPE, digestOf } from "../../src/trust/oci.js";
import type { Descriptor } from "../../src/trust/oci.js";
import { RegistryClient } from "../../src/trust/registry.js";
import { loadShippedTrustedRoot } from "../../src/trust/trusted-root.js";
import { ImageVerifier } from "../../src/trust/verifier.js";
import { startFakeRegistry } from "./fake-registry.js";
import type { FakeRegistry, FakeRegistryOptions } from "./fake-registry.js";
import { LABEL_MANIFEST, buildImage, generateKey, signDsse } from "./signing.js";

const root = loadShippedTrustedRoot().root;
const owner = generateKey();
const policy = newTrustPolicy(emptyCatalog(), [{ name: "owner-key", kind: "owner", identity: { publicKey: owner.publicKey } }]);
const image = buildImage(JSON.stringify(LABEL_MANIFEST), "fake");
const subject: Descriptor = { mediaType: MEDIA_TYPE.ociManifest, digest: image.digest, size: image.manifest.length };
const bundle = await signDsse(owner, image.digest);
const referrer = buildBundleReferrer(subject, bundle);
const configDigest = digestOf(image.config);

function store(overrides: { manifest?: Uint8Array; config?: Uint8Array; tagIndex?: Uint8Array } = {}): FakeRegistryOptions {
  const index = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPE.ociIndex, manifests: [referrer.descriptor] }));
  return {
    manifests: new Map([
      [image.digest, { bytes: overrides.manifest ?? image.manifest, mediaType: MEDIA_TYPE.ociManifest }],
      [referrer.descriptor.digest, { bytes: referrer.manifest, mediaType: MEDIA_TYPE.ociManifest }],
      [image.digest.replace(":", "-"), { bytes: overrides.tagIndex ?? index, mediaType: MEDIA_TYPE.ociIndex }],
    ]),
    blobs: new Map([
      [configDigest, overrides.config ?? image.config],
      [digestOf(image.layer), image.layer],
      [digestOf(bundle), bundle],
    ]),
  };
}

let fake: FakeRegistry | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function refAt(host: string): ImageRef {
  const r = parseImageRef(`${host}/plugins/fake@${image.digest}`);
  if (!r.ok) throw new Error("bad ref");
  return r.value;
}

async function check(opts: FakeRegistryOptions, limits = {}) {
  fake = await startFakeRegistry(opts);
  const client = new RegistryClient({ registry: fake.host, limits });
  return checkImage({ image: refAt(fake.host), source: client, trustedRoot: root, policy, limits });
}

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe("a registry that misbehaves", () => {
  it("is trusted when it serves the right bytes", async () => {
    expect((await check(store())).outcome).toBe("unverified");
  });

  it.each([
    ["a manifest whose bytes do not match its digest", { manifest: buildImage(JSON.stringify(LABEL_MANIFEST), "other").manifest }],
    ["a config blob whose bytes do not match its digest", { config: Buffer.from('{"config":{}}') }],
  ])("refuses %s", async (_what, overrides) => {
    const verdict = await check(store(overrides));
    expect(verdict).toMatchObject({ outcome: "refused", reason: "digest_mismatch" });
  });

  it("refuses a referrer index larger than the limit", async () => {
    const many = Array.from({ length: 20 }, (_, i) => ({ mediaType: MEDIA_TYPE.ociManifest, digest: `sha256:${String(i).padStart(64, "0")}`, size: 1 }));
    const big = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPE.ociIndex, manifests: many }));
    expect(await check(store({ tagIndex: big }), { referrers: 10 })).toMatchObject({ outcome: "refused", reason: "too_large" });
    expect(await check(store({ tagIndex: big }), { index: 100 })).toMatchObject({ outcome: "refused", reason: "too_large" });
  });

  it.each([
    ["not JSON", "{"],
    ["without a manifests list", JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPE.ociIndex })],
    ["with a descriptor lacking a digest", JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: MEDIA_TYPE.ociManifest, size: 3 }] })],
  ])("refuses a referrer index that is %s", async (_what, text) => {
    const verdict = await check(store({ tagIndex: Buffer.from(text) }));
    expect(verdict).toMatchObject({ outcome: "refused", reason: "malformed_image" });
  });

  it("uses the referrers API when the registry has one, and does not ask for the fallback tag", async () => {
    const opts = store();
    opts.referrers = (d) =>
      d === image.digest
        ? { bytes: Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPE.ociIndex, manifests: [referrer.descriptor] })) }
        : undefined;
    opts.manifests?.delete(image.digest.replace(":", "-"));
    const verdict = await check(opts);
    expect(verdict.outcome).toBe("unverified");
    expect(fake?.requests.some((r) => r.path.includes("/manifests/sha256-"))).toBe(false);
  });

  it("answers a bearer challenge with a token from the realm, and never puts the token in a verdict", async () => {
    const token = "s3cr3t-token-value";
    const verdict = await check({ ...store(), bearer: { token, service: "fake-registry" } });
    expect(verdict.outcome).toBe("unverified");
    const tokenRequests = fake?.requests.filter((r) => r.path.startsWith("/token")) ?? [];
    expect(tokenRequests).toHaveLength(1);
    expect(tokenRequests[0]?.path).toContain("scope=repository%3Aplugins%2Ffake%3Apull");
    expect(fake?.requests.some((r) => r.authorization === `Bearer ${token}`)).toBe(true);
    expect(JSON.stringify(verdict)).not.toContain(token);
  });

  it("refuses when the token endpoint refuses", async () => {
    fake = await startFakeRegistry({ ...store(), bearer: { token: "t", service: "fake-registry" } });
    const host = fake.host;
    // A challenge naming another service makes the fake token endpoint answer 400.
    const client = new RegistryClient({
      registry: host,
      fetch: (input, init) => {
        const url = String(input).replace("service=fake-registry", "service=wrong");
        return fetch(url, init);
      },
    });
    const verdict = await checkImage({ image: refAt(host), source: client, trustedRoot: root, policy });
    expect(verdict).toMatchObject({ outcome: "refused", reason: "auth_failed" });
  });
});

describe("a registry that is down", () => {
  it("is refused when nothing was verified before (fail closed)", async () => {
    const port = await closedPort();
    const client = new RegistryClient({ registry: `127.0.0.1:${port}` });
    const now = 0;
    const verifier = new ImageVerifier({ check: (img) => checkImage({ image: img, source: client, trustedRoot: root, policy }), clock: () => now });
    const got = await verifier.verify(refAt(`127.0.0.1:${port}`));
    expect(got.verdict).toMatchObject({ outcome: "refused", reason: "unreachable" });
    expect(got.stale).toBe(true);
    expect(got.retryAt).toBe(now + 60_000);
  });

  it("keeps the last verdict while it is down, and tries again every minute", async () => {
    // Starts unsigned (refused, so re-checked every minute); then goes down; then comes back signed.
    const opts = store();
    const tag = image.digest.replace(":", "-");
    const tagIndex = opts.manifests?.get(tag);
    opts.manifests?.delete(tag);
    fake = await startFakeRegistry(opts);
    const port = Number(fake.host.split(":")[1]);
    const downPort = await closedPort();
    let up = true;
    let requests = 0;
    const client = new RegistryClient({
      registry: fake.host,
      // While "down", requests go to a port nothing listens on, still on 127.0.0.1.
      fetch: (input, init) => {
        requests++;
        return fetch(up ? String(input) : String(input).replace(`:${port}/`, `:${downPort}/`), init);
      },
    });
    let now = 1_000_000;
    const verifier = new ImageVerifier({
      check: (img) => checkImage({ image: img, source: client, trustedRoot: root, policy }),
      clock: () => now,
    });
    const ref = refAt(fake.host);

    const first = await verifier.verify(ref);
    expect(first).toMatchObject({ verdict: { outcome: "refused", reason: "unsigned" }, stale: false, retryAt: now + 60_000 });

    up = false;
    now += 59_999;
    const asked = requests;
    expect(await verifier.retryDue()).toBe(0);
    expect((await verifier.verify(ref)).verdict.reason).toBe("unsigned");
    expect(requests).toBe(asked);

    now += 1;
    expect(await verifier.retryDue()).toBe(1);
    expect(requests).toBeGreaterThan(asked);
    const kept = verifier.peek(ref);
    expect(kept).toMatchObject({ verdict: { outcome: "refused", reason: "unsigned" }, stale: true, retryAt: now + 60_000 });

    // Back up, with the signature attached: the next retry, a minute later, sees it.
    up = true;
    if (tagIndex !== undefined) opts.manifests?.set(tag, tagIndex);
    now += 60_000;
    const back = await verifier.verify(ref);
    expect(back).toMatchObject({ verdict: { outcome: "unverified" }, stale: false, retryAt: Number.POSITIVE_INFINITY });
  });
});
