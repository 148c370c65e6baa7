// The ECB FX connector's two methods. sync fetches the daily file; when the watermark is older
// than the weekday before its date, ECB days may have been missed, so it also fetches the 90-day
// file and delivers every day after the watermark. A day already delivered is never delivered
// again. A document with an error problem delivers no rate at all and keeps the watermark: half
// a day is worse than none.
import {
  Code,
  Delivery,
  HttpResponse,
  ImportFileParams,
  IngestProblem,
  Institution,
  JSONValue,
  Result,
  Severity,
  SyncRequest,
  deliveryResponse,
  get,
} from "@openfief/sdk-wasm/assembly";
import { isDate, previousWeekday } from "./dates";
import { EcbDay, EcbDocument, fxRates, readEcb } from "./ecb";

/** Where the ECB publishes the day's rates. */
export const DAILY_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml";
/** Where the ECB publishes the last 90 days' rates. */
export const HIST_90D_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist-90d.xml";
/** The largest document read, from the ECB or from a file (4 MiB; the 90-day file is ~100 KiB). */
export const MAX_DOCUMENT_BYTES: i32 = 4 << 20;

function institution(): Institution {
  return new Institution("ecb", "European Central Bank");
}

function fileName(url: string): string {
  return url.substring(url.lastIndexOf("/") + 1);
}

/** Fetches and reads one ECB file; a transport failure or a status other than 200 is a CallError. */
function fetchDocument(url: string): Result<EcbDocument> {
  const headers = new Map<string, string>();
  headers.set("accept", "application/xml, text/xml");
  const res = get(url, headers, MAX_DOCUMENT_BYTES);
  if (!res.ok) return Result.err<EcbDocument>(res.error.code, "fetching " + fileName(url) + ": " + res.error.message);
  const r: HttpResponse = res.value;
  if (r.status != 200) {
    let message = "the ECB answered HTTP " + r.status.toString() + " for " + fileName(url);
    const location = r.header("location");
    if (r.status >= 300 && r.status < 400 && location !== null) message += " (a redirect, which the connector does not follow)";
    return Result.err<EcbDocument>(Code.HTTP_FAILED, message);
  }
  return Result.ok<EcbDocument>(readEcb(r.body, fileName(url)));
}

/** `sync`: the days the ECB published after the watermark. */
export function sync(params: JSONValue): Result<JSONValue> {
  const parsed = SyncRequest.fromJSON(params);
  if (!parsed.ok) return Result.fail<JSONValue>(parsed.error);
  const request = parsed.value;
  const watermark = request.watermark;
  if (watermark.length > 0 && !isDate(watermark)) return Result.err<JSONValue>(Code.INVALID_REQUEST, "params.watermark is not a YYYY-MM-DD date");

  const delivery = new Delivery();
  delivery.batchId = request.batchId;
  delivery.institution = institution();
  delivery.watermark = watermark;

  const daily = fetchDocument(DAILY_URL);
  if (!daily.ok) return Result.fail<JSONValue>(daily.error);
  if (daily.value.hasErrors()) {
    delivery.problems = daily.value.problems;
    return Result.ok<JSONValue>(deliveryResponse(delivery));
  }
  const latest = daily.value.latest();
  if (watermark.length > 0 && latest <= watermark) return Result.ok<JSONValue>(deliveryResponse(delivery));

  let days: EcbDay[] = daily.value.days;
  const problems: IngestProblem[] = daily.value.problems;
  if (watermark.length > 0 && watermark < previousWeekday(latest)) {
    const hist = fetchDocument(HIST_90D_URL);
    if (!hist.ok) return Result.fail<JSONValue>(hist.error);
    if (hist.value.hasErrors()) {
      delivery.problems = hist.value.problems;
      return Result.ok<JSONValue>(deliveryResponse(delivery));
    }
    for (let i = 0; i < hist.value.problems.length; i++) problems.push(hist.value.problems[i]);
    const earliest = hist.value.earliest();
    if (earliest.length > 0 && watermark < previousWeekday(earliest)) {
      problems.push(
        new IngestProblem(
          Severity.WARNING,
          "ecb_gap",
          "the 90-day file starts on " + earliest + ": days the ECB published after " + watermark + " and before it are not delivered; import them from eurofxref-hist.xml",
          fileName(HIST_90D_URL),
        ),
      );
    }
    // The daily file is the day's own publication and may be newer than the 90-day file.
    const merged: EcbDay[] = days.slice();
    for (let i = 0; i < hist.value.days.length; i++) if (!daily.value.has(hist.value.days[i].date)) merged.push(hist.value.days[i]);
    days = merged;
  }
  delivery.problems = problems;
  delivery.fxRates = fxRates(days, watermark);
  for (let i = 0; i < delivery.fxRates.length; i++) if (delivery.fxRates[i].date > delivery.watermark) delivery.watermark = delivery.fxRates[i].date;
  return Result.ok<JSONValue>(deliveryResponse(delivery));
}

/** `import_file`: every day in an ECB file (daily, 90-day or history), oldest first. */
export function importFile(params: JSONValue): Result<JSONValue> {
  const parsed = ImportFileParams.fromJSON(params, MAX_DOCUMENT_BYTES);
  if (!parsed.ok) return Result.fail<JSONValue>(parsed.error);
  const doc = readEcb(parsed.value.content, "");
  const delivery = new Delivery();
  delivery.batchId = parsed.value.header.batchId;
  delivery.institution = institution();
  delivery.problems = doc.problems;
  if (!doc.hasErrors()) delivery.fxRates = fxRates(doc.days, "");
  return Result.ok<JSONValue>(deliveryResponse(delivery));
}
