import { describe, expect, it } from "vitest";
import { sameSite, siteOf, viewOriginProblems } from "./sites.js";

describe("siteOf", () => {
  it.each([
    ["http://127.0.0.1:4780", "127.0.0.1"],
    ["http://localhost:4781", "localhost"],
    ["http://[::1]:4782", "::1"],
    ["https://console.fundament.io", "fundament.io"],
    ["https://plugin-proxy.fundament.io", "fundament.io"],
    ["https://a.b.example.com:8443", "example.com"],
    ["https://Example.COM.", "example.com"],
  ])("%s is the site %s", (origin, site) => {
    expect(siteOf(origin)).toBe(site);
  });
});

describe("sameSite", () => {
  it.each([
    ["http://127.0.0.1:4780", "http://localhost:4781", false],
    ["http://127.0.0.1:4780", "http://127.0.0.1:4781", true],
    ["http://localhost:4781", "http://localhost:4782", true],
    ["https://console.fundament.io", "https://plugin-proxy.fundament.io", true],
    ["https://console.fundament.io", "https://plugins.fundament-usercontent.io", false],
    ["http://example.com", "https://example.com", true],
    ["http://127.0.0.1:4780", "http://[::1]:4781", false],
  ])("%s and %s: %s", (a, b, same) => {
    expect(sameSite(a, b)).toBe(same);
  });
});

describe("viewOriginProblems", () => {
  it("accepts the defaults on one machine: the console on 127.0.0.1, the proxy and the gateway on localhost", () => {
    expect(viewOriginProblems({ console: "http://127.0.0.1:4780", pluginProxy: "http://localhost:4781", gateway: "http://localhost:4782" })).toEqual([]);
  });

  it.each([
    ["the proxy on the console's site", { console: "http://127.0.0.1:4780", pluginProxy: "http://127.0.0.1:4781", gateway: "http://localhost:4782" }, /different site/],
    ["FUN-17's own names, which share fundament.io", { console: "https://console.fundament.io", pluginProxy: "https://plugin-proxy.fundament.io", gateway: "https://kube.other.io" }, /different site/],
    ["the gateway on the console's site, another port of it", { console: "http://localhost:4780", pluginProxy: "http://127.0.0.1:4781", gateway: "http://localhost:4782" }, /gateway \(http:\/\/localhost:4782\) must be a different site/],
    ["the console opened as localhost beside the defaults", { console: "http://localhost:4780", pluginProxy: "http://localhost:4781", gateway: "http://localhost:4782" }, /plugin proxy.*gateway/],
    ["the gateway on the proxy's origin", { console: "http://127.0.0.1:4780", pluginProxy: "http://localhost:4781", gateway: "http://localhost:4781" }, /three different origins/],
  ])("refuses %s", (_what, o, message) => {
    expect(viewOriginProblems(o).join(" ")).toMatch(message);
  });
});
