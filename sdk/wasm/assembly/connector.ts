// The connector contract's messages (proto/openfief/connector/v1/connector.proto) as they travel
// in the ABI: protobuf-JSON, as @bufbuild/protobuf's toJson writes it and fromJson reads it.
// Readers take lowerCamelCase and the proto field name, treat null as the default, and refuse
// unknown fields; writers use lowerCamelCase and omit default values, as toJson does. Only what a
// connector needs to answer sync and import_file is here; Transaction, Posting, BalanceAssertion
// and a Delivery carrying them are in ledger.ts.
import { decodeBase64, decodedLengthAtMost } from "./base64";
import { ByteWriter } from "./bytes";
import { JSONObject, JSONRaw, JSONValue, writeJSONString } from "./json";
import { Code, Result } from "./result";

/** IngestMode, by its number. */
export enum IngestMode {
  UNSPECIFIED = 0,
  PREVIEW = 1,
  COMMIT = 2,
}

const INGEST_MODE_NAMES: string[] = ["INGEST_MODE_UNSPECIFIED", "INGEST_MODE_PREVIEW", "INGEST_MODE_COMMIT"];

/** IngestProblemSeverity, by its number. */
export enum Severity {
  UNSPECIFIED = 0,
  WARNING = 1,
  ERROR = 2,
}

const SEVERITY_NAMES: string[] = ["INGEST_PROBLEM_SEVERITY_UNSPECIFIED", "INGEST_PROBLEM_SEVERITY_WARNING", "INGEST_PROBLEM_SEVERITY_ERROR"];

/** Reads one protobuf-JSON message object, collecting the first problem with its field path. */
class MessageReader {
  error: string | null = null;

  constructor(public o: JSONObject, public path: string, jsonNames: string[], protoNames: string[]) {
    this.check(jsonNames, protoNames);
  }

  private check(jsonNames: string[], protoNames: string[]): void {
    const o = this.o;
    for (let i = 0; i < o.keys.length; i++) {
      const k = o.keys[i];
      if (!jsonNames.includes(k) && !protoNames.includes(k)) {
        this.fail(k, "is not a field of this message");
        return;
      }
    }
    for (let i = 0; i < jsonNames.length; i++) {
      if (jsonNames[i] != protoNames[i] && o.has(jsonNames[i]) && o.has(protoNames[i])) {
        this.fail(jsonNames[i], "is given twice, as " + jsonNames[i] + " and " + protoNames[i]);
        return;
      }
    }
  }

  fail(field: string, message: string): void {
    if (this.error === null) this.error = this.path + "." + field + " " + message;
  }

  field(json: string, proto: string): JSONValue | null {
    const v = this.o.has(json) ? this.o.get(json) : this.o.get(proto);
    return v === null || v.isNull() ? null : v;
  }

  str(json: string, proto: string): string {
    const v = this.field(json, proto);
    if (v === null) return "";
    const s = v.asString();
    if (s === null) {
      this.fail(json, "is not a string");
      return "";
    }
    return s.value;
  }

  obj(json: string, proto: string): JSONObject | null {
    const v = this.field(json, proto);
    if (v === null) return null;
    const o = v.asObject();
    if (o === null) this.fail(json, "is not an object");
    return o;
  }

  enumOf(json: string, proto: string, names: string[]): i32 {
    const v = this.field(json, proto);
    if (v === null) return 0;
    const s = v.asString();
    if (s !== null) {
      const i = names.indexOf(s.value);
      if (i < 0) this.fail(json, "is not one of " + names.join(", "));
      return i < 0 ? 0 : i;
    }
    const n = v.asNumber();
    if (n !== null && n.isSafeInteger() && n.toI64() >= 0 && n.toI64() < names.length) return <i32>n.toI64();
    this.fail(json, "is not one of " + names.join(", "));
    return 0;
  }

  result<T>(value: T): Result<T> {
    const e = this.error;
    return e === null ? Result.ok<T>(value) : Result.err<T>(Code.INVALID_REQUEST, e);
  }
}

function asMessage(v: JSONValue, path: string): Result<JSONObject> {
  const o = v.asObject();
  return o === null ? Result.err<JSONObject>(Code.INVALID_REQUEST, path + " is not an object") : Result.ok<JSONObject>(o);
}

