/**
 * The committed ecb-fx module, run under the test-only host (plain WebAssembly, WASI stubs, a
 * host_call answered from the fixtures): its imports and exports, its manifest, and how sync and
 * import_file map the ECB's documents, including every way the ECB or the host can fail.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { create, fromJson, toJson, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ImportFileResponseSchema, IngestProblemSeverity, SyncResponseSchema, type FxRateSchema } from "@openfief/sdk";
import { describe, expect, it } from "vitest";
import { TestGuest, type HostCallAnswer, type HostCallRequest } from "../../sdk/wasm/testing/guest.js";

const MODULE = readFileSync(join(import.meta.dirname, "build/ecb-fx.wasm"));
const MANIFEST = JSON.parse(readFileSync(join(import.meta.dirname, "manifest.json"), "utf8")) as unknown;
const DAILY = readFileSync(join(import.meta.dirname, "fixtures/eurofxref-daily.xml"), "utf8");
const HIST = readFileSync(join(import.meta.dirname, "fixtures/eurofxref-hist-90d.xml"), "utf8");
const DAILY_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml";
const HIST_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist-90d.xml";
const SOURCE = "ECB euro foreign exchange reference rates";
const INSTITUTION = { id: "ecb", name: "European Central Bank" };

type Answer = HostCallAnswer | { readonly status: number; readonly body?: string | Buffer; readonly headers?: Record<string, string> };

/** A host whose HTTP answers come from a table by URL; every URL not in it is a 404. */
function ecb(answers: Record<string, Answer>) {
  return (request: HostCallRequest): HostCallAnswer => {
    const params = request.params as { url: string };
    const a = answers[params.url] ?? { status: 404, body: "not found" };
    if (!("status" in a)) return a;
    // As the host does: a body that is not UTF-8 travels as bodyBase64.
    const body = a.body === undefined ? {} : typeof a.body === "string" ? { body: a.body } : { bodyBase64: a.body.toString("base64") };
    return { result: { status: a.status, headers: { "content-type": "application/xml", ...a.headers }, ...body } };
  };
}

async function guest(answers: Record<string, Answer> = {}): Promise<TestGuest> {
  return TestGuest.load(MODULE, { hostCall: ecb(answers) });
}

