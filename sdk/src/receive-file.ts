import { Code, ConnectError } from "@connectrpc/connect";
import type { FileHeader, ImportFileRequest } from "./gen/openfief/connector/v1/connector_pb.js";

/** A whole statement file received over ImportFile. */
export interface ReceivedFile {
  readonly header: FileHeader;
  readonly data: Uint8Array;
}

/** Limits for receiveFile. */
export interface ReceiveFileOptions {
  /** The largest file the connector accepts, in bytes. */
  readonly maxBytes: number;
}

/**
 * Reads an ImportFile stream: exactly one header first, then chunks, up to `maxBytes`.
 * A stream that breaks the order is InvalidArgument; a file over the limit is ResourceExhausted.
 */
export async function receiveFile(requests: AsyncIterable<ImportFileRequest>, options: ReceiveFileOptions): Promise<ReceivedFile> {
  const { maxBytes } = options;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError("maxBytes must be a non-negative integer");
  let header: FileHeader | undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const message of requests) {
    const payload = message.payload;
    if (header === undefined) {
      if (payload.case !== "header") throw new ConnectError("the first message must be the file header", Code.InvalidArgument);
      if (payload.value.batchId === "") throw new ConnectError("the file header has no batch ID", Code.InvalidArgument);
      header = payload.value;
      continue;
    }
    if (payload.case === "header") throw new ConnectError("the file header may only come first", Code.InvalidArgument);
    if (payload.case !== "chunk") throw new ConnectError("a message carries neither header nor chunk", Code.InvalidArgument);
    size += payload.value.byteLength;
    if (size > maxBytes) throw new ConnectError(`the file is larger than ${maxBytes} bytes`, Code.ResourceExhausted);
    chunks.push(payload.value);
  }
  if (header === undefined) throw new ConnectError("the stream carried no file header", Code.InvalidArgument);
  const data = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    data.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { header, data };
}
