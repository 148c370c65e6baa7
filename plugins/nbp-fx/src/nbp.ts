import { JsonNumber, parseExactJson, toDecimalString, type ExactJson } from "./exact-json.js";
import { isDate } from "./dates.js";

/** NBP's API host: the only egress the plugin asks for. */
export const NBP_HOST = "api.nbp.pl";
/** NBP answers at most 93 days per request. */
export const MAX_RANGE_DAYS = 93;

/** One mid rate of an NBP table A: 1 `code` = `mid` PLN. */
export interface NbpRate {
  readonly code: string;
  readonly mid: string;
}

/** One NBP table A, as published on one day. */
export interface NbpTable {
  readonly no: string;
  readonly effectiveDate: string;
  readonly rates: readonly NbpRate[];
}

/** The URL of table A for a range of days (inclusive). */
export function tablesUrl(base: string, startDate: string, endDate: string): string {
  return `${base.replace(/\/+$/, "")}/api/exchangerates/tables/A/${startDate}/${endDate}/?format=json`;
}

const CURRENCY = /^[A-Z]{3}$/;
const POSITIVE_DECIMAL = /^(?:0|[1-9]\d*)(?:\.\d+)?$/;

function field(o: ExactJson, name: string): ExactJson | undefined {
  if (typeof o !== "object" || o === null || Array.isArray(o) || o instanceof JsonNumber) return undefined;
  return Object.prototype.hasOwnProperty.call(o, name) ? o[name] : undefined;
}

/**
 * Reads NBP's answer for table A (`[{table, no, effectiveDate, rates: [{currency, code, mid}]}]`),
 * keeping every rate as the decimal text NBP wrote. Throws SyntaxError on anything it cannot read.
 */
export function parseTables(body: string): NbpTable[] {
  const json = parseExactJson(body);
  if (!Array.isArray(json)) throw new SyntaxError("the answer is not a list of tables");
  return json.map((t, i) => {
    const table = field(t, "table");
    const no = field(t, "no");
    const effectiveDate = field(t, "effectiveDate");
    const rates = field(t, "rates");
    if (table !== "A") throw new SyntaxError(`table ${i} is not table A`);
    if (typeof no !== "string" || no === "") throw new SyntaxError(`table ${i} has no number`);
    if (typeof effectiveDate !== "string" || !isDate(effectiveDate)) throw new SyntaxError(`table ${i} has no valid effectiveDate`);
    if (!Array.isArray(rates)) throw new SyntaxError(`table ${i} has no rates`);
    return {
      no,
      effectiveDate,
      rates: rates.map((r, j) => {
        const code = field(r, "code");
        const mid = field(r, "mid");
        if (typeof code !== "string" || !CURRENCY.test(code)) throw new SyntaxError(`table ${i} rate ${j} has no ISO 4217 code`);
        if (!(mid instanceof JsonNumber)) throw new SyntaxError(`table ${i} rate ${j} has no numeric mid`);
        const decimal = toDecimalString(mid);
        if (!POSITIVE_DECIMAL.test(decimal) || !/[1-9]/.test(decimal)) throw new SyntaxError(`table ${i} rate ${j} is not a positive rate`);
        return { code, mid: decimal };
      }),
    };
  });
}
