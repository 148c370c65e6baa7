// The IBKR Flex connector's two methods (docs/adr/0185-ibkr-flex-mapping.md). sync reads the Flex
// token and query id from the instance's Secret on every call, asks the Flex Web Service to
// generate the statement (SendRequest), fetches it by its reference code (GetStatement), retrying
// the service's "try again shortly" answers within the call's time, and maps it. The watermark
// it was given is the one it returns: a Flex query names its own period, and every row keeps its
// IBKR ID as its source ID, so importing a statement again changes nothing.
import {
  Code,
  LedgerDelivery,
  HttpRequest,
  HttpResponse,
  ImportFileParams,
  Institution,
  JSONValue,
  Result,
  SyncRequest,
  ledgerDeliveryResponse,
  request,
  secret,
  wait,
} from "@openfief/sdk-wasm/assembly";
import { FlexDocument, ServiceAnswer, readFlex } from "./flex";

/** Where the Flex Web Service (version 3) takes requests. */
export const SEND_REQUEST_URL = "https://ndcdyn.interactivebrokers.com/AccountManagement/FlexWebService/SendRequest";
/** Where statements are fetched when the service's answer names no other approved place. */
export const GET_STATEMENT_URL = "https://ndcdyn.interactivebrokers.com/AccountManagement/FlexWebService/GetStatement";
/** The hosts whose GetStatement URL the connector follows (the manifest's egress). */
const SERVICE_ORIGINS: string[] = ["https://ndcdyn.interactivebrokers.com/", "https://gdcdyn.interactivebrokers.com/"];
/** IBKR asks programmatic clients to name themselves in User-Agent. */
export const USER_AGENT = "OpenFief-ibkr-flex/1.0";
/** The largest statement read, from IBKR or from a file; a larger one is refused before it is parsed. */
export const MAX_STATEMENT_BYTES: i32 = 3 << 20;
/** The Secret role (manifest.json) and its keys. */
export const ROLE = "flex";
export const TOKEN_KEY = "token";
export const QUERY_KEY = "query-id";
/** The pauses between tries of an answer that says "try again shortly" (ms), within the call's 10 s. */
const PAUSES: i32[] = [500, 1000, 1500, 2000, 2000];

/**
 * The Flex Web Service's error codes that mean "try again shortly": the statement is being
 * generated or is not ready yet, the server is busy, or the token asked too often.
 */
const RETRY_LATER: string[] = ["1001", "1004", "1005", "1006", "1007", "1008", "1009", "1018", "1019", "1021"];

function institution(): Institution {
  return new Institution("ibkr", "Interactive Brokers");
}

/** Letters and digits only: what a Flex token, query id and reference code are. */
function isPlain(s: string): bool {
  if (s.length == 0 || s.length > 64) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a))) return false;
  }
  return true;
}

/** The Secret's value for `key`, checked; the message never holds the value. */
function credential(key: string): Result<string> {
  const v = secret(ROLE, key);
  if (!v.ok) return v;
  if (!isPlain(v.value)) return Result.err<string>(Code.INVALID_REQUEST, "the instance's Secret (role " + ROLE + ") holds a " + key + " that is not 1–64 letters and digits");
  return v;
}

/**
 * One GET of the service; transport failures and statuses other than 200 are http_failed. The
 * body comes as base64 (a statement is XML full of double quotes), and one over the cap comes
 * back marked, never decoded, for the caller to refuse in its own words.
 */
function fetch(url: string, what: string): Result<HttpResponse> {
  const req = new HttpRequest("GET", url).header("user-agent", USER_AGENT).header("accept", "application/xml, text/xml");
  req.maxBodyBytes = MAX_STATEMENT_BYTES;
  req.answerBase64 = true;
  req.overCapAsResponse = true;
  const res = request(req);
  if (!res.ok) return Result.err<HttpResponse>(res.error.code, what + ": " + res.error.message);
  if (res.value.status != 200) return Result.err<HttpResponse>(Code.HTTP_FAILED, what + ": IBKR answered HTTP " + res.value.status.toString());
  return res;
}

function describe(a: ServiceAnswer): string {
  const code = a.errorCode.length > 0 ? a.errorCode : "no error code";
  return a.errorMessage.length > 0 ? code + " " + a.errorMessage : code;
}

/**
 * An answer of the service that is not a statement: retry later (null), or the call's failure —
 * http_failed (Unavailable) when IBKR cannot answer now, invalid_request when it refused what the
 * owner configured (an expired or invalid token, an invalid query), which a retry cannot fix.
 */
function refusal(a: ServiceAnswer, what: string): Result<JSONValue> | null {
  if (RETRY_LATER.includes(a.errorCode)) return null;
  if (a.errorCode.length == 0) return Result.err<JSONValue>(Code.HTTP_FAILED, what + ": the Flex Web Service answered " + (a.status.length > 0 ? a.status : "without a status") + " and no error code");
  return Result.err<JSONValue>(Code.INVALID_REQUEST, what + ": the Flex Web Service refused it: " + describe(a) + " (check the token and query id in the instance's Secret)");
}

/** Reads an answer that must be the service's own (SendRequest's); http_failed when it is not. */
function serviceAnswer(body: Uint8Array, what: string): Result<ServiceAnswer> {
  if (body.length > 64 * 1024) return Result.err<ServiceAnswer>(Code.HTTP_FAILED, what + ": the answer is larger than 64 KiB");
  const doc = readFlex(body);
  const a = doc.answer;
  if (doc.unreadable !== null || a === null) {
    const why = doc.unreadable;
    return Result.err<ServiceAnswer>(Code.HTTP_FAILED, what + ": the answer is not the Flex Web Service's" + (why !== null ? " (" + why + ")" : ""));
  }
  return Result.ok<ServiceAnswer>(a);
}

