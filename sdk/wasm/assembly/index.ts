// @openfief/sdk-wasm: write an OpenFief plugin in AssemblyScript against ABI version 1
// (docs/abi.md). The entry file of a plugin re-exports the ABI's exports and registers its
// methods at the top level:
//
//   export * from "@openfief/sdk-wasm/assembly/exports";
//   import { register, registerManifest } from "@openfief/sdk-wasm";
//   registerManifest(MANIFEST_JSON);
//   register("sync", sync);
//
// and extends the SDK's asconfig.json, which routes AssemblyScript's env imports to WASI.

export { ABI_VERSION, Handler, REQUEST_LIMITS, okObject, register, registerManifest } from "./abi";
export { decodeBase64, decodedLengthAtMost, encodeBase64 } from "./base64";
export { ByteWriter, invalidUtf8At, isUtf8 } from "./bytes";
export {
  Delivery,
  FileHeader,
  FxRate,
  ImportFileParams,
  IndexReading,
  IngestMode,
  IngestProblem,
  Institution,
  Price,
  Severity,
  SyncRequest,
  deliveryResponse,
} from "./connector";
export { DEFAULT_MAX_BODY_BYTES, HttpRequest, HttpResponse, get, request } from "./http";
export { secret, wait } from "./host";
export { BalanceAssertion, LedgerDelivery, Posting, Transaction, ledgerDeliveryResponse } from "./ledger";
export {
  JSONArray,
  JSONBool,
  JSONKind,
  JSONLimits,
  JSONNull,
  JSONNumber,
  JSONObject,
  JSONRaw,
  JSONString,
  JSONValue,
  parseJSON,
  parseJSONAt,
  parseJSONBytes,
  toJSONBytes,
  writeJSON,
  writeJSONString,
} from "./json";
export { log } from "./log";
export { MAX_MESSAGE_BYTES, pinnedCount } from "./pinned";
export { CallError, Code, Result } from "./result";
export { CLOCK_MONOTONIC, CLOCK_REALTIME, clockNanos, fillRandom } from "./wasi";
