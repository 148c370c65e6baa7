// Reading what IBKR's Flex Web Service answers (docs/adr/0185-ibkr-flex-mapping.md): the service's
// own answer (FlexStatementResponse: Status, ReferenceCode, Url, ErrorCode, ErrorMessage) and a
// Flex statement (FlexQueryResponse > FlexStatements > FlexStatement), whose Trade,
// CashTransaction and OpenPosition rows become the connector contract's transactions, balance
// assertions and prices. Every value is checked; a row that cannot be mapped is an ERROR problem
// naming its line and IBKR's ID, never a guess.
import { BalanceAssertion, IngestProblem, Posting, Price, Severity, Transaction } from "@openfief/sdk-wasm/assembly";
import { XmlStart, XmlVisitor, readXml } from "@openfief/sdk-wasm/assembly/xml";
import { isCurrency, isDecimal, isZero, isoDate, magnitude, negate, nextDay } from "./values";

/** OpenFief account roles the connector posts to; the core maps them to the owner's accounts. */
export namespace Account {
  export const CASH = "cash";
  export const SECURITIES = "securities";
  export const COMMISSIONS = "commissions";
  export const DIVIDENDS = "dividends";
  export const WITHHOLDING_TAX = "withholding-tax";
  export const INTEREST = "interest";
  export const FEES = "fees";
  export const TRANSFERS = "transfers";
  export const OTHER = "other";
}

/** The Flex Web Service's answer to SendRequest, or to a GetStatement that has no statement. */
export class ServiceAnswer {
  status: string = "";
  referenceCode: string = "";
  url: string = "";
  errorCode: string = "";
  errorMessage: string = "";
}

/** What one document turned out to be. */
export class FlexDocument {
  /** Why it is not a document the connector can read (null: it is one). */
  unreadable: string | null = null;
  /** Set when the document is the service's answer rather than a statement. */
  answer: ServiceAnswer | null = null;
  statements: i32 = 0;
  accounts: string[] = [];
  transactions: Transaction[] = [];
  balanceAssertions: BalanceAssertion[] = [];
  prices: Price[] = [];
  problems: IngestProblem[] = [];

  hasErrors(): bool {
    for (let i = 0; i < this.problems.length; i++) if (this.problems[i].severity == Severity.ERROR) return true;
    return false;
  }
}

/** A Flex row's attributes, read with the row's line for problems. */
class Row {
  constructor(public el: XmlStart, public kind: string) {}

  get(name: string): string {
    const v = this.el.attribute(name);
    return v === null ? "" : v.trim();
  }

  where(id: string): string {
    return "line " + this.el.line.toString() + (id.length > 0 ? " (" + this.kind + " " + id + ")" : " (" + this.kind + ")");
  }
}

/** A value in a problem's message: quoted, cut at 40 characters, control characters dropped. */
function quoted(v: string): string {
  let out = "";
  for (let i = 0; i < v.length && i < 40; i++) {
    const c = v.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) out += String.fromCharCode(c);
  }
  return '"' + out + '"';
}

/** The cash account a CashTransaction's type moves money against. */
function counterAccount(type: string): string | null {
  if (type == "Dividends" || type == "Payment In Lieu Of Dividends") return Account.DIVIDENDS;
  if (type == "Withholding Tax" || type == "871(m) Withholding") return Account.WITHHOLDING_TAX;
  if (type == "Broker Interest Received" || type == "Broker Interest Paid" || type == "Bond Interest Received" || type == "Bond Interest Paid") return Account.INTEREST;
  if (type == "Other Fees" || type == "Advisor Fees" || type == "Commission Adjustments") return Account.FEES;
  if (type == "Deposits/Withdrawals" || type == "Deposits & Withdrawals") return Account.TRANSFERS;
  return null;
}

class FlexVisitor extends XmlVisitor {
  doc: FlexDocument = new FlexDocument();
  root: string = "";
  /** Local names of the open elements. */
  path: string[] = [];
  /** The element whose text is being collected in a service answer. */
  field: string = "";

  constructor() {
    super();
  }

  problem(severity: Severity, code: string, message: string, location: string): void {
    this.doc.problems.push(new IngestProblem(severity, code, message, location));
  }

  parent(): string {
    return this.path.length >= 2 ? this.path[this.path.length - 2] : "";
  }

