import { describe, expect, it } from "vitest";
import { parseBearerChallenge, registryLocation } from "./registry.js";

describe("bearer challenges", () => {
  it.each([
    ['Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull"', { realm: "https://auth.example/token", service: "reg", scope: "repository:a/b:pull" }],
    ["Bearer realm=https://auth.example/token", { realm: "https://auth.example/token" }],
    ['bearer realm="https://a.example/t"', { realm: "https://a.example/t" }],
  ])("reads %s", (header, expected) => {
    expect(parseBearerChallenge(header)).toEqual(expected);
  });

  it.each([[null], ['Basic realm="x"'], ['Bearer service="x"']])("refuses %s", (header) => {
    expect(parseBearerChallenge(header)).toBeUndefined();
  });
});

describe("registry locations", () => {
  it.each([
    [{ registry: undefined, repository: "alpine" }, { registry: "registry-1.docker.io", repository: "library/alpine" }],
    [{ registry: "ghcr.io", repository: "o/p" }, { registry: "ghcr.io", repository: "o/p" }],
  ])("maps %o", (ref, expected) => {
    expect(registryLocation(ref)).toEqual(expected);
  });
});
