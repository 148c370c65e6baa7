// The ECB's euro foreign exchange reference rates as it publishes them
// (https://www.ecb.europa.eu/stats/eurofxref/): a gesmes:Envelope whose eurofxref Cube holds one
// Cube per day (time='YYYY-MM-DD'), each holding one Cube per currency (currency='USD'
// rate='1.0705'): 1 EUR is worth `rate` units of the currency. The daily file has one day, the
// 90-day file the last 90 days' publications, newest first.
import { FxRate, IngestProblem, Severity } from "@openfief/sdk-wasm/assembly";
import { isDate } from "./dates";
import { XmlLimits, XmlStart, XmlVisitor, readXml } from "@openfief/sdk-wasm/assembly/xml";

/** The gesmes envelope's namespace. */
export const GESMES_NS = "http://www.gesmes.org/xml/2002-08-01";
/** The namespace of the rates' Cube elements. */
export const EUROFXREF_NS = "http://www.ecb.int/vocabulary/2002-08-01/eurofxref";
/** The currency every ECB reference rate is quoted against. */
export const BASE_CURRENCY = "EUR";
/** The `source` of every rate delivered. */
export const SOURCE = "ECB euro foreign exchange reference rates";
/** Rates one document may hold (the whole history since 1999 holds about 200,000). */
export const MAX_RATES: i32 = 100_000;
/** Problems one document reports before it stops counting. */
export const MAX_PROBLEMS: i32 = 50;

/** One currency's rate on a day, as published. */
export class EcbRate {
  constructor(public currency: string, public rate: string) {}
}

/** One day's publication. */
export class EcbDay {
  rates: EcbRate[] = [];
  constructor(public date: string, public line: i32) {}
}

/** A document read: its days in the order published, and what could not be read. */
export class EcbDocument {
  days: EcbDay[] = [];
  problems: IngestProblem[] = [];

  hasErrors(): bool {
    for (let i = 0; i < this.problems.length; i++) if (this.problems[i].severity == Severity.ERROR) return true;
    return false;
  }

  /** The latest date published, or "" when there is none. */
  latest(): string {
    let d = "";
    for (let i = 0; i < this.days.length; i++) if (this.days[i].date > d) d = this.days[i].date;
    return d;
  }

  /** The earliest date published, or "" when there is none. */
  earliest(): string {
    let d = "";
    for (let i = 0; i < this.days.length; i++) if (d == "" || this.days[i].date < d) d = this.days[i].date;
    return d;
  }

  has(date: string): bool {
    for (let i = 0; i < this.days.length; i++) if (this.days[i].date == date) return true;
    return false;
  }
}

function isCurrency(s: string): bool {
  if (s.length != 3) return false;
  for (let i = 0; i < 3; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x41 || c > 0x5a) return false;
  }
  return true;
}

/** A positive decimal as the contract writes them: digits, an optional fraction, no sign, no exponent. */
export function isPositiveDecimal(s: string): bool {
  if (s.length == 0 || s.length > 32) return false;
  let i = 0;
  let nonZero = false;
  const first = s.charCodeAt(0);
  if (first == 0x30 && s.length > 1 && s.charCodeAt(1) != 0x2e) return false;
  while (i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) {
    if (s.charCodeAt(i) != 0x30) nonZero = true;
    i++;
  }
  if (i == 0) return false;
  if (i < s.length) {
    if (s.charCodeAt(i) != 0x2e) return false;
    i++;
    const fracStart = i;
    while (i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) {
      if (s.charCodeAt(i) != 0x30) nonZero = true;
      i++;
    }
    if (i == fracStart || i != s.length) return false;
  }
  return nonZero;
}

class EcbVisitor extends XmlVisitor {
  doc: EcbDocument = new EcbDocument();
  rates: i32 = 0;
  sawEnvelope: bool = false;
  sawRates: bool = false;
  /** The depth of the outer Cube, or 0 outside it. */
  cubeDepth: i32 = 0;
  /** The depth of an element whose content is skipped (gesmes:subject, …), or 0. */
  skipDepth: i32 = 0;
  day: EcbDay | null = null;

  constructor(public where: string) {
    super();
  }

  problem(severity: Severity, code: string, message: string, line: i32): void {
    const problems = this.doc.problems;
    if (problems.length >= MAX_PROBLEMS) return;
    const location = (this.where.length > 0 ? this.where + " " : "") + "line " + line.toString();
    if (problems.length == MAX_PROBLEMS - 1) {
      problems.push(new IngestProblem(Severity.ERROR, "ecb_too_many_problems", "more problems than " + MAX_PROBLEMS.toString() + "; the rest are not listed", location));
      return;
    }
    problems.push(new IngestProblem(severity, code, message, location));
  }

  error(code: string, message: string, line: i32): void {
    this.problem(Severity.ERROR, code, message, line);
  }

