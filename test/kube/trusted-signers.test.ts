import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readTrustedSigners, signersFromConfigMapData } from "../../src/kube/trusted-signers.js";
import { FakeApiServer } from "./fake-apiserver.js";

const VALID = JSON.stringify({
  signers: [{ name: "acme-ci", issuer: "https://token.actions.githubusercontent.com", subject: "https://github.com/acme/plugins/.github/workflows/release.yml@refs/heads/main" }],
});

describe("the owner's trusted signers", () => {
  let server: FakeApiServer;
  beforeEach(async () => {
    server = await FakeApiServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  it("are none when the optional ConfigMap does not exist", async () => {
    expect(await readTrustedSigners(server.kubeConfig())).toEqual([]);
    expect(server.requests.at(-1)).toMatchObject({ method: "GET", path: "/api/v1/namespaces/openfief/configmaps/openfief-trusted-signers" });
  });

  it("are read from the signers.json key", async () => {
    server.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "openfief-trusted-signers", namespace: "openfief" }, data: { "signers.json": VALID } });
    const signers = await readTrustedSigners(server.kubeConfig());
    expect(signers.map((s) => [s.name, s.kind])).toEqual([["acme-ci", "owner"]]);
  });

  it.each([
    ["a signer without an identity", JSON.stringify({ signers: [{ name: "x" }] }), "signers[0]"],
    ["an unknown field", JSON.stringify({ signers: [{ name: "x", publicKey: "k", color: "red" }] }), "signers[0].color"],
    ["not JSON", "{", "invalid"],
  ])("refuse to start with %s, naming the bad entry", (_name, text, named) => {
    expect(() => signersFromConfigMapData({ "signers.json": text })).toThrow(expect.objectContaining({ code: "invalid_trusted_signers", message: expect.stringContaining(named) }));
  });

  it("refuse to start when the ConfigMap lacks the signers.json key", () => {
    expect(() => signersFromConfigMapData({ "other.json": VALID })).toThrow(/no key signers\.json/);
  });
});
