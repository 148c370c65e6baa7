import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectorHandler, type DeliveryInit, type FxRateSchema } from "@openfief/sdk";
import { addDays, isDate, utcDate } from "./dates.js";
import { MAX_RANGE_DAYS, parseTables, tablesUrl, type NbpTable } from "./nbp.js";

/** What the connector needs from an HTTP client: the egress client's fetch fits. */
export type Fetch = (url: string) => Promise<{ readonly status: number; text(): Promise<string> }>;

/** The NBP connector's dependencies and settings. */
export interface NbpConnectorOptions {
  /** Sends a GET through the egress proxy. */
  readonly fetch: Fetch;
  /** The clock; "today" is its UTC date. */
  readonly now?: () => Date;
  /** NBP's base URL (https://api.nbp.pl). */
  readonly baseUrl?: string;
  /** The first day to fetch when there is no watermark yet (default: today). */
  readonly startDate?: string;
}

/** The institution every delivery names. */
export const INSTITUTION = { id: "nbp", name: "Narodowy Bank Polski" } as const;

async function fetchRange(options: NbpConnectorOptions, base: string, from: string, to: string): Promise<NbpTable[]> {
  let response;
  try {
    response = await options.fetch(tablesUrl(base, from, to));
  } catch (cause) {
    throw new ConnectError("NBP cannot be reached", Code.Unavailable, undefined, undefined, cause);
  }
  // NBP answers 404 "Brak danych" when no table was published in the range.
  if (response.status === 404) return [];
  if (response.status !== 200) throw new ConnectError(`NBP answered HTTP ${response.status}`, Code.Unavailable);
  let body: string;
  try {
    body = await response.text();
  } catch (cause) {
    throw new ConnectError("NBP's answer was cut off", Code.Unavailable, undefined, undefined, cause);
  }
  try {
    return parseTables(body);
  } catch (cause) {
    throw new ConnectError(`NBP's answer cannot be read: ${(cause as Error).message}`, Code.InvalidArgument, undefined, undefined, cause);
  }
}

/**
 * The NBP FX-rates connector (seed 000, "First-party plugins"): its watermark is the date of the
 * latest rates it delivered; a sync asks NBP for the days after it up to today (UTC), in ranges
 * of at most 93 days, and keeps the watermark when nothing new is published.
 */
export function createNbpConnector(options: NbpConnectorOptions): ConnectorHandler {
  const base = options.baseUrl ?? "https://api.nbp.pl";
  const now = options.now ?? (() => new Date());
  if (options.startDate !== undefined && !isDate(options.startDate)) throw new RangeError("startDate must be a YYYY-MM-DD date");
  return {
    async sync(request): Promise<DeliveryInit> {
      const watermark = request.watermark;
      if (watermark !== "" && !isDate(watermark)) {
        throw new ConnectError("the watermark is not a YYYY-MM-DD date", Code.InvalidArgument);
      }
      const today = utcDate(now());
      const start = watermark === "" ? (options.startDate ?? today) : addDays(watermark, 1);
      const fxRates: MessageInitShape<typeof FxRateSchema>[] = [];
      let latest = watermark;
      for (let from = start; from <= today; from = addDays(from, MAX_RANGE_DAYS)) {
        const last = addDays(from, MAX_RANGE_DAYS - 1);
        const to = last < today ? last : today;
        for (const table of await fetchRange(options, base, from, to)) {
          // Only days the sync asked for: a table outside the range is not NBP's answer to it.
          if (table.effectiveDate < from || table.effectiveDate > to) continue;
          for (const rate of table.rates) {
            fxRates.push({ date: table.effectiveDate, baseCurrency: rate.code, quoteCurrency: "PLN", rate: rate.mid, source: `NBP table A ${table.no}` });
          }
          if (latest === "" || table.effectiveDate > latest) latest = table.effectiveDate;
        }
      }
      return { institution: INSTITUTION, fxRates, watermark: latest };
    },
  };
}
