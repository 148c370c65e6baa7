import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { randomUUID } from "node:crypto";
import {
  ConnectorService,
  DeliverySchema,
  type Delivery,
  type FileHeaderSchema,
  type ImportFileRequestSchema,
} from "./gen/openfief/connector/v1/connector_pb.js";

/** Where the core's token for a plugin instance comes from; called once per attempt. */
export type CallTokenSource = () => string | Promise<string>;

/** Options for createConnectorClient. */
export interface ConnectorClientOptions {
  /** "2" (h2c, the default) or "1.1". */
  readonly httpVersion?: "1.1" | "2";
  /** Attempts per call, the first included (default 5). */
  readonly maxAttempts?: number;
  /** The first backoff in milliseconds, doubled per retry (default 200). */
  readonly initialBackoffMs?: number;
  /** The longest backoff in milliseconds (default 5000). */
  readonly maxBackoffMs?: number;
  /** How to wait between attempts; tests inject one. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Makes a new batch ID when the caller gives none (default a random UUID). */
  readonly newBatchId?: () => string;
  /** A deadline per attempt in milliseconds (default 120000). */
  readonly timeoutMs?: number;
  /** The chunk size ImportFile sends the file in (default 64 KiB). */
  readonly chunkSize?: number;
}

/** A file to import: its header (the batch ID is optional) and its bytes. */
export interface ImportFileInput {
  readonly header: Omit<MessageInitShape<typeof FileHeaderSchema>, "$typeName">;
  readonly data: Uint8Array;
}

/** The core's side of the connector contract. */
export interface ConnectorClient {
  /** Calls Sync; the batch ID (given or generated) is the same on every retry. */
  sync(request: { readonly watermark?: string; readonly batchId?: string }): Promise<Delivery>;
  /** Calls ImportFile with the header first, then the file in chunks; retried like sync. */
  importFile(input: ImportFileInput): Promise<Delivery>;
  /** Closes the HTTP/2 session (without this a server's close() would wait for it). */
  close(): void;
}

const sleepFor = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A Connect client for a connector, as the core uses it (D-49): sends the current token on every
 * attempt, reuses the batch ID on a retry, retries `Unavailable` with exponential backoff and
 * nothing else (`InvalidArgument` means the input is unreadable and a retry would not help), and
 * checks that the delivery echoes the batch ID.
 */
export function createConnectorClient(baseUrl: string, tokenSource: CallTokenSource, options: ConnectorClientOptions = {}): ConnectorClient {
  const httpVersion = options.httpVersion ?? "2";
  const sessionManager = httpVersion === "2" ? new Http2SessionManager(baseUrl) : undefined;
  const auth: Interceptor = (next) => async (req) => {
    req.header.set("authorization", `Bearer ${await tokenSource()}`);
    return next(req);
  };
  const transport = createConnectTransport({
    baseUrl,
    httpVersion,
    interceptors: [auth],
    ...(sessionManager !== undefined ? { sessionManager } : {}),
  });
  const client: Client<typeof ConnectorService> = createClient(ConnectorService, transport);
  const maxAttempts = options.maxAttempts ?? 5;
  const initial = options.initialBackoffMs ?? 200;
  const maxBackoff = options.maxBackoffMs ?? 5000;
  const sleep = options.sleep ?? sleepFor;
  const newBatchId = options.newBatchId ?? randomUUID;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const chunkSize = options.chunkSize ?? 64 * 1024;

  async function withRetry(batchId: string, call: () => Promise<{ delivery?: Delivery | undefined }>): Promise<Delivery> {
    for (let attempt = 1; ; attempt++) {
      let response: { delivery?: Delivery | undefined };
      try {
        response = await call();
      } catch (err) {
        const error = ConnectError.from(err);
        if (error.code !== Code.Unavailable || attempt >= maxAttempts) throw error;
        const backoff = Math.min(maxBackoff, initial * 2 ** (attempt - 1));
        await sleep(backoff / 2 + Math.random() * (backoff / 2));
        continue;
      }
      const delivery = response.delivery ?? create(DeliverySchema);
      if (delivery.batchId !== batchId) {
        throw new ConnectError("the connector's delivery does not echo the batch ID", Code.Internal);
      }
      return delivery;
    }
  }

  return {
    sync(request) {
      const batchId = request.batchId ?? newBatchId();
      return withRetry(batchId, () => client.sync({ batchId, watermark: request.watermark ?? "" }, { timeoutMs }));
    },
    importFile(input) {
      const batchId = input.header.batchId !== undefined && input.header.batchId !== "" ? input.header.batchId : newBatchId();
      const header = { ...input.header, batchId };
      async function* messages(): AsyncGenerator<MessageInitShape<typeof ImportFileRequestSchema>> {
        yield { payload: { case: "header", value: header } };
        for (let offset = 0; offset < input.data.byteLength; offset += chunkSize) {
          yield { payload: { case: "chunk", value: input.data.subarray(offset, offset + chunkSize) } };
        }
      }
      return withRetry(batchId, () => client.importFile(messages(), { timeoutMs }));
    },
    close() {
      sessionManager?.abort();
    },
  };
}
