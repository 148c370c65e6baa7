import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CAPS } from "./caps.js";
import { ErrorCode } from "./errors.js";
import type { EgressHost } from "./types.js";
import type { AllowLists, EgressAllowList } from "./allowlist.js";
import { allowListFromHosts, decideEgress, decodeAllowLists, encodeAllowLists } from "./allowlist.js";

function decoded(data: unknown): AllowLists {
  const result = decodeAllowLists(data);
  if (!result.ok) throw new Error(`expected to decode: ${JSON.stringify(result.errors)}`);
  return result.value;
}

function listOf(hosts: EgressHost[]): EgressAllowList {
  const result = allowListFromHosts(hosts);
  if (!result.ok) throw new Error("expected a list");
  return result.value;
}

describe("encodeAllowLists", () => {
  it("writes one key per plugin with sorted unique host:port lines, each ending in a newline", () => {
    const lists = new Map<string, EgressHost[]>([
      ["ibkr", [{ host: "b.example.com", port: 443 }, { host: "a.example.com", port: 8443 }, { host: "b.example.com", port: 443 }]],
      ["xtb", []],
    ]);
    expect(encodeAllowLists(lists)).toEqual({ ibkr: "a.example.com:8443\nb.example.com:443\n", xtb: "" });
  });

  it("sorts by the bytes of the whole line", () => {
    const lists = new Map([["p", [{ host: "x.co", port: 443 }, { host: "x.co.uk", port: 443 }, { host: "x.co", port: 80 }]]]);
    expect(encodeAllowLists(lists)).toEqual({ p: "x.co.uk:443\nx.co:443\nx.co:80\n" });
  });
});

describe("decodeAllowLists", () => {
  it("reads lists, including an empty one", () => {
    const lists = decoded({ ibkr: "a.example.com:8443\nb.example.com:443\n", xtb: "" });
    expect([...lists.keys()]).toEqual(["ibkr", "xtb"]);
    expect(lists.get("ibkr")?.hosts).toEqual([
      { host: "a.example.com", port: 8443 },
      { host: "b.example.com", port: 443 },
    ]);
    expect(lists.get("xtb")?.size).toBe(0);
  });

  it("reads an empty map as nobody having a list", () => {
    expect(decoded({}).size).toBe(0);
  });

  it.each<[string, unknown]>([
    ["an upper-case host", { p: "Api.example.com:443\n" }],
    ["a missing port", { p: "api.example.com\n" }],
    ["an empty port", { p: "api.example.com:\n" }],
    ["port 0", { p: "a.io:0\n" }],
    ["port 65536", { p: "a.io:65536\n" }],
    ["a port with a leading zero", { p: "a.io:0443\n" }],
    ["a port with a sign", { p: "a.io:+443\n" }],
    ["a duplicate line", { p: "a.io:443\na.io:443\n" }],
    ["unsorted lines", { p: "b.io:443\na.io:443\n" }],
    ["a missing final newline", { p: "a.io:443" }],
    ["a blank line", { p: "a.io:443\n\nb.io:443\n" }],
    ["a lone newline", { p: "\n" }],
    ["a CRLF line ending", { p: "a.io:443\r\n" }],
    ["an IPv4 literal", { p: "1.2.3.4:443\n" }],
    ["a decimal IPv4 form", { p: "2130706433:443\n" }],
    ["a hex IPv4 form", { p: "0x7f.1:443\n" }],
    ["an IPv6 literal", { p: "[::1]:443\n" }],
    ["a wildcard", { p: "*.a.io:443\n" }],
    ["a trailing dot", { p: "a.io.:443\n" }],
    ["a single-label host", { p: "core:443\n" }],
    ["a non-ASCII host", { p: "münchen.de:443\n" }],
    ["whitespace around an entry", { p: " a.io:443\n" }],
    ["a key that is not a plugin name", { "Not-A-Plugin": "a.io:443\n" }],
    ["a key of 57 characters", { ["a".repeat(57)]: "" }],
    ["a value that is not a string", { p: ["a.io:443"] }],
    ["data that is not an object", "p: a.io:443"],
    ["null data", null],
  ])("refuses %s", (_what, data) => {
    const result = decodeAllowLists(data);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.every((e) => e.code === ErrorCode.InvalidAllowList)).toBe(true);
  });

  it("names the plugin and line of a bad entry", () => {
    const result = decodeAllowLists({ good: "a.io:443\n", bad: "a.io:443\nB.io:443\n" });
    expect(result.ok ? [] : result.errors.map((e) => e.path)).toEqual(["bad[1]"]);
  });
});

