import http from "node:http";
import https from "node:https";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SdkError, createCoreClient, createEgressClient, egressProxyUrl, tokenFile } from "@openfief/sdk";
import { startConnectProxy, type TestProxy } from "./support/connect-proxy.js";
import { selfSignedCert } from "./support/tls.js";

const cert = selfSignedCert("bank.example.com");
let dir: string;
let bank: https.Server;
let proxy: TestProxy;
let core: http.Server;
const coreAuth: (string | undefined)[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "sdk-clients-"));
  bank = https.createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    if (req.url === "/redirect-http") return void res.writeHead(302, { location: "http://bank.example.com/plain" }).end();
    res.end(`bank:${req.url}`);
  });
  await new Promise<void>((resolve) => bank.listen(0, "127.0.0.1", resolve));
  const bankPort = (bank.address() as AddressInfo).port;
  proxy = await startConnectProxy((target) => (target === "bank.example.com:443" ? bankPort : undefined));
  core = http.createServer((req, res) => {
    coreAuth.push(req.headers.authorization);
    res.end("core");
  });
  await new Promise<void>((resolve) => core.listen(0, "127.0.0.1", resolve));
});

afterAll(async () => {
  await proxy.close();
  await new Promise<void>((resolve) => bank.close(() => resolve()));
  await new Promise<void>((resolve) => core.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

describe("the egress client", () => {
  it("tunnels through the proxy as user plugin with the egress token re-read for every request", async () => {
    const file = join(dir, "egress-token");
    await writeFile(file, "tok-1");
    const client = createEgressClient({ env: { HTTPS_PROXY: proxy.url, OPENFIEF_EGRESS_TOKEN_FILE: file }, requestTls: { ca: cert.cert } });
    try {
      expect(await (await client.fetch("https://bank.example.com/a")).text()).toBe("bank:/a");
      await writeFile(file, "tok-2");
      expect(await (await client.fetch("https://bank.example.com/b")).text()).toBe("bank:/b");
    } finally {
      await client.close();
    }
    const auths = proxy.seen.slice(-2).map((s) => Buffer.from((s.proxyAuthorization ?? "").replace(/^Basic /, ""), "base64").toString());
    expect(auths).toEqual(["plugin:tok-1", "plugin:tok-2"]);
  });

  it.each([
    ["a plain http URL", { HTTPS_PROXY: "http://127.0.0.1:1" }, "http://bank.example.com/", "egress_plain_http"],
    ["no HTTPS_PROXY", {}, "https://bank.example.com/", "egress_no_proxy"],
    ["an HTTPS_PROXY that is not a URL", { HTTPS_PROXY: "::::" }, "https://bank.example.com/", "egress_no_proxy"],
  ])("refuses to send with %s", async (_name, env, url, code) => {
    const before = proxy.seen.length;
    const client = createEgressClient({ env, token: () => Promise.resolve("t") });
    const error = await client.fetch(url).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(SdkError);
    expect((error as SdkError).code).toBe(code);
    expect(proxy.seen.length).toBe(before);
  });

  it("does not follow a redirect to plain http", async () => {
    const client = createEgressClient({ proxyUrl: proxy.url, token: () => Promise.resolve("t"), requestTls: { ca: cert.cert } });
    try {
      const error = await client.fetch("https://bank.example.com/redirect-http").then(() => undefined, (e: unknown) => e);
      expect((error as SdkError).code).toBe("egress_plain_http");
    } finally {
      await client.close();
    }
  });

  it("puts the token into the proxy URL percent-encoded as the password of user plugin", () => {
    const url = new URL(egressProxyUrl("http://10.0.0.9:4750", "a/b:c"));
    expect(url.username).toBe("plugin");
    expect(decodeURIComponent(url.password)).toBe("a/b:c");
  });
});

describe("the core client", () => {
  it("sends the current openfief-core token and never goes through HTTPS_PROXY", async () => {
    const file = join(dir, "core-token");
    await writeFile(file, "core-1");
    const port = (core.address() as AddressInfo).port;
    const before = proxy.seen.length;
    const client = createCoreClient({ env: { OPENFIEF_CORE_ADDRESS: `127.0.0.1:${port}`, OPENFIEF_TOKEN_FILE: file, HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url } });
    try {
      expect(await (await client.fetch("/v1/ping")).text()).toBe("core");
      await writeFile(file, "core-2");
      await (await client.fetch("/v1/ping")).text();
    } finally {
      await client.close();
    }
    expect(coreAuth.slice(-2)).toEqual(["Bearer core-1", "Bearer core-2"]);
    expect(proxy.seen.length).toBe(before);
  });

  it("refuses to send the token anywhere but the core", async () => {
    const client = createCoreClient({ baseUrl: "http://127.0.0.1:1", token: tokenFile(join(dir, "none")) });
    const error = await client.fetch("http://127.0.0.2:1/steal").then(() => undefined, (e: unknown) => e);
    expect((error as SdkError).code).toBe("core_wrong_origin");
  });
});
