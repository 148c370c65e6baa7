import { describe, expect, it } from "vitest";
import { parseConnectTarget } from "./target.js";

describe("parseConnectTarget", () => {
  it.each([
    ["api.example.com:443", "api.example.com", 443],
    ["API.Example.COM.:8443", "API.Example.COM.", 8443],
    ["[2001:db8::1]:443", "2001:db8::1", 443],
    ["10.0.0.1:65535", "10.0.0.1", 65535],
    ["host:1", "host", 1],
  ])("reads %s", (target, host, port) => {
    expect(parseConnectTarget(target)).toEqual({ ok: true, value: { host, port } });
  });

  it.each([
    "", "api.example.com", "api.example.com:", ":443", "api.example.com:0", "api.example.com:65536",
    "api.example.com:0443", "api.example.com:+443", "api.example.com:44 3", "user@host:443", "host:443/path",
    "http://host:443", "::1:443", "[::1]", "[::1]443", "[not-ip]:443", "ho st:443", "host%2e:443", "host\u0000:443", "/healthcheck",
  ])("refuses %j", (target) => {
    expect(parseConnectTarget(target)).toEqual({ ok: false, code: "malformed_target" });
  });
});
