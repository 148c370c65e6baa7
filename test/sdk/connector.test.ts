import { createClient } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { exportSPKI } from "jose";
import http from "node:http";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Code,
  ConnectError,
  ConnectorService,
  IngestMode,
  JwksVerifier,
  createConnectorClient,
  receiveFile,
  serveConnector,
  type ConnectorHandler,
  type ConnectorServer,
  type TokenRefusal,
} from "@openfief/sdk";
import { CORE_SUBJECT, INSTANCE, jwksDir, makeKey, mint, unsignedToken, hmacToken, writeJwks, type TestKey } from "./support/keys.js";

const seen: { batchIds: string[]; refusals: (TokenRefusal | "missing")[] } = { batchIds: [], refusals: [] };

const handler: ConnectorHandler = {
  sync(request) {
    seen.batchIds.push(request.batchId);
    return Promise.resolve({
      institution: { id: "test-bank", name: "Test Bank" },
      transactions: [{ sourceId: "t-1", date: "2024-01-02", description: "coffee", postings: [{ accountId: "acc-1", amount: "-12.30", currency: "PLN" }] }],
      fxRates: [{ date: "2024-01-02", baseCurrency: "USD", quoteCurrency: "PLN", rate: "3.9432" }],
      watermark: `after:${request.watermark}`,
    });
  },
  async importFile(requests) {
    const file = await receiveFile(requests, { maxBytes: 1024 });
    seen.batchIds.push(file.header.batchId);
    return { institution: { id: "test-bank", name: file.header.fileName }, problems: [{ code: "size", message: String(file.data.byteLength) }] };
  },
};

let es: TestKey;
let rs: TestKey;
let dir: string;
let server: ConnectorServer;

beforeAll(async () => {
  es = await makeKey("ES256", "es-1");
  rs = await makeKey("RS256", "rs-1");
  dir = await jwksDir([es, rs]);
  const verifier = new JwksVerifier({ jwksDir: dir, instance: INSTANCE, coreSubject: CORE_SUBJECT });
  server = await serveConnector(handler, { port: 0, host: "127.0.0.1", verifier, onRefused: (r) => seen.refusals.push(r) });
});

afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe("a connector served with the SDK", () => {
  it.each([
    ["HTTP/2 (h2c) with an ES256 token", "2", "es"],
    ["HTTP/1.1 with an ES256 token", "1.1", "es"],
    ["HTTP/2 (h2c) with an RS256 token", "2", "rs"],
    ["HTTP/1.1 with an RS256 token", "1.1", "rs"],
  ] as const)("is synced by the core-side client over %s", async (_name, httpVersion, which) => {
    const token = await mint(which === "es" ? es : rs);
    const client = createConnectorClient(server.url, () => token, { httpVersion });
    try {
      const delivery = await client.sync({ batchId: `batch-${httpVersion}-${which}`, watermark: "w1" });
      expect(delivery.batchId).toBe(`batch-${httpVersion}-${which}`);
      expect(delivery.watermark).toBe("after:w1");
      expect(delivery.institution?.id).toBe("test-bank");
      expect(delivery.transactions[0]?.postings[0]).toMatchObject({ accountId: "acc-1", amount: "-12.30", currency: "PLN" });
      expect(delivery.fxRates[0]?.rate).toBe("3.9432");
    } finally {
      client.close();
    }
  });

  it("imports a streamed file and echoes the header's batch ID", async () => {
    const client = createConnectorClient(server.url, () => mint(es), { chunkSize: 100 });
    try {
      const delivery = await client.importFile({ header: { batchId: "file-1", mode: IngestMode.PREVIEW, fileName: "statement.csv", mediaType: "text/csv" }, data: new Uint8Array(1000) });
      expect(delivery.batchId).toBe("file-1");
      expect(delivery.institution?.name).toBe("statement.csv");
      expect(delivery.problems[0]?.message).toBe("1000");
    } finally {
      client.close();
    }
  });
});