  start(el: XmlStart, depth: i32): bool {
    this.path.push(el.local);
    if (depth == 1) {
      this.root = el.local;
      if (el.local == "FlexStatementResponse") this.doc.answer = new ServiceAnswer();
      else if (el.local != "FlexQueryResponse") {
        this.doc.unreadable = "the document is a <" + el.local + ">, neither a Flex statement (FlexQueryResponse) nor the Flex Web Service's answer";
        return false;
      }
      return true;
    }
    if (this.doc.answer !== null) {
      this.field = depth == 2 ? el.local : "";
      return true;
    }
    const parent = this.parent();
    if (el.local == "FlexStatement" && parent == "FlexStatements") {
      this.doc.statements++;
      const account = el.attribute("accountId");
      if (account !== null && account.length > 0 && !this.doc.accounts.includes(account)) this.doc.accounts.push(account);
    } else if (el.local == "Trade" && parent == "Trades") this.trade(new Row(el, "trade"));
    else if (el.local == "CashTransaction" && parent == "CashTransactions") this.cash(new Row(el, "cash transaction"));
    else if (el.local == "OpenPosition" && parent == "OpenPositions") this.position(new Row(el, "open position"));
    return true;
  }

  end(_depth: i32): bool {
    this.path.pop();
    this.field = "";
    return true;
  }

  text(text: string, depth: i32): bool {
    const a = this.doc.answer;
    if (a === null || depth != 2) return true;
    const t = text.trim();
    if (this.field == "Status") a.status += t;
    else if (this.field == "ReferenceCode") a.referenceCode += t;
    else if (this.field == "Url") a.url += t;
    else if (this.field == "ErrorCode") a.errorCode += t;
    else if (this.field == "ErrorMessage") a.errorMessage += t;
    return true;
  }

  /** Checks a decimal attribute; an ERROR problem and null when it is not one. */
  decimal(row: Row, name: string, id: string, required: bool = true): string | null {
    const v = row.get(name);
    if (v.length == 0 && !required) return "";
    if (!isDecimal(v)) {
      this.problem(Severity.ERROR, "bad_decimal", row.kind + " " + name + " is not a decimal: " + quoted(v), row.where(id));
      return null;
    }
    return v;
  }

  date(row: Row, name: string, id: string): string | null {
    const v = row.get(name);
    const d = isoDate(v);
    if (d === null) this.problem(Severity.ERROR, "bad_date", row.kind + " " + name + " is not a date in yyyyMMdd or yyyy-MM-dd: " + quoted(v), row.where(id));
    return d;
  }

  currency(row: Row, name: string, id: string): string | null {
    const v = row.get(name);
    if (!isCurrency(v)) {
      this.problem(Severity.ERROR, "bad_currency", row.kind + " " + name + " is not an ISO 4217 code: " + quoted(v), row.where(id));
      return null;
    }
    return v;
  }

  /** An ISIN when IBKR gives one, else the symbol. */
  commodity(row: Row): string {
    const isin = row.get("isin");
    return isin.length > 0 ? isin : row.get("symbol");
  }

  /** A row of a summary level (an order's total, a lot) repeats what the detail rows say. */
  isDetail(row: Row, detail: string): bool {
    const level = row.get("levelOfDetail");
    return level.length == 0 || level == detail;
  }

