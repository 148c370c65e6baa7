import { rm } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError, JwksVerifier, createConnectorClient, serveConnector, type ConnectorHandler, type ConnectorServer } from "@openfief/sdk";
import { CORE_SUBJECT, INSTANCE, jwksDir, makeKey, mint } from "./support/keys.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function start(handler: ConnectorHandler, shutdownGraceMs = 20_000): Promise<{ server: ConnectorServer; token: string }> {
  const key = await makeKey("ES256", "k1");
  const dir = await jwksDir([key]);
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const server = await serveConnector(handler, { port: 0, host: "127.0.0.1", shutdownGraceMs, verifier: new JwksVerifier({ jwksDir: dir, instance: INSTANCE, coreSubject: CORE_SUBJECT }) });
  cleanup.push(() => server.close());
  return { server, token: await mint(key) };
}

describe("the core-side client's retries", () => {
  it("retries Unavailable with the same batch ID until the connector answers", async () => {
    const batchIds: string[] = [];
    const { server, token } = await start({
      sync(request) {
        batchIds.push(request.batchId);
        if (batchIds.length < 3) throw new ConnectError("the bank is down", Code.Unavailable);
        return Promise.resolve({ watermark: "2024-01-02" });
      },
    });
    const waits: number[] = [];
    const client = createConnectorClient(server.url, () => token, { sleep: (ms) => { waits.push(ms); return Promise.resolve(); } });
    cleanup.push(() => client.close());
    const delivery = await client.sync({ watermark: "2024-01-01" });
    expect(batchIds).toHaveLength(3);
    expect(new Set(batchIds).size).toBe(1);
    expect(delivery.batchId).toBe(batchIds[0]);
    expect(waits).toHaveLength(2);
  });

  it.each([
    ["InvalidArgument", Code.InvalidArgument],
    ["Unauthenticated", Code.Unauthenticated],
    ["Internal", Code.Internal],
  ])("does not retry %s", async (_name, code) => {
    let calls = 0;
    const { server, token } = await start({
      sync() {
        calls++;
        throw new ConnectError("no", code);
      },
    });
    const client = createConnectorClient(server.url, () => token, { sleep: () => Promise.resolve() });
    cleanup.push(() => client.close());
    const error = await client.sync({ batchId: "b" }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(code);
    expect(calls).toBe(1);
  });

  it("gives up after the last attempt and reports Unavailable", async () => {
    let calls = 0;
    const { server, token } = await start({
      sync() {
        calls++;
        throw new ConnectError("down", Code.Unavailable);
      },
    });
    const client = createConnectorClient(server.url, () => token, { maxAttempts: 3, sleep: () => Promise.resolve() });
    cleanup.push(() => client.close());
    const error = await client.sync({ batchId: "b" }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.Unavailable);
    expect(calls).toBe(3);
  });
});

describe("shutting a connector down", () => {
  it.each([["2"], ["1.1"]] as const)("lets a call in flight finish over HTTP/%s and then refuses new ones", async (httpVersion) => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    const { server, token } = await start({
      async sync() {
        entered();
        await released;
        return { watermark: "done" };
      },
    });
    const client = createConnectorClient(server.url, () => token, { httpVersion, maxAttempts: 1 });
    cleanup.push(() => client.close());
    const call = client.sync({ batchId: "in-flight" });
    await inHandler;
    const closing = server.close();
    const late = createConnectorClient(server.url, () => token, { httpVersion: "1.1", maxAttempts: 1 });
    cleanup.push(() => late.close());
    const refused = await late.sync({ batchId: "late" }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(refused?.code).toBe(Code.Unavailable);
    release();
    const delivery = await call;
    expect(delivery.watermark).toBe("done");
    await closing;
  });

  it("closes when the grace period ends even if a call never finishes", async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    const { server, token } = await start({
      sync() {
        entered();
        return new Promise(() => undefined);
      },
    }, 50);
    const client = createConnectorClient(server.url, () => token, { maxAttempts: 1 });
    cleanup.push(() => client.close());
    const call = client.sync({ batchId: "stuck" }).then(() => undefined, (e: unknown) => ConnectError.from(e));
    await inHandler;
    await server.close();
    const error = await call;
    expect(error).toBeInstanceOf(ConnectError);
  });
});
