// The connector contract's ledger messages (proto/openfief/connector/v1/connector.proto):
// Transaction, Posting, BalanceAssertion, and a Delivery that carries them, written as
// protobuf-JSON by Delivery.writeTo (connector.ts), the one writer of a delivery.
import { ByteWriter } from "./bytes";
import { Delivery, ObjectWriter, deliveryResponseSized, list } from "./connector";
import { JSONValue } from "./json";

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
 * connector). Delivery.writeTo writes it, these fields in the proto's place.
 */
export class LedgerDelivery extends Delivery {
  transactions: Transaction[] = [];
  balanceAssertions: BalanceAssertion[] = [];

  protected writeLedgerFields(o: ObjectWriter): void {
    list<Transaction>(o, "transactions", this.transactions);
    list<BalanceAssertion>(o, "balanceAssertions", this.balanceAssertions);
  }
}

/** SyncResponse and ImportFileResponse of a LedgerDelivery: deliveryResponse, with room for its transactions. */
export function ledgerDeliveryResponse(delivery: LedgerDelivery): JSONValue {
  return deliveryResponseSized(delivery, 4096);
}