const label = fc.stringMatching(/^[a-z](?:[a-z0-9-]{0,8}[a-z0-9])?$/).filter((l) => l.slice(2, 4) !== "--");
const host = fc.tuple(fc.array(label, { minLength: 1, maxLength: 3 }), fc.stringMatching(/^[a-z]{2,6}$/)).map(
  ([labels, tld]) => [...labels, tld].join("."),
);
const egressHost = fc.record({ host, port: fc.oneof(fc.constant(443), fc.integer({ min: 1, max: 65535 })) });
const pluginName = fc.stringMatching(/^[a-z](?:[a-z0-9-]{0,10}[a-z0-9])?$/);
const lists = fc.dictionary(pluginName, fc.array(egressHost, { maxLength: 6 }), { maxKeys: 5 }).map(
  (d) => new Map(Object.entries(d)),
);

function canonical(hosts: readonly EgressHost[]): string[] {
  return [...new Set(hosts.map((h) => `${h.host}:${h.port}`))].sort();
}

describe("allow-list encoding round trip", () => {
  it("decodes what it encodes to the same sorted unique lists", () => {
    fc.assert(
      fc.property(lists, (input) => {
        const out = decoded(encodeAllowLists(input));
        expect([...out.keys()].sort()).toEqual([...input.keys()].sort());
        for (const [plugin, hosts] of input) {
          expect(out.get(plugin)?.hosts.map((h) => `${h.host}:${h.port}`)).toEqual(canonical(hosts));
          expect(out.get(plugin)?.encode()).toBe(encodeAllowLists(input)[plugin]);
        }
      }),
      { numRuns: 150 },
    );
  });

  const nonEmpty = lists.filter((m) => [...m.values()].some((h) => h.length > 0));

  function firstNonEmpty(data: Record<string, string>): string {
    const key = Object.keys(data).find((k) => (data[k] ?? "") !== "");
    if (key === undefined) throw new Error("no non-empty list");
    return key;
  }

  it.each<[string, (text: string, pick: number) => string | undefined]>([
    [
      "upper-casing a letter",
      (text, pick) => {
        const letters = [...text].flatMap((c, i) => (/[a-z]/.test(c) ? [i] : []));
        const i = letters[pick % letters.length];
        return i === undefined ? undefined : text.slice(0, i) + (text[i] ?? "").toUpperCase() + text.slice(i + 1);
      },
    ],
    ["dropping the final newline", (text) => text.slice(0, -1)],
    [
      "duplicating a line",
      (text, pick) => {
        const lines = text.slice(0, -1).split("\n");
        const i = pick % lines.length;
        lines.splice(i, 0, lines[i] ?? "");
        return `${lines.join("\n")}\n`;
      },
    ],
    [
      "swapping two different lines",
      (text) => {
        const lines = text.slice(0, -1).split("\n");
        if (lines.length < 2) return undefined;
        [lines[0], lines[1]] = [lines[1] ?? "", lines[0] ?? ""];
        return `${lines.join("\n")}\n`;
      },
    ],
    ["adding a blank line", (text) => `${text}\n`],
    ["writing CRLF", (text) => text.replace(/\n/g, "\r\n")],
    ["dropping a port", (text) => text.replace(/:[0-9]+\n/, "\n")],
    ["adding a trailing dot to a host", (text) => text.replace(/:/, ".:")],
  ])("refuses an encoding changed by %s", (_what, mutate) => {
    fc.assert(
      fc.property(nonEmpty, fc.nat(), (input, pick) => {
        const data = encodeAllowLists(input);
        const key = firstNonEmpty(data);
        const changed = mutate(data[key] ?? "", pick);
        fc.pre(changed !== undefined && changed !== data[key]);
        expect(decodeAllowLists({ ...data, [key]: changed }).ok).toBe(false);
      }),
      { numRuns: 60 },
    );
  });
});