/** SyncRequest: what is new since a watermark. */
export class SyncRequest {
  constructor(public batchId: string, public watermark: string) {}

  /** Reads the `sync` method's params. */
  static fromJSON(v: JSONValue, path: string = "params"): Result<SyncRequest> {
    const o = asMessage(v, path);
    if (!o.ok) return Result.fail<SyncRequest>(o.error);
    const r = new MessageReader(o.value, path, ["batchId", "watermark"], ["batch_id", "watermark"]);
    const req = new SyncRequest(r.str("batchId", "batch_id"), r.str("watermark", "watermark"));
    return r.result<SyncRequest>(req);
  }
}

/** FileHeader: the file an import carries. */
export class FileHeader {
  constructor(public batchId: string, public mode: IngestMode, public fileName: string, public mediaType: string) {}

  static fromJSON(v: JSONValue, path: string): Result<FileHeader> {
    const o = asMessage(v, path);
    if (!o.ok) return Result.fail<FileHeader>(o.error);
    const r = new MessageReader(o.value, path, ["batchId", "mode", "fileName", "mediaType"], ["batch_id", "mode", "file_name", "media_type"]);
    const h = new FileHeader(r.str("batchId", "batch_id"), <IngestMode>r.enumOf("mode", "mode", INGEST_MODE_NAMES), r.str("fileName", "file_name"), r.str("mediaType", "media_type"));
    return r.result<FileHeader>(h);
  }
}

/** The `import_file` method's params: a FileHeader and the whole file. */
export class ImportFileParams {
  constructor(public header: FileHeader, public content: Uint8Array) {}

  /** Reads `{header, contentBase64}`, refusing a file over `maxBytes` before decoding it. */
  static fromJSON(v: JSONValue, maxBytes: i32): Result<ImportFileParams> {
    const o = asMessage(v, "params");
    if (!o.ok) return Result.fail<ImportFileParams>(o.error);
    const r = new MessageReader(o.value, "params", ["header", "contentBase64"], ["header", "contentBase64"]);
    const hv = r.obj("header", "header");
    const content = r.str("contentBase64", "contentBase64");
    if (r.error !== null) return Result.err<ImportFileParams>(Code.INVALID_REQUEST, r.error!);
    if (hv === null) return Result.err<ImportFileParams>(Code.INVALID_REQUEST, "params.header is missing");
    const header = FileHeader.fromJSON(hv, "params.header");
    if (!header.ok) return Result.fail<ImportFileParams>(header.error);
    if (decodedLengthAtMost(content.length) - 2 > maxBytes) {
      return Result.err<ImportFileParams>(Code.INVALID_REQUEST, "params.contentBase64 holds a file over the cap of " + maxBytes.toString() + " bytes");
    }
    const bytes = decodeBase64(content);
    if (!bytes.ok) return Result.err<ImportFileParams>(Code.INVALID_REQUEST, "params.contentBase64: " + bytes.error.message);
    if (bytes.value.length > maxBytes) {
      return Result.err<ImportFileParams>(Code.INVALID_REQUEST, "params.contentBase64 holds a file over the cap of " + maxBytes.toString() + " bytes");
    }
    return Result.ok<ImportFileParams>(new ImportFileParams(header.value, bytes.value));
  }
}

/** Writes `"key":"value"` after a comma when needed, unless value is empty (a default). */
export class ObjectWriter {
  private first: bool = true;

  constructor(public w: ByteWriter) {
    w.byte(0x7b);
  }

  key(k: string): ByteWriter {
    if (!this.first) this.w.byte(0x2c);
    this.first = false;
    writeJSONString(this.w, k);
    this.w.byte(0x3a);
    return this.w;
  }

  str(k: string, v: string): ObjectWriter {
    if (v.length > 0) writeJSONString(this.key(k), v);
    return this;
  }

  end(): void {
    this.w.byte(0x7d);
  }
}

/** Institution: who the data comes from. */
export class Institution {
  constructor(public id: string, public name: string) {}

  writeTo(w: ByteWriter): void {
    new ObjectWriter(w).str("id", this.id).str("name", this.name).end();
  }
}