/** Maps a statement read from IBKR or a file; a document it cannot read is invalid_request. */
function mapped(doc: FlexDocument, delivery: LedgerDelivery, what: string): Result<JSONValue> {
  const why = doc.unreadable;
  if (why !== null) return Result.err<JSONValue>(Code.INVALID_REQUEST, what + " cannot be read: " + why);
  const a = doc.answer;
  if (a !== null) return Result.err<JSONValue>(Code.INVALID_REQUEST, what + " is not a statement but the Flex Web Service's answer: " + describe(a));
  delivery.problems = doc.problems;
  // A statement with an error problem delivers nothing: half a statement is worse than none.
  if (!doc.hasErrors()) {
    delivery.transactions = doc.transactions;
    delivery.balanceAssertions = doc.balanceAssertions;
    delivery.prices = doc.prices;
  }
  return Result.ok<JSONValue>(ledgerDeliveryResponse(delivery));
}

function tooLarge(what: string): Result<JSONValue> {
  return Result.err<JSONValue>(Code.INVALID_REQUEST, what + " is larger than the cap of " + MAX_STATEMENT_BYTES.toString() + " bytes: narrow the Flex query's period or sections");
}

/** `sync`: the statement the instance's Flex query names, mapped; the watermark as given. */
export function sync(params: JSONValue): Result<JSONValue> {
  const parsed = SyncRequest.fromJSON(params);
  if (!parsed.ok) return Result.fail<JSONValue>(parsed.error);
  const request = parsed.value;
  const token = credential(TOKEN_KEY);
  if (!token.ok) return Result.fail<JSONValue>(token.error);
  const query = credential(QUERY_KEY);
  if (!query.ok) return Result.fail<JSONValue>(query.error);

  // SendRequest: the service answers a reference code, or an error code.
  let reference = "";
  let getUrl = GET_STATEMENT_URL;
  for (let attempt = 0; ; attempt++) {
    const res = fetch(SEND_REQUEST_URL + "?t=" + token.value + "&q=" + query.value + "&v=3", "SendRequest");
    if (!res.ok) return Result.fail<JSONValue>(res.error);
    if (res.value.overCap) return Result.err<JSONValue>(Code.HTTP_FAILED, "SendRequest: the answer is larger than " + MAX_STATEMENT_BYTES.toString() + " bytes");
    const answer = serviceAnswer(res.value.body, "SendRequest");
    if (!answer.ok) return Result.fail<JSONValue>(answer.error);
    const a = answer.value;
    if (a.status == "Success") {
      if (!isPlain(a.referenceCode)) return Result.err<JSONValue>(Code.HTTP_FAILED, "SendRequest: the Flex Web Service answered Success without a reference code");
      reference = a.referenceCode;
      for (let i = 0; i < SERVICE_ORIGINS.length; i++) if (a.url.startsWith(SERVICE_ORIGINS[i]) && a.url.indexOf("?") < 0) getUrl = a.url;
      break;
    }
    const r = refusal(a, "SendRequest");
    if (r !== null) return r;
    if (attempt >= PAUSES.length) return Result.err<JSONValue>(Code.HTTP_FAILED, "SendRequest: the Flex Web Service still says try again later after " + (attempt + 1).toString() + " tries: " + describe(a));
    const w = wait(PAUSES[attempt]);
    if (w !== null) return Result.err<JSONValue>(Code.HTTP_FAILED, "SendRequest: " + describe(a) + "; and no time is left to try again (" + w.message + ")");
  }

  // GetStatement: the statement, or "generation in progress" until it is ready.
  const delivery = new LedgerDelivery();
  delivery.batchId = request.batchId;
  delivery.institution = institution();
  delivery.watermark = request.watermark;
  for (let attempt = 0; ; attempt++) {
    const res = fetch(getUrl + "?t=" + token.value + "&q=" + reference + "&v=3", "GetStatement");
    if (!res.ok) return Result.fail<JSONValue>(res.error);
    if (res.value.overCap) return tooLarge("the statement");
    const body = res.value.body;
    const doc = readFlex(body);
    const a = doc.answer;
    if (a === null) return mapped(doc, delivery, "the statement");
    const r = refusal(a, "GetStatement");
    if (r !== null) return r;
    if (attempt >= PAUSES.length) return Result.err<JSONValue>(Code.HTTP_FAILED, "GetStatement: the statement is still not ready after " + (attempt + 1).toString() + " tries: " + describe(a));
    const w = wait(PAUSES[attempt]);
    if (w !== null) return Result.err<JSONValue>(Code.HTTP_FAILED, "GetStatement: " + describe(a) + "; and no time is left to try again (" + w.message + ")");
  }
  return Result.err<JSONValue>(Code.INTERNAL, "unreachable");
}

/** `import_file`: a Flex statement saved as XML, mapped as sync maps one from IBKR. */
export function importFile(params: JSONValue): Result<JSONValue> {
  const parsed = ImportFileParams.fromJSON(params, MAX_STATEMENT_BYTES);
  if (!parsed.ok) return Result.fail<JSONValue>(parsed.error);
  const delivery = new LedgerDelivery();
  delivery.batchId = parsed.value.header.batchId;
  delivery.institution = institution();
  return mapped(readFlex(parsed.value.content), delivery, "the file");
}
