// The connector contract's ledger messages (proto/openfief/connector/v1/connector.proto):
// Transaction, Posting, BalanceAssertion, and a Delivery that carries them, written as
// protobuf-JSON as connector.ts writes the rest. A file of its own, so a module that delivers only
// rates is built byte for byte as before.
import { ByteWriter } from "./bytes";
import { Delivery, FxRate, IndexReading, IngestProblem, ObjectWriter, Price, list } from "./connector";
import { JSONRaw, JSONValue } from "./json";

/** Posting: an amount into or out of one account; for a security, its quantity and commodity. */
export class Posting {
  constructor(
    public accountId: string,
    public amount: string,
    public currency: string,
    public quantity: string = "",
    public commodity: string = "",
    public memo: string = "",
  ) {}

  writeTo(w: ByteWriter): void {
    new ObjectWriter(w)
      .str("accountId", this.accountId)
      .str("amount", this.amount)
      .str("currency", this.currency)
      .str("quantity", this.quantity)
      .str("commodity", this.commodity)
      .str("memo", this.memo)
      .end();
  }
}

/** Transaction: one event at the institution, balanced by its postings. */
export class Transaction {
  postings: Posting[] = [];

  constructor(public sourceId: string, public date: string, public description: string = "", public payee: string = "") {}

  writeTo(w: ByteWriter): void {
    const o = new ObjectWriter(w).str("sourceId", this.sourceId).str("date", this.date).str("description", this.description).str("payee", this.payee);
    list<Posting>(o, "postings", this.postings);
    o.end();
  }
}

/** BalanceAssertion: an account's balance (or a position's quantity) at the start of a date. */
export class BalanceAssertion {
  constructor(public accountId: string, public date: string, public amount: string, public currency: string) {}

  writeTo(w: ByteWriter): void {
    new ObjectWriter(w).str("accountId", this.accountId).str("date", this.date).str("amount", this.amount).str("currency", this.currency).end();
  }
}

/**
 * A Delivery that also carries transactions and balance assertions (a bank's or a broker's
 * connector). A class of its own, so a module that delivers only rates is built as before.
 */
export class LedgerDelivery extends Delivery {
  transactions: Transaction[] = [];
  balanceAssertions: BalanceAssertion[] = [];

  /** Writes the Delivery as protobuf-JSON: fields in the proto's order, defaults omitted. */
  writeLedgerTo(w: ByteWriter): void {
    const o = new ObjectWriter(w);
    o.str("batchId", this.batchId);
    const inst = this.institution;
    if (inst !== null) inst.writeTo(o.key("institution"));
    list<Transaction>(o, "transactions", this.transactions);
    list<BalanceAssertion>(o, "balanceAssertions", this.balanceAssertions);
    list<IngestProblem>(o, "problems", this.problems);
    list<Price>(o, "prices", this.prices);
    list<FxRate>(o, "fxRates", this.fxRates);
    list<IndexReading>(o, "indexReadings", this.indexReadings);
    o.str("watermark", this.watermark);
    o.end();
  }
}

/** SyncResponse and ImportFileResponse of a LedgerDelivery. */
export function ledgerDeliveryResponse(delivery: LedgerDelivery): JSONValue {
  const w = new ByteWriter(4096);
  w.text('{"delivery":');
  delivery.writeLedgerTo(w);
  w.byte(0x7d);
  return new JSONRaw(w.toBytes());
}

