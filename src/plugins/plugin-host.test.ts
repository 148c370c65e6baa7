import { describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import { decodeHostedPlugins, encodeHostedPlugins, hostOrigin, MAX_HOSTED_PLUGINS, originHost, pluginHostSecretRole, pluginHostTokenRole } from "./plugin-host.js";

const IMAGE = `ghcr.io/openfief/ecb-fx@sha256:${"ab".repeat(32)}`;
const MODULE = "1a".repeat(32);
const entry = (origins: unknown, extra: Record<string, unknown> = {}): string => JSON.stringify({ image: IMAGE, module: MODULE, origins, ...extra });

describe("the plugin-host ConfigMap codec", () => {
  it("encodes each plugin as its image, module and sorted unique origins, and decodes what it encodes", () => {
    const data = encodeHostedPlugins(
      new Map([
        ["ecb-fx", { image: IMAGE, module: MODULE, egress: [{ host: "www.ecb.europa.eu", port: 443 }, { host: "api.example.com", port: 8443 }, { host: "www.ecb.europa.eu", port: 443 }] }],
        ["a-plugin", { image: IMAGE, module: MODULE, egress: [] }],
      ]),
    );
    expect(Object.keys(data)).toEqual(["a-plugin", "ecb-fx"]);
    expect(data["ecb-fx"]).toBe(entry(["https://api.example.com:8443", "https://www.ecb.europa.eu"]));
    const decoded = decodeHostedPlugins(data);
    expect(decoded.errors).toEqual([]);
    expect(decoded.plugins.get("ecb-fx")).toEqual({ image: IMAGE, module: MODULE, origins: ["https://api.example.com:8443", "https://www.ecb.europa.eu"] });
    expect(decoded.plugins.get("a-plugin")?.origins).toEqual([]);
  });

  it("writes the instance Secrets a plugin was granted after its origins, by name, a role only where it differs, and decodes them", () => {
    const data = encodeHostedPlugins(new Map([["ibkr-flex", {
      image: IMAGE, module: MODULE, egress: [], secrets: [{ name: "ibkr-flex-token", role: "flex" }, { name: "ibkr-flex-extra", role: "ibkr-flex-extra" }],
    }]]));
    expect(data["ibkr-flex"]).toBe(entry([], { secrets: [{ name: "ibkr-flex-extra" }, { name: "ibkr-flex-token", role: "flex" }] }));
    const decoded = decodeHostedPlugins(data);
    expect(decoded.errors).toEqual([]);
    expect(decoded.plugins.get("ibkr-flex")?.secrets).toEqual([{ name: "ibkr-flex-extra" }, { name: "ibkr-flex-token", role: "flex" }]);
  });

  it("lets the plugin host get exactly the granted Secrets, and none without a rule when none is granted", () => {
    const decoded = decodeHostedPlugins(encodeHostedPlugins(new Map([
      ["ibkr-flex", { image: IMAGE, module: MODULE, egress: [], secrets: [{ name: "ibkr-flex-token", role: "flex" }] }],
      ["other", { image: IMAGE, module: MODULE, egress: [], secrets: [{ name: "a-secret" }, { name: "ibkr-flex-token" }] }],
      ["ecb-fx", { image: IMAGE, module: MODULE, egress: [] }],
    ])));
    expect(pluginHostSecretRole(decoded.plugins, "openfief").rules).toEqual([{ apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["a-secret", "ibkr-flex-token"] }]);
    expect(pluginHostSecretRole(new Map(), "openfief")).toMatchObject({ metadata: { name: "openfief-plugin-host-secrets", namespace: "openfief" }, rules: [] });
  });

  it.each([
    ["an empty list of Secrets", entry([], { secrets: [] }), "ecb-fx.secrets"],
    ["a Secret that is not a Secret name", entry([], { secrets: [{ name: "Not/A Secret" }] }), "ecb-fx.secrets[0].name"],
    ["a role that is not a Secret name", entry([], { secrets: [{ name: "s", role: "" }] }), "ecb-fx.secrets[0].role"],
    ["unsorted Secrets", entry([], { secrets: [{ name: "b" }, { name: "a" }] }), "ecb-fx"],
    ["a role equal to the name", entry([], { secrets: [{ name: "a", role: "a" }] }), "ecb-fx"],
    ["a Secret with another key", entry([], { secrets: [{ name: "a", value: "x" }] }), "ecb-fx"],
    ["an unpinned image", JSON.stringify({ image: "ghcr.io/openfief/ecb-fx:latest", module: MODULE, origins: [] }), "ecb-fx.image"],
    ["an upper-case module digest", JSON.stringify({ image: IMAGE, module: MODULE.toUpperCase(), origins: [] }), "ecb-fx.module"],
    ["an http origin", entry(["http://www.ecb.europa.eu"]), "ecb-fx.origins[0]"],
    ["an origin with a path", entry(["https://www.ecb.europa.eu/x"]), "ecb-fx.origins[0]"],
    ["an origin that writes port 443", entry(["https://www.ecb.europa.eu:443"]), "ecb-fx.origins[0]"],
    ["an IP literal origin", entry(["https://10.0.0.1"]), "ecb-fx.origins[0]"],
    ["unsorted origins", entry(["https://b.example", "https://a.example"]), "ecb-fx"],
    ["repeated origins", entry(["https://a.example", "https://a.example"]), "ecb-fx"],
    ["another key", entry([], { secret: "x" }), "ecb-fx"],
    ["keys out of order", JSON.stringify({ module: MODULE, image: IMAGE, origins: [] }), "ecb-fx"],
    ["spaces in the JSON", JSON.stringify({ image: IMAGE, module: MODULE, origins: [] }, null, 1), "ecb-fx"],
    ["a duplicate key", `{"image":"${IMAGE}","image":"${IMAGE}","module":"${MODULE}","origins":[]}`, "ecb-fx.image"],
    ["not JSON", "{", "ecb-fx"],
    ["a list", "[]", "ecb-fx"],
  ])("leaves out an entry with %s and names it, serving the others", (_what, value, path) => {
    const decoded = decodeHostedPlugins({ "ecb-fx": value, other: entry([]) });
    expect(decoded.plugins.has("ecb-fx")).toBe(false);
    expect(decoded.plugins.has("other")).toBe(true);
    expect(decoded.errors.length).toBeGreaterThan(0);
    expect(decoded.errors[0]?.code).toBe(ErrorCode.InvalidHostedPlugin);
    expect(decoded.errors.map((e) => e.path)).toContain(path);
  });

  it("refuses an entry longer than any valid one before parsing it", () => {
    const decoded = decodeHostedPlugins({ "ecb-fx": `{"image":"${"x".repeat(100_000)}"}` });
    expect(decoded.plugins.size).toBe(0);
    expect(decoded.errors).toEqual([expect.objectContaining({ code: ErrorCode.TooLarge, path: "ecb-fx" })]);
  });

  it("refuses more plugins than the host runs, and a key that is not a plugin name", () => {
    const many: Record<string, string> = {};
    for (let i = 0; i <= MAX_HOSTED_PLUGINS; i++) many[`p${i}`] = entry([]);
    expect(decodeHostedPlugins(many).errors[0]?.code).toBe(ErrorCode.TooLarge);
    expect(decodeHostedPlugins({ "Not A Plugin": entry([]) }).plugins.size).toBe(0);
  });

  it.each([[undefined], [null]])("reads %j as no plugins", (data) => {
    expect(decodeHostedPlugins(data)).toEqual({ plugins: new Map(), errors: [] });
  });

  it.each([["a string"], [42], [[entry([])]], [{ "ecb-fx": 1 }]])("never throws on %j, and serves nothing from it", (data) => {
    const decoded = decodeHostedPlugins(data);
    expect(decoded.plugins.size).toBe(0);
    expect(decoded.errors.length).toBeGreaterThan(0);
  });

  it.each([
    [{ host: "www.ecb.europa.eu", port: 443 }, "https://www.ecb.europa.eu"],
    [{ host: "api.example.com", port: 8443 }, "https://api.example.com:8443"],
  ])("writes %j as the origin %s and reads it back", (h, origin) => {
    expect(hostOrigin(h)).toBe(origin);
    expect(originHost(origin)).toEqual(h);
  });
});

describe("the plugin host's token Role", () => {
  it("names exactly the running plugins' ServiceAccounts, sorted, and skips what is not a plugin name", () => {
    expect(pluginHostTokenRole(["z-fx", "ecb-fx", "ecb-fx", "../x"], "openfief", "plugin-").rules).toEqual([
      { apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"], resourceNames: ["plugin-ecb-fx", "plugin-z-fx"] },
    ]);
  });

  it("has no rule at all without plugins, since a rule without names would cover every ServiceAccount", () => {
    expect(pluginHostTokenRole([], "openfief", "plugin-").rules).toEqual([]);
  });
});
