import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { DirectoryTarget } from "./directory-target.js";
import type { KubeObject } from "./target.js";

const sa = (name: string): KubeObject => ({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: `plugin-${name}`, namespace: "openfief" } });
const cm = (name: string): KubeObject => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `plugin-${name}-config`, namespace: "openfief" }, data: { "config.json": "{}" } });

describe("DirectoryTarget", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "openfief-target-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("writes a plugin's objects as one multi-document YAML file, in order", async () => {
    const t = new DirectoryTarget(dir);
    await t.applyPlugin("nbp-fx", [sa("nbp-fx"), cm("nbp-fx")]);
    const docs = parseAllDocuments(await readFile(join(dir, "plugins", "nbp-fx.yaml"), "utf8")).map((d) => d.toJSON());
    expect(docs).toEqual([sa("nbp-fx"), cm("nbp-fx")]);
    expect(await t.listPlugins()).toEqual(["nbp-fx"]);
  });

  it("replaces a plugin's file whole and leaves no temporary file behind", async () => {
    const t = new DirectoryTarget(dir);
    await t.applyPlugin("a", [sa("a"), cm("a")]);
    await t.applyPlugin("a", [sa("a")]);
    const docs = parseAllDocuments(await readFile(join(dir, "plugins", "a.yaml"), "utf8")).map((d) => d.toJSON());
    expect(docs).toEqual([sa("a")]);
    expect(await readdir(join(dir, "plugins"))).toEqual(["a.yaml"]);
  });

  it("removes a plugin's objects when it stops running, and removing twice is harmless", async () => {
    const t = new DirectoryTarget(dir);
    await t.applyPlugin("a", [sa("a")]);
    await t.removePlugin("a");
    await t.removePlugin("a");
    expect(await t.listPlugins()).toEqual([]);
  });

  it("publishes the allow-lists as the openfief-egress-allowlist ConfigMap with sorted keys", async () => {
    const t = new DirectoryTarget(dir);
    await t.applyAllowLists({ "b-plugin": "api.b.example:443\n", "a-plugin": "" });
    const obj = parse(await readFile(join(dir, "openfief-egress-allowlist.yaml"), "utf8"));
    expect(obj.kind).toBe("ConfigMap");
    expect(obj.metadata).toMatchObject({ name: "openfief-egress-allowlist", namespace: "openfief" });
    expect(Object.keys(obj.data)).toEqual(["a-plugin", "b-plugin"]);
    expect(obj.data["b-plugin"]).toBe("api.b.example:443\n");
  });

  it("publishes the running WebAssembly plugins as the openfief-plugin-host ConfigMap with sorted keys, and empties it", async () => {
    const t = new DirectoryTarget(dir);
    await t.applyPluginHost({ "z-fx": '{"image":"x","module":"y","origins":[]}', "ecb-fx": '{"image":"a","module":"b","origins":[]}' });
    const obj = parse(await readFile(join(dir, "openfief-plugin-host.yaml"), "utf8"));
    expect(obj).toMatchObject({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "openfief-plugin-host", namespace: "openfief" } });
    expect(Object.keys(obj.data)).toEqual(["ecb-fx", "z-fx"]);
    expect(obj.data["ecb-fx"]).toBe('{"image":"a","module":"b","origins":[]}');
    await t.applyPluginHost({});
    expect(parse(await readFile(join(dir, "openfief-plugin-host.yaml"), "utf8")).data).toEqual({});
  });

  it.each(["../escape", "UPPER", "a/b", "", "9starts-with-digit"])("refuses the plugin name %j, which could escape the folder", async (name) => {
    const t = new DirectoryTarget(dir);
    await expect(t.applyPlugin(name, [])).rejects.toThrow(/invalid plugin name/);
  });
});