describe("a request the core did not send", () => {
  const cases: [string, () => Promise<string>, TokenRefusal][] = [
    ["a wrong audience", () => mint(es, { aud: "openfief-plugin:other-instance" }), "claims"],
    ["the core-audience token", () => mint(es, { aud: "openfief-core" }), "claims"],
    ["a wrong issuer", () => mint(es, { iss: "https://evil.example" }), "claims"],
    ["a wrong subject", () => mint(es, { sub: "system:serviceaccount:openfief:plugin-other" }), "claims"],
    ["algorithm none", () => Promise.resolve(unsignedToken(es.kid)), "algorithm"],
    ["HS256 keyed with the RSA public key", async () => hmacToken(new TextEncoder().encode(await exportSPKI(await importPublic(rs))), rs.kid), "algorithm"],
    ["an expiry two minutes ago (beyond the leeway)", () => mint(es, { exp: Math.floor(Date.now() / 1000) - 120, iat: Math.floor(Date.now() / 1000) - 600 }), "expired"],
    ["no expiry at all", () => mint(es, { exp: undefined }), "claims"],
    ["an unknown key ID", () => mint(es, {}, { kid: "nobody" }), "unknown_kid"],
    ["a key ID of the other algorithm's key", () => mint(es, {}, { kid: rs.kid }), "unknown_kid"],
    ["a signature by a key not in the set", async () => mint({ ...(await makeKey("ES256", "es-1")) }), "signature"],
  ];

  it.each(cases)("gets 401 (Unauthenticated) with %s", async (_name, token, reason) => {
    const before = seen.batchIds.length;
    const refused = seen.refusals.length;
    const client = createConnectorClient(server.url, token, { maxAttempts: 1 });
    try {
      const error = await client.sync({ batchId: "refused" }).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.Unauthenticated);
    } finally {
      client.close();
    }
    expect(seen.batchIds.length).toBe(before); // the handler never saw it
    expect(seen.refusals.slice(refused)).toEqual([reason]);
  });

  it.each([
    ["no Authorization header", undefined],
    ["a Basic Authorization header", "Basic cGx1Z2luOnNlY3JldA=="],
    ["a bearer that is not a JWT", "Bearer not-a-jwt"],
  ])("answers HTTP 401 before the handler to %s", async (_name, authorization) => {
    const before = seen.batchIds.length;
    const status = await postRaw(`${server.url}/openfief.connector.v1.ConnectorService/Sync`, authorization);
    expect(status).toBe(401);
    expect(seen.batchIds.length).toBe(before);
  });
});

describe("key rotation", () => {
  it("accepts a token signed with a new key as soon as jwks.json changes", async () => {
    const next = await makeKey("ES384", "es-2");
    const token = await mint(next);
    const client = createConnectorClient(server.url, () => token, { maxAttempts: 1 });
    try {
      const refused = await client.sync({ batchId: "rotate-1" }).then(() => undefined, (e: unknown) => ConnectError.from(e).code);
      expect(refused).toBe(Code.Unauthenticated);
      await writeJwks(dir, [es, rs, next]);
      const delivery = await client.sync({ batchId: "rotate-2" });
      expect(delivery.batchId).toBe("rotate-2");
      await writeJwks(dir, [rs, next]); // es-1 retired
      const retired = createConnectorClient(server.url, () => mint(es), { maxAttempts: 1 });
      try {
        const code = await retired.sync({ batchId: "rotate-3" }).then(() => undefined, (e: unknown) => ConnectError.from(e).code);
        expect(code).toBe(Code.Unauthenticated);
      } finally {
        retired.close();
      }
    } finally {
      await writeJwks(dir, [es, rs]);
      client.close();
    }
  });
});

describe("receiveFile over ImportFile", () => {
  it.each([
    ["a file over the connector's limit", [{ case: "header" as const }, { case: "chunk" as const, size: 1000 }, { case: "chunk" as const, size: 25 }], Code.ResourceExhausted],
    ["a chunk before the header", [{ case: "chunk" as const, size: 10 }, { case: "header" as const }], Code.InvalidArgument],
    ["a second header", [{ case: "header" as const }, { case: "chunk" as const, size: 10 }, { case: "header" as const }], Code.InvalidArgument],
    ["an empty stream", [], Code.InvalidArgument],
  ])("refuses %s", async (_name, messages, code) => {
    const sessionManager = new Http2SessionManager(server.url);
    const token = await mint(es);
    const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "2", sessionManager, interceptors: [(next) => (req) => { req.header.set("authorization", `Bearer ${token}`); return next(req); }] });
    const raw = createClient(ConnectorService, transport);
    async function* stream() {
      for (const m of messages) {
        if (m.case === "header") yield { payload: { case: "header" as const, value: { batchId: "limits", fileName: "f.csv" } } };
        else yield { payload: { case: "chunk" as const, value: new Uint8Array(m.size) } };
      }
    }
    try {
      const error = await raw.importFile(stream()).then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(error?.code).toBe(code);
    } finally {
      sessionManager.abort();
    }
  });

  it("accepts a file of exactly the limit", async () => {
    const client = createConnectorClient(server.url, () => mint(es));
    try {
      const delivery = await client.importFile({ header: { batchId: "exact", fileName: "f.csv" }, data: new Uint8Array(1024) });
      expect(delivery.problems[0]?.message).toBe("1024");
    } finally {
      client.close();
    }
  });
});

async function importPublic(key: TestKey) {
  const { importJWK } = await import("jose");
  return (await importJWK(key.publicJwk, key.alg)) as Parameters<typeof exportSPKI>[0];
}

function postRaw(url: string, authorization: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { "content-type": "application/json", ...(authorization !== undefined ? { authorization } : {}) } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(JSON.stringify({ batchId: "raw" }));
  });
}