  onlyAttributes(el: XmlStart, names: string[]): bool {
    for (let i = 0; i < el.attributes.length; i++) {
      const a = el.attributes[i];
      if (a.prefix.length > 0 || !names.includes(a.local)) {
        this.error("ecb_document_unrecognized", "a Cube with an unexpected attribute " + (a.prefix.length > 0 ? a.prefix + ":" : "") + a.local, el.line);
        return false;
      }
    }
    return true;
  }

  start(el: XmlStart, depth: i32): bool {
    if (this.skipDepth > 0) return true;
    if (depth == 1) {
      if (el.uri != GESMES_NS || el.local != "Envelope") {
        this.error("ecb_document_unrecognized", "the root element is not the ECB's gesmes:Envelope", el.line);
        return false;
      }
      this.sawEnvelope = true;
      return true;
    }
    const isCube = el.uri == EUROFXREF_NS && el.local == "Cube";
    if (depth == 2) {
      if (!isCube) {
        // gesmes:subject, gesmes:Sender and anything else beside the rates: not data.
        this.skipDepth = depth;
        return true;
      }
      if (!this.onlyAttributes(el, [])) return false;
      this.cubeDepth = depth;
      this.sawRates = true;
      return true;
    }
    if (!isCube) {
      this.error("ecb_document_unrecognized", "an element " + el.local + " inside the rates", el.line);
      return false;
    }
    if (depth == 3) {
      if (!this.onlyAttributes(el, ["time"])) return false;
      const time = el.attribute("time");
      if (time === null || !isDate(time)) {
        this.error("ecb_date_invalid", "a day whose time is not a YYYY-MM-DD date", el.line);
        this.day = new EcbDay("", el.line);
        return true;
      }
      if (this.doc.has(time)) this.error("ecb_date_duplicate", "the day " + time + " is published twice", el.line);
      const day = new EcbDay(time, el.line);
      this.day = day;
      this.doc.days.push(day);
      return true;
    }
    if (depth == 4) {
      if (!this.onlyAttributes(el, ["currency", "rate"])) return false;
      const day = this.day!;
      const currency = el.attribute("currency");
      const rate = el.attribute("rate");
      if (currency === null || !isCurrency(currency)) {
        this.error("ecb_currency_invalid", "a rate whose currency is not an ISO 4217 code", el.line);
        return true;
      }
      if (rate === null || !isPositiveDecimal(rate)) {
        this.error("ecb_rate_invalid", "the " + currency + " rate is not a positive decimal", el.line);
        return true;
      }
      for (let i = 0; i < day.rates.length; i++) {
        if (day.rates[i].currency == currency) {
          this.error("ecb_currency_duplicate", currency + " is published twice on " + day.date, el.line);
          return true;
        }
      }
      if (++this.rates > MAX_RATES) {
        this.error("ecb_too_many_rates", "more than " + MAX_RATES.toString() + " rates", el.line);
        return false;
      }
      day.rates.push(new EcbRate(currency, rate));
      return true;
    }
    this.error("ecb_document_unrecognized", "a Cube nested deeper than a rate", el.line);
    return false;
  }

  end(depth: i32): bool {
    if (this.skipDepth == depth) this.skipDepth = 0;
    if (depth == 3) this.day = null;
    return true;
  }
}

/** Reads one ECB document; `where` prefixes each problem's location ("eurofxref-daily.xml"). */
export function readEcb(bytes: Uint8Array, where: string): EcbDocument {
  const v = new EcbVisitor(where);
  // 16 levels, 16 attributes an element, 400,000 elements: the 90-day file holds about 3,000.
  const err = readXml(bytes, v, new XmlLimits(16, 16, 400_000));
  if (err !== null) {
    v.error("ecb_xml_malformed", "the document is not well-formed XML: " + err.message, err.line);
  } else if (!v.doc.hasErrors()) {
    if (!v.sawRates || v.doc.days.length == 0) v.error("ecb_no_rates", "the document holds no rates", 1);
    else {
      for (let i = 0; i < v.doc.days.length; i++) {
        const d = v.doc.days[i];
        if (d.rates.length == 0) v.problem(Severity.WARNING, "ecb_day_empty", "the day " + d.date + " has no rates", d.line);
      }
    }
  }
  return v.doc;
}

/** The days on or after `after` (exclusive; "" for all) as FxRates, oldest day first. */
export function fxRates(days: EcbDay[], after: string): FxRate[] {
  const chosen: EcbDay[] = [];
  for (let i = 0; i < days.length; i++) if (days[i].date > after) chosen.push(days[i]);
  chosen.sort((a: EcbDay, b: EcbDay): i32 => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
  const out: FxRate[] = [];
  for (let i = 0; i < chosen.length; i++) {
    const d = chosen[i];
    for (let j = 0; j < d.rates.length; j++) out.push(new FxRate(d.date, BASE_CURRENCY, d.rates[j].currency, d.rates[j].rate, SOURCE));
  }
  return out;
}
