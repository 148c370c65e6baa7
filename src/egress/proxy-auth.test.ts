import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { basicProxyAuthorization, decodeStrictBase64, proxyToken } from "./proxy-auth.js";

const JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln";
const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");
const raw = (...values: string[]): string[] => values.flatMap((v) => ["Proxy-Authorization", v]);

describe("proxyToken", () => {
  it.each([
    ["Basic", `Basic ${b64(`plugin:${JWT}`)}`],
    ["basic", `basic ${b64(`plugin:${JWT}`)}`],
    ["BASIC", `BASIC ${b64(`plugin:${JWT}`)}`],
    ["an empty user name", `Basic ${b64(`:${JWT}`)}`],
    ["any user name", `Basic ${b64(`anything at all:${JWT}`)}`],
    ["several spaces after the scheme", `Basic   ${b64(`plugin:${JWT}`)}`],
  ])("reads the password as the token with %s", (_what, value) => {
    expect(proxyToken(raw(value))).toEqual({ ok: true, token: JWT });
  });

  it("keeps colons inside the password", () => {
    expect(proxyToken(raw(`Basic ${b64("u:a:b")}`))).toEqual({ ok: true, token: "a:b" });
  });

  it("finds the header whatever its case in rawHeaders", () => {
    expect(proxyToken(["proxy-AUTHORIZATION", `Basic ${b64(`u:${JWT}`)}`])).toEqual({ ok: true, token: JWT });
  });

  it.each([
    ["no header", [], "no_token"],
    ["two headers", raw(`Basic ${b64(`u:${JWT}`)}`, `Basic ${b64(`u:${JWT}`)}`), "bad_proxy_auth_duplicate"],
    ["two headers of different case", ["Proxy-Authorization", `Basic ${b64(`u:${JWT}`)}`, "proxy-authorization", `Basic ${b64("u:other")}`], "bad_proxy_auth_duplicate"],
    ["Bearer", raw(`Bearer ${JWT}`), "bad_proxy_auth_scheme"],
    ["Digest", raw(`Digest username="x"`), "bad_proxy_auth_scheme"],
    ["an empty value", raw(""), "bad_proxy_auth_scheme"],
    ["a bare token", raw(JWT), "bad_proxy_auth_scheme"],
    ["Basic alone", raw("Basic"), "bad_proxy_auth_no_credentials"],
    ["Basic and spaces", raw("Basic   "), "bad_proxy_auth_no_credentials"],
    ["characters outside base64", raw("Basic dXNlcjp0b2tlbg$$"), "bad_proxy_auth_base64"],
    ["base64url alphabet", raw(`Basic ${b64("u:??>>").replace(/\+/g, "-").replace(/\//g, "_")}`), "bad_proxy_auth_base64"],
    ["missing padding", raw(`Basic ${b64("u:tok").replace(/=+$/, "")}`), "bad_proxy_auth_base64"],
    ["non-zero trailing bits", raw("Basic dXNlcjp0b2tlbh=="), "bad_proxy_auth_base64"],
    ["a space inside", raw(`Basic ${b64(`u:${JWT}`).slice(0, 4)} ${b64(`u:${JWT}`).slice(4)}`), "bad_proxy_auth_base64"],
    ["a parameter after the credentials", raw(`Basic ${b64(`u:${JWT}`)}, realm="x"`), "bad_proxy_auth_base64"],
    ["bytes that are not UTF-8", raw(`Basic ${Buffer.from([0x75, 0x3a, 0xff, 0xfe]).toString("base64")}`), "bad_proxy_auth_encoding"],
    ["no colon", raw(`Basic ${b64(JWT)}`), "bad_proxy_auth_no_colon"],
    ["the token in the user name", raw(`Basic ${b64(`${JWT}:`)}`), "bad_proxy_auth_token_in_user"],
    ["an empty password", raw(`Basic ${b64("plugin:")}`), "bad_proxy_auth_empty_token"],
    ["an empty user and password", raw(`Basic ${b64(":")}`), "bad_proxy_auth_empty_token"],
    ["a space in the token", raw(`Basic ${b64("u:abc def")}`), "bad_proxy_auth_whitespace"],
    ["a tab in the token", raw(`Basic ${b64("u:abc\tdef")}`), "bad_proxy_auth_whitespace"],
    ["a newline at the end of the token", raw(`Basic ${b64(`u:${JWT}\n`)}`), "bad_proxy_auth_whitespace"],
    ["a NUL in the token", raw(`Basic ${b64("u:abc\u0000")}`), "bad_proxy_auth_whitespace"],
    ["a no-break space in the token", raw(`Basic ${b64("u:abc\u00a0def")}`), "bad_proxy_auth_whitespace"],
  ])("refuses %s", (_what, headers, code) => {
    expect(proxyToken(headers)).toEqual({ ok: false, code });
  });

  it("never returns the token inside a refusal", () => {
    const r = proxyToken(raw(`Basic ${b64(`${JWT}:`)}`), );
    expect(JSON.stringify(r)).not.toContain(JWT);
  });
});

describe("decodeStrictBase64", () => {
  it.each(["", "a", "ab", "abc", "ab=", "a===", "ab==cd==", "YQ", "YR==", "Y Q=="])("refuses %j", (text) => {
    expect(decodeStrictBase64(text)).toBeUndefined();
  });
  it.each([["YQ==", "a"], ["YWI=", "ab"], ["YWJj", "abc"], ["Pz8/Pg==", "???>"]])("decodes %s", (text, plain) => {
    expect(decodeStrictBase64(text)?.toString()).toBe(plain);
  });
  it("round-trips the header a client builds", () => {
    expect(proxyToken(raw(basicProxyAuthorization("plugin", JWT)))).toEqual({ ok: true, token: JWT });
  });
});

describe("decodeStrictBase64 without a regex", () => {
  // The former definition: the canonical-base64 regex, then a round trip.
  const STRICT = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  const reference = (t: string): string | undefined => {
    if (t.length === 0 || !STRICT.test(t)) return undefined;
    const b = Buffer.from(t, "base64");
    return b.toString("base64") === t ? b.toString("hex") : undefined;
  };
  const alphabet = fc.constantFrom(..."ABCXYZabcxyz0189+/=!-_ \u00e9".split(""));

  it("accepts and refuses exactly what the regex and a round trip did", () => {
    fc.assert(fc.property(fc.oneof(fc.string({ unit: alphabet, maxLength: 24 }), fc.uint8Array({ maxLength: 18 }).map((b) => Buffer.from(b).toString("base64"))), (t) => {
      expect(decodeStrictBase64(t)?.toString("hex")).toBe(reference(t));
    }), { numRuns: 2000 });
  });
});
