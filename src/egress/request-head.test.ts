import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HEAD_LIMITS, HeadReader, readHead, type HeadRejection, type ReadStep } from "./request-head.js";

const AUTH = "Proxy-Authorization: Basic cGx1Z2luOnRvaw==";
const crlf = (...lines: string[]): Buffer => Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
const good = (...extra: string[]): Buffer => crlf("CONNECT api.example.com:443 HTTP/1.1", "Host: api.example.com:443", AUTH, ...extra);

function rejection(step: ReadStep): Pick<HeadRejection, "kind" | "reason"> | undefined {
  return step.state === "refused" ? { kind: step.rejection.kind, reason: step.rejection.reason } : undefined;
}

/** Feeds `bytes` to one reader in pieces of `size` bytes; the last step. */
function inPieces(bytes: Buffer, size: number): ReadStep {
  const r = new HeadReader();
  let step: ReadStep = { state: "more" };
  for (let i = 0; i < bytes.length && step.state === "more"; i += size) step = r.push(bytes.subarray(i, i + size));
  return step;
}

describe("reading a request head", () => {
  it("reads a CONNECT's target, Host, its one Proxy-Authorization and nothing after the blank line", () => {
    const step = readHead(good());
    expect(step).toEqual({
      state: "done", rest: Buffer.alloc(0),
      head: { ok: true, method: "CONNECT", target: "api.example.com:443", minor: 1, host: true, proxyAuthorization: "Basic cGx1Z2luOnRvaw==", proxyAuthorizations: 1, upstreamProxy: false },
    });
  });

  it.each([
    ["names in any case, OWS around the value", "PROXY-authorization:  \tBasic cGx1Z2luOnRvaw== \t", "Basic cGx1Z2luOnRvaw=="],
    ["a value without OWS", "proxy-authorization:Basic cGx1Z2luOnRvaw==", "Basic cGx1Z2luOnRvaw=="],
    ["obs-text in a value, read as latin1", "Proxy-Authorization: Basic \u00e9", "Basic \u00e9"],
    ["an empty value", "Proxy-Authorization:", ""],
  ])("reads Proxy-Authorization with %s", (_what, line, value) => {
    const step = readHead(crlf("CONNECT api.example.com:443 HTTP/1.1", "Host: x", line));
    expect(step.state === "done" ? [step.head.proxyAuthorization, step.head.proxyAuthorizations] : step).toEqual([value, 1]);
  });

  it("counts a second Proxy-Authorization (refused later as a duplicate) and keeps only the first value", () => {
    const step = readHead(good("proxy-authorization: Basic b3RoZXI6b3RoZXI="));
    expect(step.state === "done" ? [step.head.proxyAuthorization, step.head.proxyAuthorizations] : step).toEqual(["Basic cGx1Z2luOnRvaw==", 2]);
  });

  it("notices a request to chain through another proxy", () => {
    const step = readHead(good("x-UPSTREAM-https-proxy: http://10.0.0.1:3128"));
    expect(step.state === "done" && step.head.upstreamProxy).toBe(true);
  });

  it.each([
    ["a health check over HTTP/1.0 without Host", "GET /healthcheck HTTP/1.0", "GET", 0, false],
    ["metrics", "GET /metrics HTTP/1.1\r\nHost: x", "GET", 1, true],
    ["a DELETE", "DELETE /x HTTP/1.1\r\nHost: x", "DELETE", 1, true],
  ])("reads %s", (_what, text, method, minor, host) => {
    const step = readHead(crlf(text));
    expect(step.state === "done" ? [step.head.method, step.head.minor, step.head.host] : step).toEqual([method, minor, host]);
  });

  it.each([
    // The request line.
    ["an empty line first", "\r\nCONNECT a:443 HTTP/1.1\r\n\r\n", "invalid_method", "empty_line_first"],
    ["a lower-case method", "connect a:443 HTTP/1.1\r\n\r\n", "invalid_method", "method"],
    ["an unknown method", "BREW a:443 HTTP/1.1\r\n\r\n", "invalid_method", "method"],
    ["a method too long to be one", `${"A".repeat(21)} a:443 HTTP/1.1\r\n\r\n`, "invalid_method", "method"],
    ["a leading space", " CONNECT a:443 HTTP/1.1\r\n\r\n", "invalid_method", "method"],
    ["two spaces after the method", "CONNECT  a:443 HTTP/1.1\r\n\r\n", "invalid_target", "target"],
    ["no target", "CONNECT HTTP/1.1\r\n\r\n", "invalid_target", "target"],
    ["a NUL in the target", "CONNECT a\u0000b:443 HTTP/1.1\r\n\r\n", "invalid_target", "target"],
    ["a CR in the target", "CONNECT a\rb:443 HTTP/1.1\r\n\r\n", "invalid_target", "target"],
    ["a non-ASCII target", "CONNECT ap\u00e9:443 HTTP/1.1\r\n\r\n", "invalid_target", "target"],
    ["a fragment in the target", "CONNECT a:443#x HTTP/1.1\r\n\r\n", "invalid_target", "target"],
    ["no version", "CONNECT a:443\r\n\r\n", "invalid_target", "target"],
    ["HTTP/1.0 for a CONNECT", "CONNECT a:443 HTTP/1.0\r\nHost: a\r\n\r\n", "invalid_header", "version"],
    ["HTTP/2.0", "CONNECT a:443 HTTP/2.0\r\n\r\n", "invalid_header", "version"],
    ["a lower-case version", "CONNECT a:443 http/1.1\r\n\r\n", "invalid_header", "version"],
    ["a byte after the version", "CONNECT a:443 HTTP/1.1 \r\n\r\n", "invalid_header", "version"],
    ["a third part", "CONNECT a:443 HTTP/1.1 HTTP/1.1\r\n\r\n", "invalid_header", "version"],
    // Line ends.
    ["a bare LF after the request line", "CONNECT a:443 HTTP/1.1\nHost: a\r\n\r\n", "invalid_header", "bare_lf"],
    ["a bare LF after a header", "CONNECT a:443 HTTP/1.1\r\nHost: a\n\r\n", "invalid_header", "bare_lf"],
    ["a bare LF as the blank line", "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\n", "invalid_header", "bare_lf"],
    ["a bare LF first", "\nCONNECT a:443 HTTP/1.1\r\n\r\n", "invalid_header", "bare_lf"],
    ["a bare CR inside a header value (header injection)", "CONNECT a:443 HTTP/1.1\r\nHost: a\rProxy-Authorization: Basic eDp5\r\n\r\n", "invalid_header", "header_value"],
    // Header fields.
    ["a folded header", `CONNECT a:443 HTTP/1.1\r\nHost: a\r\n${AUTH}\r\n  continued\r\n\r\n`, "invalid_header", "folded_header"],
    ["a folded header with a tab", "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\tcontinued\r\n\r\n", "invalid_header", "folded_header"],
    ["a space before the colon", "CONNECT a:443 HTTP/1.1\r\nProxy-Authorization : Basic eDp5\r\n\r\n", "invalid_header", "header_name"],
    ["no colon", "CONNECT a:443 HTTP/1.1\r\nHost a\r\n\r\n", "invalid_header", "header_name"],
    ["an empty name", "CONNECT a:443 HTTP/1.1\r\n: a\r\n\r\n", "invalid_header", "header_name"],
    ["a NUL in a name", "CONNECT a:443 HTTP/1.1\r\nHo\u0000st: a\r\n\r\n", "invalid_header", "header_name"],
    ["a NUL in a value", "CONNECT a:443 HTTP/1.1\r\nHost: a\u0000b\r\n\r\n", "invalid_header", "header_value"],
    ["a NUL in the token", "CONNECT a:443 HTTP/1.1\r\nProxy-Authorization: Basic eDp5\u0000\r\n\r\n", "invalid_header", "header_value"],
    ["a DEL in a value", "CONNECT a:443 HTTP/1.1\r\nHost: a\u007f\r\n\r\n", "invalid_header", "header_value"],
    ["another control in a value", "CONNECT a:443 HTTP/1.1\r\nHost: a\u001bb\r\n\r\n", "invalid_header", "header_value"],
    ["a non-numeric Content-Length", "GET /healthcheck HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n", "invalid_header", "content_length"],
    ["an empty Content-Length", "GET /healthcheck HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", "invalid_header", "content_length"],
    ["two Content-Lengths", "GET /healthcheck HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\ncontent-length: 0\r\n\r\n", "invalid_header", "duplicate_content_length"],
    ["a Transfer-Encoding", "GET /healthcheck HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "invalid_header", "transfer_encoding"],
    // Sizes.
    ["a line over the line cap", `CONNECT a:443 HTTP/1.1\r\nX-Pad: ${"a".repeat(HEAD_LIMITS.maxLineBytes)}\r\n\r\n`, "header_overflow", "line_too_long"],
    ["a request line over the line cap", `CONNECT ${"a".repeat(HEAD_LIMITS.maxLineBytes)}:443 HTTP/1.1\r\n\r\n`, "header_overflow", "line_too_long"],
    ["more headers than the cap", `CONNECT a:443 HTTP/1.1\r\n${"X-A: b\r\n".repeat(HEAD_LIMITS.maxHeaders + 1)}\r\n`, "header_overflow", "too_many_headers"],
    ["a head over the head cap", `CONNECT a:443 HTTP/1.1\r\n${`X-Pad: ${"a".repeat(1000)}\r\n`.repeat(17)}\r\n`, "header_overflow", "head_too_large"],
    ["a head over the head cap with no line end at all", "C".repeat(HEAD_LIMITS.maxHeadBytes + 10), "header_overflow", "line_too_long"],
  ])("refuses %s", (_what, text, kind, reason) => {
    const bytes = Buffer.from(text, "latin1");
    expect(rejection(readHead(bytes))).toEqual({ kind, reason });
    // The same whatever way the bytes are split across reads.
    expect(rejection(inPieces(bytes, 1))).toEqual({ kind, reason });
    expect(rejection(inPieces(bytes, 7))).toEqual({ kind, reason });
  });

  it("takes exactly the caps: a head of the largest size, a line of the longest, as many headers as allowed", () => {
    const start = "CONNECT a:443 HTTP/1.1\r\n";
    const pad = (n: number): string => `X-P: ${"a".repeat(n - 7)}\r\n`;
    const longest = `${start}X-L: ${"a".repeat(HEAD_LIMITS.maxLineBytes - 5)}\r\n\r\n`;
    const many = `${start}${"X-A: b\r\n".repeat(HEAD_LIMITS.maxHeaders)}\r\n`;
    const lines = Math.floor((HEAD_LIMITS.maxHeadBytes - start.length - 2) / 4000);
    const filled = `${start}${pad(4000).repeat(lines)}`;
    const largest = `${filled}${pad(HEAD_LIMITS.maxHeadBytes - filled.length - 2)}\r\n`;
    expect(Buffer.byteLength(largest)).toBe(HEAD_LIMITS.maxHeadBytes);
    for (const text of [longest, many, largest]) {
      expect(readHead(Buffer.from(text)).state).toBe("done");
      expect(inPieces(Buffer.from(text), 3).state).toBe("done");
    }
    expect(rejection(readHead(Buffer.from(`${largest.slice(0, -2)}x\r\n\r\n`)))).toEqual({ kind: "header_overflow", reason: "head_too_large" });
  });

  it("refuses a bad head at its first bad line, without waiting for the rest", () => {
    const r = new HeadReader();
    expect(r.push(Buffer.from("CONNECT a:443 HTTP/1.1\r\n")).state).toBe("more");
    expect(rejection(r.push(Buffer.from("Host: a\u0000\r\nX-More:")))).toEqual({ kind: "invalid_header", reason: "header_value" });
  });

  it.each([1, 5, 30, 4096])("hands back the bytes pipelined after the head, whole and in order, read %d bytes at a time", (size) => {
    const after = Buffer.alloc(40_000, 7);
    after.write("\r\n\r\nGET / HTTP/1.1\r\n\r\n", 0, "latin1");
    const head = good();
    const bytes = Buffer.concat([head, after]);
    for (const first of [bytes.length, head.length - 1, head.length, head.length + 3, size]) {
      const r = new HeadReader();
      let step = r.push(bytes.subarray(0, first));
      let pushed = first;
      while (step.state === "more") {
        step = r.push(bytes.subarray(pushed, pushed + size));
        pushed += size;
      }
      expect(step.state === "done" && step.head.target).toBe("api.example.com:443");
      if (step.state === "done") expect(step.rest.equals(bytes.subarray(head.length, pushed))).toBe(true);
    }
  });

  it("reads the same head, or refuses it the same way, however its bytes are split", () => {
    const heads = [good(), good("X-A: b"), Buffer.from("CONNECT a:443 HTTP/1.1\r\nHost: a\n\r\n"), Buffer.from(`CONNECT a:443 HTTP/1.1\r\n${"X-A: b\r\n".repeat(101)}\r\n`)];
    fc.assert(
      fc.property(fc.constantFrom(...heads), fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 40 }), (bytes, sizes) => {
        const whole = readHead(bytes);
        const r = new HeadReader();
        let step: ReadStep = { state: "more" };
        let at = 0;
        for (let i = 0; at < bytes.length && step.state === "more"; i++) {
          const n = sizes[i % sizes.length] ?? 1;
          step = r.push(bytes.subarray(at, at + n));
          at += n;
        }
        expect(step.state === "done" ? step.head : rejection(step)).toEqual(whole.state === "done" ? whole.head : rejection(whole));
      }),
    );
  });

  it("never throws and always answers on arbitrary bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.integer({ min: 1, max: 50 }), (raw, size) => {
        const bytes = Buffer.concat([Buffer.from("CONNECT a:443 HTTP/1.1\r\n"), Buffer.from(raw)]);
        const step = inPieces(bytes, size);
        expect(["more", "done", "refused"]).toContain(step.state);
        // Whatever passes holds only what a value may: no NUL, CR or LF reaches the proxy.
        if (step.state === "done") expect(step.head.proxyAuthorization ?? "").not.toMatch(/[\0\r\n]/);
      }),
    );
  });
});