describe("EgressAllowList.allows", () => {
  const list = listOf([
    { host: "api.example.com", port: 443 },
    { host: "xn--mnchen-3ya.de", port: 443 },
    { host: "kelvin.example.com", port: 8443 },
  ]);

  it.each<[string, string, number, boolean]>([
    ["an exact entry", "api.example.com", 443, true],
    ["an entry in other ASCII case", "API.Example.COM", 443, true],
    ["an entry with one trailing dot", "api.example.com.", 443, true],
    ["an entry with two trailing dots", "api.example.com..", 443, false],
    ["an xn-- entry", "xn--mnchen-3ya.de", 443, true],
    ["the Unicode form of an xn-- entry", "münchen.de", 443, false],
    ["the Kelvin sign standing in for k", "\u212aelvin.example.com", 8443, false],
    ["another port", "api.example.com", 8443, false],
    ["a subdomain of an entry", "x.api.example.com", 443, false],
    ["an entry as a prefix of another domain", "api.example.com.evil.example.net", 443, false],
    ["a parent domain of an entry", "example.com", 443, false],
    ["an IPv4 literal", "1.2.3.4", 443, false],
    ["a decimal IPv4 form", "2130706433", 443, false],
    ["an IPv6 literal", "[::1]", 443, false],
    ["a port that is not an integer", "api.example.com", 443.5, false],
    ["port 0", "api.example.com", 0, false],
  ])("decides %s", (_what, host, port, expected) => {
    expect(list.allows(host, port)).toBe(expected);
  });

  it("refuses everything when the list is empty", () => {
    expect(listOf([]).allows("api.example.com", 443)).toBe(false);
  });
});

describe("allowListFromHosts", () => {
  it("sorts and removes repeats", () => {
    expect(listOf([{ host: "b.io", port: 1 }, { host: "a.io", port: 2 }, { host: "b.io", port: 1 }]).hosts).toEqual([
      { host: "a.io", port: 2 },
      { host: "b.io", port: 1 },
    ]);
  });

  it.each<[string, EgressHost]>([
    ["an IP literal", { host: "10.0.0.1", port: 443 }],
    ["an upper-case host", { host: "A.io", port: 443 }],
    ["a port out of range", { host: "a.io", port: 70000 }],
  ])("refuses %s", (_what, h) => {
    expect(allowListFromHosts([h]).ok).toBe(false);
  });
});

describe("decideEgress", () => {
  const lists = decoded({ ibkr: "api.example.com:443\n", xtb: "" });

  it.each<[string, AllowLists | null, string, string, number, { allowed: boolean; reason: string }]>([
    ["a listed host", lists, "ibkr", "api.example.com", 443, { allowed: true, reason: "listed" }],
    ["an unlisted host", lists, "ibkr", "other.example.com", 443, { allowed: false, reason: "not_listed" }],
    ["any host for a plugin with an empty list", lists, "xtb", "api.example.com", 443, { allowed: false, reason: "not_listed" }],
    ["a plugin without a key", lists, "nbp", "api.example.com", 443, { allowed: false, reason: "no_allow_list" }],
    ["any request when there are no lists at all", null, "ibkr", "api.example.com", 443, { allowed: false, reason: "no_allow_list" }],
  ])("decides %s", (_what, l, plugin, host, port, expected) => {
    expect(decideEgress(l, plugin, host, port)).toEqual(expected);
  });
});

describe("the allow-lists on hostile input", () => {
  const line = (i: number): string => `h${String(i).padStart(3, "0")}.example.com:443\n`;

  it("refuses a plugin with more lines than any grant can give", () => {
    const text = Array.from({ length: CAPS.listItems + 1 }, (_, i) => line(i)).join("");
    expect(decodeAllowLists({ p: text })).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.InvalidAllowList, path: "p" })] });
  });

  it("accepts a plugin with exactly the cap's lines", () => {
    expect(decodeAllowLists({ p: Array.from({ length: CAPS.listItems }, (_, i) => line(i)).join("") }).ok).toBe(true);
  });

  it("refuses a value of megabytes before splitting it", () => {
    expect(decodeAllowLists({ p: "a".repeat(5_000_000) })).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.InvalidAllowList, path: "p" })] });
  });

  it.each<[string, unknown]>([
    ["null", null],
    ["a plain object", { p: listOf([{ host: "a.example.com", port: 443 }]) }],
    ["a map of strings", new Map([["p", "a.example.com:443\n"]])],
  ])("decides no_allow_list for lists that are %s", (_what, lists) => {
    expect(decideEgress(lists as AllowLists, "p", "a.example.com", 443)).toEqual({ allowed: false, reason: "no_allow_list" });
  });

  it.each<[string, unknown]>([
    ["a string", "a.example.com:443"],
    ["a list of nulls", [null]],
    ["more hosts than the cap", Array.from({ length: CAPS.listItems + 1 }, (_, i) => ({ host: `h${i}.example.com`, port: 443 }))],
  ])("refuses to build a list from %s", (_what, hosts) => {
    expect(allowListFromHosts(hosts as EgressHost[]).ok).toBe(false);
  });
});