/** The rates of a document as the test reads them itself, newest day first as published. */
function published(xml: string): { date: string; currency: string; rate: string }[] {
  const out: { date: string; currency: string; rate: string }[] = [];
  let date = "";
  for (const m of xml.matchAll(/<Cube (?:time=['"]([^'"]+)['"]|currency=['"]([A-Z]{3})['"] rate=['"]([^'"]+)['"])/g)) {
    if (m[1] !== undefined) date = m[1];
    else out.push({ date, currency: m[2] as string, rate: m[3] as string });
  }
  return out;
}

type FxRateInit = MessageInitShape<typeof FxRateSchema>;
const asRates = (rows: { date: string; currency: string; rate: string }[]): FxRateInit[] =>
  rows.map((r) => ({ date: r.date, baseCurrency: "EUR", quoteCurrency: r.currency, rate: r.rate, source: SOURCE }));
const oldestFirst = (rows: { date: string; currency: string; rate: string }[]) => [...rows].sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));

function syncResponse(delivery: MessageInitShape<typeof SyncResponseSchema>["delivery"]): JsonValue {
  return toJson(SyncResponseSchema, create(SyncResponseSchema, { delivery }));
}

describe("the ecb-fx module", () => {
  it("imports only wasi_snapshot_preview1.fd_write and openfief.host_call, both functions", () => {
    expect(TestGuest.imports(MODULE)).toEqual([
      { module: "wasi_snapshot_preview1", name: "fd_write", kind: "function" },
      { module: "openfief", name: "host_call", kind: "function" },
    ]);
  });

  it("exports the ABI: memory, _initialize, openfief_abi_version, openfief_alloc, openfief_call, and nothing else", () => {
    expect(TestGuest.exports(MODULE).map((e) => `${e.kind} ${e.name}`).sort()).toEqual(
      ["function _initialize", "function openfief_abi_version", "function openfief_alloc", "function openfief_call", "memory memory"].sort(),
    );
  });

  it("speaks ABI version 1", async () => {
    expect((await guest()).abiVersion()).toBe(1);
  });

  it("answers manifest with exactly plugins/ecb-fx/manifest.json", async () => {
    const g = await guest();
    expect(g.call("manifest", {})).toEqual({ result: MANIFEST });
    expect(g.callRaw(Buffer.from('{"method":"manifest","params":{}}'))).toBe(`{"result":${JSON.stringify(MANIFEST)}}`);
    expect(g.hostCalls).toEqual([]);
  });

  it("refuses a manifest call with params other than {}", async () => {
    expect((await guest()).call("manifest", { x: 1 }).error?.code).toBe("invalid_request");
  });

  it("answers a method it does not have with unknown_method", async () => {
    expect((await guest()).call("route_predicate", {}).error?.code).toBe("unknown_method");
  });
});

describe("sync", () => {
  it("maps every rate of the daily file, decimal strings as published, and advances the watermark to its date", async () => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY } });
    const response = g.call("sync", { batchId: "b-1" });
    const rates = published(DAILY);
    expect(rates).toHaveLength(30);
    expect(response).toEqual({
      result: syncResponse({ batchId: "b-1", institution: INSTITUTION, fxRates: asRates(rates), watermark: "2024-06-28" }),
    });
    // The protobuf runtime reads it back, and the trailing zeros survive.
    const parsed = fromJson(SyncResponseSchema, response.result as JsonValue);
    const byCurrency = new Map(parsed.delivery?.fxRates.map((r) => [r.quoteCurrency, r.rate]));
    expect([byCurrency.get("HUF"), byCurrency.get("ILS"), byCurrency.get("PHP"), byCurrency.get("IDR"), byCurrency.get("GBP")]).toEqual(["395.10", "4.0200", "62.560", "17487.21", "0.84638"]);
    expect(g.hostCalls).toEqual([{ method: "http", params: { method: "GET", url: DAILY_URL, headers: { accept: "application/xml, text/xml" } } }]);
  });

  it.each([
    ["the daily file's date", "2024-06-28"],
    ["a later date", "2024-07-15"],
  ])("delivers nothing and keeps the watermark when it is %s", async (_name, watermark) => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY } });
    expect(g.call("sync", { batchId: "b-2", watermark })).toEqual({ result: syncResponse({ batchId: "b-2", institution: INSTITUTION, watermark }) });
    expect(g.hostCalls).toHaveLength(1);
  });

  it("fetches only the daily file when the watermark is the weekday before its date", async () => {
    const monday = DAILY.replace("time='2024-06-28'", "time='2024-07-01'");
    const g = await guest({ [DAILY_URL]: { status: 200, body: monday } });
    const response = g.call("sync", { batchId: "b", watermark: "2024-06-28" });
    expect(g.hostCalls.map((c) => (c.params as { url: string }).url)).toEqual([DAILY_URL]);
    expect(response).toEqual({ result: syncResponse({ batchId: "b", institution: INSTITUTION, fxRates: asRates(published(monday)), watermark: "2024-07-01" }) });
  });

  it("fills a gap from the 90-day file, oldest day first, the daily file's own day from the daily file", async () => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY }, [HIST_URL]: { status: 200, body: HIST } });
    const response = g.call("sync", { batchId: "b", watermark: "2024-06-21" });
    expect(g.hostCalls.map((c) => (c.params as { url: string }).url)).toEqual([DAILY_URL, HIST_URL]);
    const gap = oldestFirst(published(HIST).filter((r) => r.date > "2024-06-21" && r.date < "2024-06-28"));
    expect(gap.map((r) => r.date).filter((d, i, a) => a.indexOf(d) === i)).toEqual(["2024-06-24", "2024-06-25", "2024-06-26", "2024-06-27"]);
    expect(response).toEqual({
      result: syncResponse({ batchId: "b", institution: INSTITUTION, fxRates: asRates([...gap, ...published(DAILY)]), watermark: "2024-06-28" }),
    });
  });

  it("warns of days older than the 90-day file instead of claiming them", async () => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY }, [HIST_URL]: { status: 200, body: HIST } });
    const result = g.call("sync", { batchId: "b", watermark: "2024-03-01" }).result as { delivery: { problems: unknown[]; fxRates: { date: string }[]; watermark: string } };
    expect(result.delivery.problems).toEqual([
      {
        severity: "INGEST_PROBLEM_SEVERITY_WARNING",
        code: "ecb_gap",
        message: "the 90-day file starts on 2024-06-20: days the ECB published after 2024-03-01 and before it are not delivered; import them from eurofxref-hist.xml",
        location: "eurofxref-hist-90d.xml",
      },
    ]);
    expect(result.delivery.fxRates[0]?.date).toBe("2024-06-20");
    expect(result.delivery.fxRates).toHaveLength(6 * 6 + 30);
    expect(result.delivery.watermark).toBe("2024-06-28");
  });

  it.each([
    ["the host's http_failed", { error: { code: "http_failed", message: "connection refused" } }, "http_failed"],
    ["the host's origin_not_approved", { error: { code: "origin_not_approved", message: "https://www.ecb.europa.eu is pending approval" } }, "origin_not_approved"],
    ["the host's invalid_request (a bug, not the network)", { error: { code: "invalid_request", message: "no url" } }, "internal"],
    ["an unknown host code", { error: { code: "plugin_timed_out", message: "x" } }, "http_failed"],
    ["HTTP 503", { status: 503, body: "Service Unavailable" }, "http_failed"],
    ["HTTP 404", { status: 404, body: "not found" }, "http_failed"],
    ["HTTP 429", { status: 429, body: "" }, "http_failed"],
    ["a redirect, which it does not follow", { status: 302, headers: { location: "https://www.ecb.europa.eu/elsewhere.xml" } }, "http_failed"],
  ] as const)("answers %s on the daily file with %s", async (_name, answer, code) => {
    const g = await guest({ [DAILY_URL]: answer });
    const response = g.call("sync", { batchId: "b", watermark: "2024-06-01" });
    expect(response.error?.code).toBe(code);
    expect(response.error?.message).toMatch(/eurofxref-daily\.xml/);
    expect(g.hostCalls).toHaveLength(1);
  });

  it("says an answer was a redirect, and never asks for its location", async () => {
    const g = await guest({ [DAILY_URL]: { status: 301, headers: { location: "https://www.ecb.europa.eu/moved.xml" } } });
    expect(g.call("sync", {}).error).toEqual({ code: "http_failed", message: "the ECB answered HTTP 301 for eurofxref-daily.xml (a redirect, which the connector does not follow)" });
    expect(g.hostCalls.map((c) => (c.params as { url: string }).url)).toEqual([DAILY_URL]);
  });

  it("fails the whole sync, not just the gap, when the 90-day file cannot be fetched", async () => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY }, [HIST_URL]: { status: 500, body: "" } });
    expect(g.call("sync", { batchId: "b", watermark: "2024-06-01" }).error?.code).toBe("http_failed");
  });

  const malformed: [string, string | Buffer, string][] = [
    ["a document cut off", DAILY.slice(0, DAILY.length / 2), "ecb_xml_malformed"],
    ["a DOCTYPE with an entity", DAILY.replace("<gesmes:Envelope", '<!DOCTYPE x [<!ENTITY e "1.0705">]>\n<gesmes:Envelope').replace("rate='1.0705'", "rate='&e;'"), "ecb_xml_malformed"],
    ["an undefined entity", DAILY.replace("rate='1.0705'", "rate='&e;'"), "ecb_xml_malformed"],
    ["mismatched tags", DAILY.replace("\t</Cube>\n</gesmes:Envelope>", "\t</Cub>\n</gesmes:Envelope>"), "ecb_xml_malformed"],
    ["a duplicate attribute", DAILY.replace("currency='USD'", "currency='USD' currency='USD'"), "ecb_xml_malformed"],
    ["invalid UTF-8", Buffer.concat([Buffer.from(DAILY.slice(0, 200)), Buffer.from([0xc0, 0xaf]), Buffer.from(DAILY.slice(200))]), "ecb_xml_malformed"],
    ["an encoding other than UTF-8", DAILY.replace('encoding="UTF-8"', 'encoding="ISO-8859-1"'), "ecb_xml_malformed"],
    ["text after the root element", `${DAILY}\ntrailing`, "ecb_xml_malformed"],
    ["an HTML error page", "<html><body>Service temporarily unavailable</body></html>", "ecb_document_unrecognized"],
    ["the rates in another namespace", DAILY.replace('xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref"', 'xmlns="urn:other"'), "ecb_no_rates"],
    ["no rates at all", DAILY.replace(/\t<Cube>[\s\S]*\t<\/Cube>\n/, ""), "ecb_no_rates"],
    ["a negative rate", DAILY.replace("rate='1.0705'", "rate='-1.0705'"), "ecb_rate_invalid"],
    ["a rate with an exponent", DAILY.replace("rate='1.0705'", "rate='1.0705e0'"), "ecb_rate_invalid"],
    ["a rate of zero", DAILY.replace("rate='1.0705'", "rate='0.0000'"), "ecb_rate_invalid"],
    ["a rate with a comma", DAILY.replace("rate='1.0705'", "rate='1,0705'"), "ecb_rate_invalid"],
    ["a lower-case currency", DAILY.replace("currency='USD'", "currency='usd'"), "ecb_currency_invalid"],
    ["a currency twice in a day", DAILY.replace("currency='JPY'", "currency='USD'"), "ecb_currency_duplicate"],
    ["a date that does not exist", DAILY.replace("time='2024-06-28'", "time='2024-02-30'"), "ecb_date_invalid"],
    ["an unexpected attribute", DAILY.replace("currency='USD'", "currency='USD' unit='100'"), "ecb_document_unrecognized"],
    ["a Cube nested in a rate", DAILY.replace("<Cube currency='USD' rate='1.0705'/>", "<Cube currency='USD' rate='1.0705'><Cube/></Cube>"), "ecb_document_unrecognized"],
  ];

  it.each(malformed)("delivers no rate and keeps the watermark for %s, reporting %s", async (_name, body, code) => {
    const g = await guest({ [DAILY_URL]: { status: 200, body } });
    const response = g.call("sync", { batchId: "b", watermark: "2024-06-01" });
    const parsed = fromJson(SyncResponseSchema, response.result as JsonValue);
    expect(parsed.delivery?.fxRates).toEqual([]);
    expect(parsed.delivery?.watermark).toBe("2024-06-01");
    expect(parsed.delivery?.batchId).toBe("b");
    expect(parsed.delivery?.problems[0]).toMatchObject({ severity: IngestProblemSeverity.ERROR, code });
    expect(parsed.delivery?.problems[0]?.location).toMatch(/^eurofxref-daily\.xml line \d+$/);
  });

  it("says where a malformed document breaks", async () => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY.replace("rate='0.84638'", "rate='-0.84638'") } });
    const problems = (g.call("sync", {}).result as { delivery: { problems: unknown[] } }).delivery.problems;
    expect(problems).toEqual([
      { severity: "INGEST_PROBLEM_SEVERITY_ERROR", code: "ecb_rate_invalid", message: "the GBP rate is not a positive decimal", location: "eurofxref-daily.xml line 14" },
    ]);
  });

  it("lists every bad rate of a document at once", async () => {
    const body = DAILY.replace("rate='1.0705'", "rate='x'").replace("rate='171.94'", "rate='-1'").replace("currency='CZK'", "currency='czk'");
    const g = await guest({ [DAILY_URL]: { status: 200, body } });
    const problems = (g.call("sync", {}).result as { delivery: { problems: { code: string }[] } }).delivery.problems;
    expect(problems.map((p) => p.code)).toEqual(["ecb_rate_invalid", "ecb_rate_invalid", "ecb_currency_invalid"]);
  });

  it("refuses a body over its 4 MiB cap before reading it as XML", async () => {
    const huge = DAILY.replace("<gesmes:subject>", `<gesmes:subject>${"x".repeat(5 << 20)}`);
    const g = await guest({ [DAILY_URL]: { status: 200, body: huge } });
    expect(g.call("sync", {}).error).toEqual({ code: "http_failed", message: "fetching eurofxref-daily.xml: the answer's body is over the cap of 4194304 bytes" });
  });

  it("traps, so the host sees plugin_failed, when the host's answer is over the 8 MiB message cap", async () => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: "x".repeat(9 << 20) } });
    // A trap: the RuntimeError of an `unreachable`.
    expect(() => g.call("sync", {})).toThrow(/unreachable/);
    expect(g.stderr.join("")).toMatch(/^abort: openfief_alloc: \d+ bytes is over the 8 MiB message cap/);
  });

  it.each([
    ["a watermark that is not a date", { watermark: "2024-13-01" }],
    ["a watermark with a time", { watermark: "2024-06-28T00:00:00Z" }],
    ["a field the message does not have", { batchId: "b", cursor: "x" }],
    ["a batchId that is not a string", { batchId: 7 }],
    ["both spellings of batch_id", { batchId: "a", batch_id: "b" }],
    ["params that are not an object", ["b"]],
  ])("answers invalid_request for %s, asking the ECB nothing", async (_name, params) => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY } });
    expect(g.call("sync", params).error?.code).toBe("invalid_request");
    expect(g.hostCalls).toEqual([]);
  });

  it("reads the proto field name batch_id and a null watermark as protobuf-JSON allows", async () => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY } });
    const result = g.call("sync", { batch_id: "b-9", watermark: null }).result as { delivery: { batchId: string; watermark: string } };
    expect(result.delivery.batchId).toBe("b-9");
    expect(result.delivery.watermark).toBe("2024-06-28");
  });

  it("keeps its memory bounded over many calls on one instance", async () => {
    const g = await guest({ [DAILY_URL]: { status: 200, body: DAILY }, [HIST_URL]: { status: 200, body: HIST } });
    for (let i = 0; i < 300; i++) expect(g.call("sync", { batchId: `b-${i}`, watermark: "2024-06-01" }).result).toBeDefined();
    expect(g.memoryBytes()).toBeLessThan(4 << 20);
  });
});

