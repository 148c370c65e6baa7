/**
 * The committed ibkr-flex module under the test-only host (plain WebAssembly, WASI stubs, a
 * host_call answered by the test): the Secret read on every sync and never shown, the Flex Web
 * Service's two steps and its "try again shortly" answers, and how trades, cash transactions and
 * open positions from the fixtures (written from IBKR's documented format: fixtures/README.md)
 * become the contract's messages.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { SyncResponseSchema } from "@openfief/sdk";
import { describe, expect, it } from "vitest";
import { TestGuest, type HostCallAnswer, type HostCallRequest } from "../../sdk/wasm/testing/guest.js";

const here = import.meta.dirname;
const MODULE = readFileSync(join(here, "build/ibkr-flex.wasm"));
const MANIFEST = JSON.parse(readFileSync(join(here, "manifest.json"), "utf8")) as unknown;
const fixture = (name: string): string => readFileSync(join(here, "fixtures", name), "utf8");
const STATEMENT = fixture("statement.xml");
const SUCCESS = fixture("send-request-success.xml");
const SEND = "https://ndcdyn.interactivebrokers.com/AccountManagement/FlexWebService/SendRequest";
const GET = "https://ndcdyn.interactivebrokers.com/AccountManagement/FlexWebService/GetStatement";
const TOKEN = "118492047551038276634912";
const QUERY = "912345";
const INSTITUTION = { id: "ibkr", name: "Interactive Brokers" };

interface Fake {
  /** Bodies SendRequest answers, in turn (the last repeats). */
  send?: (string | { status: number; body: string })[];
  /** Bodies GetStatement answers, in turn (the last repeats). */
  get?: (string | { status: number; body: string })[];
  secret?: Record<string, string> | null;
  /** Waits the host refuses after this many. */
  waits?: number;
}

/** A host answering the Flex Web Service from the fake, `secret` from its map, `wait` at once. */
function host(f: Fake) {
  let sends = 0;
  let gets = 0;
  let waited = 0;
  const secret = f.secret === undefined ? { token: TOKEN, "query-id": QUERY } : f.secret;
  return (request: HostCallRequest): HostCallAnswer => {
    const p = request.params as Record<string, unknown>;
    if (request.method === "secret") {
      const v = p.role === "flex" && secret !== null ? secret[p.key as string] : undefined;
      return v === undefined ? { error: { code: "invalid_request", message: `no key ${String(p.key)}` } } : { result: { value: v } };
    }
    if (request.method === "wait") {
      waited++;
      return f.waits !== undefined && waited > f.waits ? { error: { code: "invalid_request", message: "the call has 400 ms left" } } : { result: {} };
    }
    const url = p.url as string;
    const list = url.startsWith(SEND) ? (f.send ?? [SUCCESS]) : url.startsWith(GET) ? (f.get ?? [STATEMENT]) : [{ status: 404, body: "" }];
    const n = url.startsWith(SEND) ? sends++ : gets++;
    const a = list[Math.min(n, list.length - 1)] as string | { status: number; body: string };
    const { status, body } = typeof a === "string" ? { status: 200, body: a } : a;
    // As the host does when asked for answerBase64.
    const answer = p.answerBase64 === true ? { bodyBase64: Buffer.from(body).toString("base64") } : { body };
    return { result: { status, headers: { "content-type": "text/xml" }, ...answer } };
  };
}

async function guest(f: Fake = {}): Promise<TestGuest> {
  return TestGuest.load(MODULE, { hostCall: host(f) });
}

const delivery = (result: unknown) => fromJson(SyncResponseSchema, result as JsonValue).delivery;

describe("the ibkr-flex module", () => {
  it("imports only fd_write and host_call, and answers manifest with exactly manifest.json", async () => {
    expect(TestGuest.imports(MODULE).map((i) => `${i.kind} ${i.module}.${i.name}`).sort()).toEqual(["function openfief.host_call", "function wasi_snapshot_preview1.fd_write"]);
    const g = await guest();
    expect(g.abiVersion()).toBe(1);
    expect(g.call("manifest", {})).toEqual({ result: MANIFEST });
    expect(g.hostCalls).toEqual([]);
  });
});

