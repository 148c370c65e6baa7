import { readFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, SyncRequestSchema, type HandlerContext } from "@openfief/sdk";
import { describe, expect, it } from "vitest";
import { createNbpConnector, type Fetch } from "./connector.js";

const TABLES = readFileSync(join(import.meta.dirname, "../fixtures/tables-A-2024-01-02-2024-01-04.json"), "utf8");
const NOT_FOUND = readFileSync(join(import.meta.dirname, "../fixtures/not-found.txt"), "utf8");
const ctx = {} as HandlerContext;

function nbp(answers: Record<string, { status: number; body: string }>) {
  const asked: string[] = [];
  const fetch: Fetch = (url) => {
    asked.push(url.replace("https://api.nbp.pl/api/exchangerates/tables/A/", "").replace("/?format=json", ""));
    const a = answers[asked.at(-1) ?? ""] ?? { status: 404, body: NOT_FOUND };
    return Promise.resolve({ status: a.status, text: () => Promise.resolve(a.body) });
  };
  return { asked, fetch };
}

const sync = (fetch: Fetch, watermark: string, today: string, startDate?: string) =>
  createNbpConnector({ fetch, now: () => new Date(`${today}T23:59:59Z`), ...(startDate !== undefined ? { startDate } : {}) }).sync(create(SyncRequestSchema, { batchId: "b", watermark }), ctx);

describe("the NBP connector", () => {
  it("asks for the days after the watermark up to today and advances to the latest table", async () => {
    const { asked, fetch } = nbp({ "2024-01-02/2024-01-05": { status: 200, body: TABLES } });
    const d = await sync(fetch, "2024-01-01", "2024-01-05");
    expect(asked).toEqual(["2024-01-02/2024-01-05"]);
    expect(d.watermark).toBe("2024-01-04");
    expect(d.fxRates).toHaveLength(24);
  });

  it("splits a long gap into ranges of at most 93 days", async () => {
    const { asked, fetch } = nbp({});
    const d = await sync(fetch, "2023-09-01", "2024-01-05");
    expect(asked).toEqual(["2023-09-02/2023-12-03", "2023-12-04/2024-01-05"]);
    expect(d.watermark).toBe("2023-09-01");
  });

  it("asks nothing when the watermark is today or later", async () => {
    const { asked, fetch } = nbp({});
    const d = await sync(fetch, "2024-01-05", "2024-01-05");
    expect(asked).toEqual([]);
    expect(d.watermark).toBe("2024-01-05");
  });

  it("starts from the configured start date, else from today, when there is no watermark", async () => {
    const first = nbp({});
    await sync(first.fetch, "", "2024-01-05", "2024-01-03");
    expect(first.asked).toEqual(["2024-01-03/2024-01-05"]);
    const second = nbp({});
    const d = await sync(second.fetch, "", "2024-01-05");
    expect(second.asked).toEqual(["2024-01-05/2024-01-05"]);
    expect(d.watermark).toBe("");
  });

  it.each([
    ["a watermark that is not a date", "2024-13-01", {}, Code.InvalidArgument],
    ["a watermark with a time", "2024-01-01T00:00:00Z", {}, Code.InvalidArgument],
    ["NBP failing with 500", "2024-01-01", { "2024-01-02/2024-01-05": { status: 500, body: "" } }, Code.Unavailable],
    ["NBP rate-limiting with 429", "2024-01-01", { "2024-01-02/2024-01-05": { status: 429, body: "" } }, Code.Unavailable],
    ["a rate NBP wrote as a string", "2024-01-01", { "2024-01-02/2024-01-05": { status: 200, body: TABLES.replace("3.9432", '"3.9432"') } }, Code.InvalidArgument],
    ["a negative rate", "2024-01-01", { "2024-01-02/2024-01-05": { status: 200, body: TABLES.replace("3.9432", "-3.9432") } }, Code.InvalidArgument],
    ["a currency code that is not ISO 4217", "2024-01-01", { "2024-01-02/2024-01-05": { status: 200, body: TABLES.replace('"USD"', '"usd"') } }, Code.InvalidArgument],
  ])("answers %s with the right code", async (_name, watermark, answers, code) => {
    const { fetch } = nbp(answers);
    const error = await sync(fetch, watermark, "2024-01-05").then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(code);
  });

  it("answers Unavailable when NBP cannot be reached", async () => {
    const error = await sync(() => Promise.reject(new Error("ECONNRESET")), "2024-01-01", "2024-01-05").then(() => undefined, (e: unknown) => e);
    expect((error as ConnectError).code).toBe(Code.Unavailable);
  });
});
