import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { coreUrl, instanceAudience, listenPort, loadConfig, readEnvironment } from "./env.js";
import { SdkError } from "./errors.js";

describe("the plugin environment", () => {
  it.each([
    ["10.96.0.10:8080", "http://10.96.0.10:8080/"],
    ["[fd00::10]:8080", "http://[fd00::10]:8080/"],
    ["http://10.96.0.10:8080", "http://10.96.0.10:8080/"],
  ])("reads OPENFIEF_CORE_ADDRESS %s as %s", (address, url) => {
    expect(coreUrl({ OPENFIEF_CORE_ADDRESS: address }).href).toBe(url);
  });

  it.each([[undefined], ["ftp://10.0.0.1:21"], ["http://user:pw@10.0.0.1:80"], ["not a host"]])("refuses the core address %s", (address) => {
    expect(() => coreUrl(address === undefined ? {} : { OPENFIEF_CORE_ADDRESS: address })).toThrow(SdkError);
  });

  it.each([[undefined, 8080], ["9000", 9000], ["1", 1], ["65535", 65535]])("listens on OPENFIEF_LISTEN_PORT=%s as %i", (port, expected) => {
    expect(listenPort(port === undefined ? {} : { OPENFIEF_LISTEN_PORT: port })).toBe(expected);
  });

  it.each([["0"], ["65536"], ["80a"], ["-1"]])("refuses the listen port %s", (port) => {
    expect(() => listenPort({ OPENFIEF_LISTEN_PORT: port })).toThrow(SdkError);
  });

  it("applies the seed's defaults", () => {
    expect(readEnvironment({})).toEqual({
      listenPort: 8080,
      tokenFile: "/var/run/secrets/openfief/token",
      egressTokenFile: "/var/run/secrets/openfief-egress/token",
      saJwksDir: "/var/run/secrets/openfief-sa-jwks",
    });
  });

  it("reads every variable the operator sets", () => {
    const env = readEnvironment({
      OPENFIEF_CORE_ADDRESS: "10.0.0.1:8080", OPENFIEF_LISTEN_PORT: "8443", OPENFIEF_CONFIG: "{}", OPENFIEF_TOKEN_FILE: "/t",
      OPENFIEF_EGRESS_TOKEN_FILE: "/e", OPENFIEF_INSTANCE: "nbp", OPENFIEF_CORE_SUBJECT: "system:serviceaccount:openfief:core",
      OPENFIEF_SA_JWKS_DIR: "/j", HTTPS_PROXY: "http://10.0.0.2:4750", NO_PROXY: "10.0.0.1",
    });
    expect(env).toEqual({
      coreAddress: "10.0.0.1:8080", listenPort: 8443, config: "{}", tokenFile: "/t", egressTokenFile: "/e", instance: "nbp",
      coreSubject: "system:serviceaccount:openfief:core", saJwksDir: "/j", httpsProxy: "http://10.0.0.2:4750", noProxy: "10.0.0.1",
    });
  });

  it("names the instance audience openfief-plugin:<instance>", () => {
    expect(instanceAudience("ibkr-main")).toBe("openfief-plugin:ibkr-main");
  });

  it("loads the config from inline JSON or from a file", async () => {
    expect(await loadConfig({ OPENFIEF_CONFIG: '{"startDate":"2024-01-01"}' })).toEqual({ startDate: "2024-01-01" });
    const dir = await mkdtemp(join(tmpdir(), "sdk-config-"));
    try {
      await writeFile(join(dir, "config.json"), '{"a":1}');
      expect(await loadConfig({ OPENFIEF_CONFIG: join(dir, "config.json") })).toEqual({ a: 1 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(await loadConfig({})).toBeUndefined();
    await expect(loadConfig({ OPENFIEF_CONFIG: "{nope" })).rejects.toThrow(SdkError);
  });
});