describe("sync", () => {
  it("reads the token and query id from the instance's Secret, sends the request, then fetches the statement by its reference code", async () => {
    const g = await guest();
    const r = g.call("sync", { batchId: "b-1", watermark: "" });
    expect(r.error).toBeUndefined();
    expect(g.hostCalls.map((c) => c.method)).toEqual(["secret", "secret", "http", "http"]);
    expect(g.hostCalls.slice(0, 2).map((c) => c.params)).toEqual([{ role: "flex", key: "token" }, { role: "flex", key: "query-id" }]);
    expect(g.hostCalls[2]?.params).toEqual({ method: "GET", url: `${SEND}?t=${TOKEN}&q=${QUERY}&v=3`, headers: { "user-agent": "OpenFief-ibkr-flex/1.0", accept: "application/xml, text/xml" }, answerBase64: true });
    expect((g.hostCalls[3]?.params as { url: string }).url).toBe(`${GET}?t=${TOKEN}&q=7382915066&v=3`);
    // Nothing the plugin wrote or answered holds the token.
    expect([...g.stdout, ...g.stderr].join("")).not.toContain(TOKEN);
  });

  it("maps trades, cash transactions and open positions with exact decimal strings, ISO dates and currencies", async () => {
    const r = (await guest()).call("sync", { batchId: "b-1" });
    expect(r.result).toEqual({
      delivery: {
        batchId: "b-1",
        institution: INSTITUTION,
        transactions: [
          {
            sourceId: "trade:482910375",
            date: "2026-12-01",
            description: "BUY 10 AAPL @ 231.45 USD",
            postings: [
              { accountId: "securities", amount: "2314.5", currency: "USD", quantity: "10", commodity: "US0378331005", memo: "APPLE INC" },
              { accountId: "cash", amount: "-2314.5", currency: "USD" },
              { accountId: "cash", amount: "-1.00", currency: "USD" },
              { accountId: "commissions", amount: "1.00", currency: "USD" },
            ],
          },
          {
            sourceId: "trade:482910412",
            date: "2026-12-01",
            description: "SELL 4 SAP @ 247.10 EUR",
            postings: [
              { accountId: "securities", amount: "-988.40", currency: "EUR", quantity: "-4", commodity: "DE0007164600", memo: "SAP SE" },
              { accountId: "cash", amount: "988.40", currency: "EUR" },
              { accountId: "cash", amount: "-3.00", currency: "EUR" },
              { accountId: "commissions", amount: "3.00", currency: "EUR" },
            ],
          },
          {
            sourceId: "cash:3141592653",
            date: "2026-11-30",
            description: "MSFT(US5949181045) CASH DIVIDEND USD 0.83 PER SHARE (Ordinary Dividend)",
            postings: [
              { accountId: "cash", amount: "16.60", currency: "USD", memo: "Dividends" },
              { accountId: "dividends", amount: "-16.60", currency: "USD", memo: "US5949181045" },
            ],
          },
          {
            sourceId: "cash:3141592654",
            date: "2026-11-30",
            description: "MSFT(US5949181045) CASH DIVIDEND USD 0.83 PER SHARE - US TAX",
            postings: [
              { accountId: "cash", amount: "-2.49", currency: "USD", memo: "Withholding Tax" },
              { accountId: "withholding-tax", amount: "2.49", currency: "USD", memo: "US5949181045" },
            ],
          },
          {
            sourceId: "cash:3141592700",
            date: "2026-12-01",
            description: "CASH RECEIPTS / ELECTRONIC FUND TRANSFERS",
            postings: [
              { accountId: "cash", amount: "5000", currency: "EUR", memo: "Deposits/Withdrawals" },
              { accountId: "transfers", amount: "-5000", currency: "EUR" },
            ],
          },
        ],
        balanceAssertions: [
          { accountId: "securities", date: "2026-12-02", amount: "25", currency: "US0378331005" },
          { accountId: "securities", date: "2026-12-02", amount: "6", currency: "DE0007164600" },
        ],
        prices: [
          { commodity: "US0378331005", date: "2026-12-01", price: "232.87", currency: "USD" },
          { commodity: "DE0007164600", date: "2026-12-01", price: "246.95", currency: "EUR" },
        ],
      },
    });
    // The protobuf runtime reads it back; every transaction balances per currency.
    const d = delivery(r.result);
    for (const t of d?.transactions ?? []) {
      const sums = new Map<string, number>();
      for (const p of t.postings) sums.set(p.currency, (sums.get(p.currency) ?? 0) + Math.round(Number(p.amount) * 100));
      expect([...sums.values()].every((v) => v === 0)).toBe(true);
    }
  });

  it.each([["", ""], ["a watermark", "2026-11-30"]])("returns the watermark it was given (%s), so importing again changes nothing", async (_n, watermark) => {
    const first = (await guest()).call("sync", { batchId: "b-1", watermark });
    const again = (await guest()).call("sync", { batchId: "b-1", watermark });
    expect(delivery(first.result)?.watermark).toBe(watermark);
    expect(again).toEqual(first);
  });

  it("retries \"statement generation in progress\" within the call, then maps the statement", async () => {
    const busy = fixture("get-statement-in-progress.xml");
    const g = await guest({ get: [busy, busy, STATEMENT] });
    const r = g.call("sync", { batchId: "b-2" });
    expect(delivery(r.result)?.transactions).toHaveLength(5);
    expect(g.hostCalls.map((c) => c.method)).toEqual(["secret", "secret", "http", "http", "wait", "http", "wait", "http"]);
    expect(g.hostCalls.filter((c) => c.method === "wait").map((c) => c.params)).toEqual([{ ms: 500 }, { ms: 1000 }]);
  });

  it("retries \"too many requests\" on SendRequest too", async () => {
    const g = await guest({ send: [fixture("send-request-too-many.xml"), SUCCESS] });
    expect(delivery(g.call("sync", { batchId: "b-3" }).result)?.transactions).toHaveLength(5);
  });

  it("answers http_failed (Unavailable) once the call has no time left to try again", async () => {
    const g = await guest({ get: [fixture("get-statement-in-progress.xml")], waits: 2 });
    const r = g.call("sync", { batchId: "b-4" });
    expect(r.error?.code).toBe("http_failed");
    expect(r.error?.message).toMatch(/^GetStatement: 1019 Statement generation in progress\. Please try again shortly\.; and no time is left to try again/);
  });

  it("answers http_failed (Unavailable) when IBKR fails: an HTTP error, or an answer that is not the service's", async () => {
    const g = await guest({ send: [{ status: 503, body: "busy" }] });
    expect(g.call("sync", { batchId: "b" }).error).toEqual({ code: "http_failed", message: "SendRequest: IBKR answered HTTP 503" });
    const h = await guest({ send: ["<html><body>maintenance</body></html>"] });
    expect(h.call("sync", { batchId: "b" }).error?.code).toBe("http_failed");
    const k = await guest({ get: [{ status: 500, body: "" }] });
    expect(k.call("sync", { batchId: "b" }).error).toEqual({ code: "http_failed", message: "GetStatement: IBKR answered HTTP 500" });
  });

  it("answers invalid_request for what the owner must fix: an invalid token, a Secret without a query id", async () => {
    const g = await guest({ send: [fixture("send-request-token-invalid.xml")] });
    expect(g.call("sync", { batchId: "b" }).error).toEqual({ code: "invalid_request", message: "SendRequest: the Flex Web Service refused it: 1015 Token is invalid. (check the token and query id in the instance's Secret)" });
    const h = await guest({ secret: { token: TOKEN } });
    expect(h.call("sync", { batchId: "b" }).error).toEqual({ code: "invalid_request", message: "no key query-id" });
    expect(h.hostCalls.some((c) => c.method === "http")).toBe(false);
    const k = await guest({ secret: { token: "abc&x=1", "query-id": QUERY } });
    const r = k.call("sync", { batchId: "b" });
    expect(r.error).toEqual({ code: "invalid_request", message: "the instance's Secret (role flex) holds a token that is not 1–64 letters and digits" });
  });

  it("answers invalid_request for a statement it cannot read, and never shows its content", async () => {
    for (const body of ["<FlexQueryResponse><FlexStatements>", "<!DOCTYPE x [<!ENTITY a \"aaaa\">]><FlexQueryResponse/>", "<Report/>", "<FlexQueryResponse></FlexQueryResponse>"]) {
      const r = (await guest({ get: [body] })).call("sync", { batchId: "b" });
      expect(r.error?.code).toBe("invalid_request");
      expect(r.error?.message).toMatch(/^the statement cannot be read: /);
    }
  });

  it("refuses a statement over the cap before parsing it", async () => {
    const row = STATEMENT.slice(STATEMENT.indexOf("<Trade "), STATEMENT.indexOf("/>", STATEMENT.indexOf("<Trade ")) + 3);
    const huge = STATEMENT.replace("<Trades>", `<Trades>${row.repeat(Math.ceil((3 << 20) / row.length))}`);
    expect(huge.length).toBeGreaterThan(3 << 20);
    const started = performance.now();
    const r = (await guest({ get: [huge] })).call("sync", { batchId: "b" });
    expect(r.error?.code).toBe("invalid_request");
    expect(r.error?.message).toBe("the statement is larger than the cap of 3145728 bytes: narrow the Flex query's period or sections");
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("maps a row it cannot read as an ERROR problem and delivers no row at all", async () => {
    const bad = STATEMENT.replace('tradePrice="231.45"', 'tradePrice="2.3145E2"').replace('dateTime="20261201"', 'dateTime="12/01/2026"');
    const d = delivery((await guest({ get: [bad] })).call("sync", { batchId: "b" }).result);
    expect(d?.transactions).toEqual([]);
    expect(d?.balanceAssertions).toEqual([]);
    expect(d?.problems.map((p) => [p.code, p.message, p.location])).toEqual([
      ["bad_decimal", 'trade tradePrice is not a decimal: "2.3145E2"', "line 5 (trade 482910375)"],
      ["bad_date", 'cash transaction dateTime is not a date in yyyyMMdd or yyyy-MM-dd: "12/01/2026"', "line 12 (cash transaction 3141592700)"],
    ]);
  });

  it("warns about a cash transaction type it does not know, and posts it to other", async () => {
    const odd = STATEMENT.replace('type="Deposits/Withdrawals"', 'type="Lottery Winnings"');
    const d = delivery((await guest({ get: [odd] })).call("sync", { batchId: "b" }).result);
    expect(d?.problems.map((p) => p.code)).toEqual(["unknown_cash_type"]);
    expect(d?.transactions.find((t) => t.sourceId === "cash:3141592700")?.postings[1]?.accountId).toBe("other");
  });
});

describe("import_file", () => {
  const params = (xml: string) => ({ header: { batchId: "i-1", fileName: "flex.xml" }, contentBase64: Buffer.from(xml).toString("base64") });

  it("maps a saved statement as sync maps one, without a watermark and without calling IBKR", async () => {
    const g = await guest();
    const r = g.call("import_file", params(STATEMENT));
    const d = delivery(r.result);
    expect(d?.transactions.map((t) => t.sourceId)).toEqual(["trade:482910375", "trade:482910412", "cash:3141592653", "cash:3141592654", "cash:3141592700"]);
    expect(d?.watermark).toBe("");
    expect(g.hostCalls).toEqual([]);
  });

  it("reads references in time linear in their number: 300,000 in one attribute value, text between them", async () => {
    // Text between the references: each run was a string of its own in an array of parts, which
    // the incremental collector rescanned as it grew: over 5 minutes; now one buffer, decoded once
    // (about a second quiet; the bound leaves room for a loaded machine).
    const heavy = STATEMENT.replace('description="APPLE INC"', `description="APPLE${"x&amp;".repeat(300_000)}"`);
    expect(heavy.length).toBeLessThan(3 << 20);
    const g = await guest();
    const started = performance.now();
    const r = g.call("import_file", params(heavy));
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(delivery(r.result)?.transactions.map((t) => t.sourceId)).toContain("trade:482910375");
  }, 60_000);

  it("refuses the service's error answer saved as a file", async () => {
    const r = (await guest()).call("import_file", params(fixture("send-request-token-invalid.xml")));
    expect(r.error).toEqual({ code: "invalid_request", message: "the file is not a statement but the Flex Web Service's answer: 1015 Token is invalid." });
  });
});