  trade(row: Row): void {
    if (!this.isDetail(row, "EXECUTION")) return;
    let id = row.get("tradeID");
    if (id.length == 0) id = row.get("transactionID");
    if (id.length == 0) {
      this.problem(Severity.ERROR, "missing_id", "a trade without tradeID or transactionID", row.where(""));
      return;
    }
    const date = this.date(row, "tradeDate", id);
    const currency = this.currency(row, "currency", id);
    const quantity = this.decimal(row, "quantity", id);
    const price = this.decimal(row, "tradePrice", id);
    const money = this.decimal(row, "tradeMoney", id);
    const proceeds = this.decimal(row, "proceeds", id);
    const commission = this.decimal(row, "ibCommission", id, false);
    const commissionCurrencyText = row.get("ibCommissionCurrency");
    const commodity = this.commodity(row);
    if (commodity.length == 0) this.problem(Severity.ERROR, "missing_symbol", "a trade without isin or symbol", row.where(id));
    let commissionCurrency: string | null = currency;
    if (commissionCurrencyText.length > 0) commissionCurrency = this.currency(row, "ibCommissionCurrency", id);
    if (date === null || currency === null || quantity === null || price === null || money === null || proceeds === null || commission === null || commissionCurrency === null || commodity.length == 0) return;
    if (negate(money) != proceeds && !(isZero(money) && isZero(proceeds))) {
      this.problem(Severity.ERROR, "unbalanced_trade", "the trade's proceeds " + proceeds + " are not the negated tradeMoney " + money, row.where(id));
      return;
    }
    const side = row.get("buySell");
    const t = new Transaction("trade:" + id, date, (side.length > 0 ? side + " " : "") + magnitude(quantity) + " " + row.get("symbol") + " @ " + price + " " + currency, "");
    t.postings.push(new Posting(Account.SECURITIES, money, currency, quantity, commodity, row.get("description")));
    t.postings.push(new Posting(Account.CASH, proceeds, currency));
    if (commission.length > 0 && !isZero(commission)) {
      t.postings.push(new Posting(Account.CASH, commission, commissionCurrency));
      t.postings.push(new Posting(Account.COMMISSIONS, negate(commission), commissionCurrency));
    }
    this.doc.transactions.push(t);
  }

  cash(row: Row): void {
    if (!this.isDetail(row, "DETAIL")) return;
    const id = row.get("transactionID");
    if (id.length == 0) {
      this.problem(Severity.ERROR, "missing_id", "a cash transaction without transactionID", row.where(""));
      return;
    }
    const when = row.get("dateTime").length > 0 ? "dateTime" : "settleDate";
    const date = this.date(row, when, id);
    const currency = this.currency(row, "currency", id);
    const amount = this.decimal(row, "amount", id);
    if (date === null || currency === null || amount === null) return;
    const type = row.get("type");
    let counter = counterAccount(type);
    if (counter === null) {
      this.problem(Severity.WARNING, "unknown_cash_type", "the cash transaction's type " + quoted(type) + " is not one the connector knows: posted to " + Account.OTHER, row.where(id));
      counter = Account.OTHER;
    }
    const t = new Transaction("cash:" + id, date, row.get("description"), "");
    t.postings.push(new Posting(Account.CASH, amount, currency, "", "", type));
    t.postings.push(new Posting(counter, negate(amount), currency, "", "", this.commodity(row)));
    this.doc.transactions.push(t);
  }

  position(row: Row): void {
    if (!this.isDetail(row, "SUMMARY")) return;
    const commodity = this.commodity(row);
    const id = commodity;
    if (commodity.length == 0) {
      this.problem(Severity.ERROR, "missing_symbol", "an open position without isin or symbol", row.where(""));
      return;
    }
    const date = this.date(row, "reportDate", id);
    const currency = this.currency(row, "currency", id);
    const quantity = this.decimal(row, "position", id);
    const mark = this.decimal(row, "markPrice", id, false);
    if (date === null || currency === null || quantity === null || mark === null) return;
    // IBKR reports the position at the close of reportDate: the balance at the start of the next day.
    this.doc.balanceAssertions.push(new BalanceAssertion(Account.SECURITIES, nextDay(date), quantity, commodity));
    if (mark.length > 0) this.doc.prices.push(new Price(commodity, date, mark, currency));
  }
}

/**
 * Reads a document from IBKR: a statement, or the service's answer. A document that is not
 * well-formed, or is neither, is `unreadable`; a statement with no FlexStatement is too.
 */
export function readFlex(bytes: Uint8Array): FlexDocument {
  const v = new FlexVisitor();
  const err = readXml(bytes, v);
  const doc = v.doc;
  if (doc.unreadable !== null) return doc;
  if (err !== null) {
    doc.unreadable = "line " + err.line.toString() + ": " + err.message;
    return doc;
  }
  if (doc.answer === null && doc.statements == 0) doc.unreadable = "the FlexQueryResponse holds no FlexStatements > FlexStatement";
  if (doc.accounts.length > 1) {
    doc.problems.push(new IngestProblem(Severity.WARNING, "several_accounts", "the statement covers " + doc.accounts.length.toString() + " IBKR accounts, posted to one set of accounts: give each account its own Flex query and instance", ""));
  }
  return doc;
}