/** IngestProblem: something the connector could not map cleanly. */
export class IngestProblem {
  constructor(public severity: Severity, public code: string, public message: string, public location: string = "") {}

  writeTo(w: ByteWriter): void {
    const o = new ObjectWriter(w);
    if (this.severity != Severity.UNSPECIFIED) o.str("severity", SEVERITY_NAMES[<i32>this.severity]);
    o.str("code", this.code).str("message", this.message).str("location", this.location).end();
  }
}

/** Price: one price of a commodity on a date. */
export class Price {
  constructor(public commodity: string, public date: string, public price: string, public currency: string) {}

  writeTo(w: ByteWriter): void {
    new ObjectWriter(w).str("commodity", this.commodity).str("date", this.date).str("price", this.price).str("currency", this.currency).end();
  }
}

/** FxRate: one unit of baseCurrency is worth `rate` units of quoteCurrency on `date`. */
export class FxRate {
  constructor(public date: string, public baseCurrency: string, public quoteCurrency: string, public rate: string, public source: string = "") {}

  writeTo(w: ByteWriter): void {
    new ObjectWriter(w)
      .str("date", this.date)
      .str("baseCurrency", this.baseCurrency)
      .str("quoteCurrency", this.quoteCurrency)
      .str("rate", this.rate)
      .str("source", this.source)
      .end();
  }
}

/** IndexReading: one reading of a published index. */
export class IndexReading {
  constructor(public index: string, public date: string, public value: string) {}

  writeTo(w: ByteWriter): void {
    new ObjectWriter(w).str("index", this.index).str("date", this.date).str("value", this.value).end();
  }
}

export function list<T>(o: ObjectWriter, key: string, items: T[]): void {
  if (items.length == 0) return;
  const w = o.key(key);
  w.byte(0x5b);
  for (let i = 0; i < items.length; i++) {
    if (i > 0) w.byte(0x2c);
    // @ts-ignore: every T here has writeTo()
    items[i].writeTo(w);
  }
  w.byte(0x5d);
}

/** Delivery: a connector's answer to sync and import_file. */
export class Delivery {
  batchId: string = "";
  institution: Institution | null = null;
  problems: IngestProblem[] = [];
  prices: Price[] = [];
  fxRates: FxRate[] = [];
  indexReadings: IndexReading[] = [];
  /** The watermark for the next sync; empty for an import. */
  watermark: string = "";

  /** True when a problem is an error. */
  hasErrors(): bool {
    for (let i = 0; i < this.problems.length; i++) if (this.problems[i].severity == Severity.ERROR) return true;
    return false;
  }

  /**
   * Writes the Delivery as protobuf-JSON: fields in the proto's order, defaults omitted. The one
   * writer of every delivery: a LedgerDelivery (ledger.ts) adds its fields through writeLedgerFields.
   */
  writeTo(w: ByteWriter): void {
    const o = new ObjectWriter(w);
    o.str("batchId", this.batchId);
    const inst = this.institution;
    if (inst !== null) inst.writeTo(o.key("institution"));
    this.writeLedgerFields(o);
    list<IngestProblem>(o, "problems", this.problems);
    list<Price>(o, "prices", this.prices);
    list<FxRate>(o, "fxRates", this.fxRates);
    list<IndexReading>(o, "indexReadings", this.indexReadings);
    o.str("watermark", this.watermark);
    o.end();
  }

  /** The fields the proto places between institution and problems: none in a Delivery of rates. */
  protected writeLedgerFields(o: ObjectWriter): void {}
}

/** SyncResponse and ImportFileResponse: `{"delivery": …}`, written straight into bytes. */
export function deliveryResponse(delivery: Delivery): JSONValue {
  return deliveryResponseSized(delivery, 1024);
}

/** deliveryResponse into a writer of `capacity` bytes to start (it grows as needed). */
export function deliveryResponseSized(delivery: Delivery, capacity: i32): JSONValue {
  const w = new ByteWriter(capacity);
  w.text('{"delivery":');
  delivery.writeTo(w);
  w.byte(0x7d);
  return new JSONRaw(w.toBytes());
}