describe("import_file", () => {
  const header = { batchId: "imp-1", mode: "INGEST_MODE_PREVIEW", fileName: "eurofxref-hist-90d.xml", mediaType: "application/xml" };
  const params = (xml: string | Buffer, h: unknown = header) => ({ header: h, contentBase64: Buffer.from(xml).toString("base64") });

  it("maps every day of a 90-day file, oldest first, with no watermark", async () => {
    const g = await guest();
    const response = g.call("import_file", params(HIST));
    expect(response).toEqual({
      result: toJson(ImportFileResponseSchema, create(ImportFileResponseSchema, { delivery: { batchId: "imp-1", institution: INSTITUTION, fxRates: asRates(oldestFirst(published(HIST))) } })),
    });
    expect(g.hostCalls).toEqual([]);
  });

  it("maps the daily file too, and takes the mode as a number", async () => {
    const g = await guest();
    const result = g.call("import_file", params(DAILY, { batch_id: "imp-2", mode: 2 })).result as { delivery: { batchId: string; fxRates: unknown[] } };
    expect(result.delivery.batchId).toBe("imp-2");
    const expected = toJson(ImportFileResponseSchema, create(ImportFileResponseSchema, { delivery: { fxRates: asRates(published(DAILY)) } })) as { delivery: { fxRates: unknown[] } };
    expect(result.delivery.fxRates).toEqual(expected.delivery.fxRates);
  });

  it("reports a malformed file as a problem, with no rates", async () => {
    const g = await guest();
    const result = g.call("import_file", params(HIST.replace('rate="1.0696"', 'rate="1.06.96"'))).result as { delivery: { fxRates?: unknown; problems: unknown[] } };
    expect(result.delivery.fxRates).toBeUndefined();
    expect(result.delivery.problems).toEqual([
      { severity: "INGEST_PROBLEM_SEVERITY_ERROR", code: "ecb_rate_invalid", message: "the USD rate is not a positive decimal", location: "line 17" },
    ]);
  });

  it.each([
    ["no header", { contentBase64: "" }],
    ["content that is not base64", { header, contentBase64: "not base64!" }],
    ["base64 without padding", { header, contentBase64: "PGE+" .slice(0, 3) }],
    ["an unknown mode", { header: { ...header, mode: "INGEST_MODE_LATER" }, contentBase64: "" }],
    ["an unknown header field", { header: { ...header, path: "/etc/passwd" }, contentBase64: "" }],
    ["a file over the 4 MiB cap", params("x".repeat((4 << 20) + 1))],
  ])("answers invalid_request for %s", async (_name, p) => {
    expect((await guest()).call("import_file", p).error?.code).toBe("invalid_request");
  });
});
