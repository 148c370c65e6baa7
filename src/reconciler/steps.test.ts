import { describe, expect, it } from "vitest";
import type { EventOf, RolloutDecided, WorkloadApplied, WorkloadDesired } from "../events/index.js";
import { parseManifest } from "../plugins/index.js";
import type { Manifest, Topology } from "../plugins/index.js";
import { emptyFacts } from "../projections/index.js";
import type { DeciderSources, DeciderState } from "../projections/index.js";
import { desiredChanged, desiredWorkload, needsApply, nextConfigVerdict, nextDecision } from "./steps.js";

const IMAGE = `registry.example/echo@sha256:${"a".repeat(64)}`;
const TOPOLOGY: Topology = {
  core: { clusterIP: "10.96.0.20", port: 8443, podPort: 8443, podLabels: { "app.kubernetes.io/name": "openfief-core" } },
  proxy: { clusterIP: "10.96.0.30", port: 4750, podPort: 4750, podLabels: { "app.kubernetes.io/name": "openfief-egress-proxy" } },
  pluginPort: 8080,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};
const RAW_MANIFEST = { capabilities: ["connector"], egress: [{ host: "api.example.com" }], secrets: [], dataTiers: [] };
const SCHEMA_MANIFEST = { ...RAW_MANIFEST, configSchema: { type: "object", required: ["region"], properties: { region: { type: "string" } }, additionalProperties: false } };

function manifest(raw: unknown): Manifest {
  const m = parseManifest(raw);
  if (!m.ok) throw new Error("test manifest is invalid");
  return m.value;
}

let seq = 100;
function stored<T extends "config.verdict" | "rollout.decided" | "workload.desired" | "workload.applied">(type: T, data: EventOf<T>["data"], at = ++seq): EventOf<T> {
  return { seq: at, stream: "plugin/echo", version: at, type, schemaVersion: 1, time: "2026-01-01T00:00:00.000Z", actor: "reconciler", causedBy: null, data, prevHash: "", hash: "" } as EventOf<T>;
}

const NO_SOURCES: DeciderSources = { plugin: null, grant: null, config: null, currentVerdict: null, previousDecision: null, previousObserved: null, previousVerdict: null };
const RUNS_CURRENT: RolloutDecided = {
  name: "echo",
  rules: 1,
  inputs: { current: { image: IMAGE, manifest: RAW_MANIFEST }, currentDeployable: true, previous: null, grant: { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] } },
  plan: {
    outcome: "current",
    run: { image: IMAGE, manifest: { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] }, permissions: { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] } },
    pending: { capabilities: [], egress: [], secrets: [], dataTiers: [] },
    reasons: [],
  },
};

describe("step 2, the config verdict", () => {
  it.each<[string, Manifest, unknown, boolean, number]>([
    ["passes a plugin with no config schema", manifest(RAW_MANIFEST), undefined, true, 0],
    ["passes a config its schema admits", manifest(SCHEMA_MANIFEST), { region: "eu" }, true, 0],
    ["refuses a config its schema does not admit, naming the field", manifest(SCHEMA_MANIFEST), { region: 1 }, false, 1],
  ])("%s", (_what, m, config, ok, errors) => {
    const v = nextConfigVerdict("echo", { image: IMAGE, manifest: m, ...(config === undefined ? {} : { config: config as never }) }, null);
    expect(v?.ok).toBe(ok);
    expect(v?.errors).toHaveLength(errors);
    if (errors > 0) expect(v?.errors[0]?.path).toBe("spec.config.region");
  });

  it("appends nothing when the latest verdict for the image says the same", () => {
    const first = nextConfigVerdict("echo", { image: IMAGE, manifest: manifest(RAW_MANIFEST) }, null);
    if (first === null) throw new Error("expected a verdict");
    expect(nextConfigVerdict("echo", { image: IMAGE, manifest: manifest(RAW_MANIFEST) }, stored("config.verdict", first))).toBeNull();
  });
});

describe("step 3, the decision", () => {
  const observed = (): DeciderState => ({ ...emptyFacts("echo"), spec: { image: IMAGE, manifest: RAW_MANIFEST }, verdicts: new Map() });

  it("decides nothing for a plugin the log never observed", () => {
    expect(nextDecision({ ...emptyFacts("echo"), verdicts: new Map() }, NO_SOURCES, null)).toBeNull();
  });

  it("decides for an observed plugin and names the newest input as the cause", () => {
    const plugin = { ...stored("config.verdict", { name: "echo", image: IMAGE, rules: 1, ok: true, errors: [] }, 7), type: "plugin.observed" } as unknown as DeciderSources["plugin"];
    const config = stored("config.verdict", { name: "echo", image: IMAGE, rules: 1, ok: true, errors: [] }, 9);
    const next = nextDecision(observed(), { ...NO_SOURCES, plugin, config }, null);
    expect(next?.data.plan.outcome).toBe("none");
    expect(next?.causedBy).toBe(9);
  });

  it("appends nothing when the plan is the one last recorded", () => {
    const first = nextDecision(observed(), NO_SOURCES, null);
    if (first === null) throw new Error("expected a decision");
    expect(nextDecision(observed(), NO_SOURCES, stored("rollout.decided", first.data))).toBeNull();
  });

  it("still decides for a deleted plugin that had a decision, so it stops", () => {
    const next = nextDecision({ ...emptyFacts("echo"), verdicts: new Map() }, NO_SOURCES, stored("rollout.decided", RUNS_CURRENT));
    expect(next?.data.plan.outcome).toBe("none");
  });
});

describe("step 4, the desired workload", () => {
  it("runs nothing for a plan that runs nothing", () => {
    expect(desiredWorkload("echo", { ...RUNS_CURRENT, plan: { ...RUNS_CURRENT.plan, outcome: "none", run: null } }, TOPOLOGY)).toEqual({
      desired: { name: "echo", running: false, objects: [], allowList: [] }, problem: null,
    });
  });

  it("compiles what a plan runs, with its allow-list", () => {
    const { desired, problem } = desiredWorkload("echo", RUNS_CURRENT, TOPOLOGY);
    expect(problem).toBeNull();
    expect(desired).toMatchObject({ running: true, image: IMAGE, allowList: ["api.example.com:443"] });
    expect(desired.objects.length).toBeGreaterThan(0);
  });

  it("gives a WebAssembly version only its ServiceAccount and a Service selecting the plugin host, with its module and allow-list", () => {
    const module = "1a".repeat(32);
    const { desired, problem } = desiredWorkload("echo", RUNS_CURRENT, TOPOLOGY, module);
    expect(problem).toBeNull();
    expect(desired).toMatchObject({ running: true, image: IMAGE, runtime: "wasm", module, allowList: ["api.example.com:443"] });
    const objects = desired.objects as Array<{ kind: string; metadata: { name: string }; spec?: { selector?: unknown } }>;
    expect(objects.map((o) => [o.kind, o.metadata.name])).toEqual([["ServiceAccount", "plugin-echo"], ["Service", "plugin-echo"]]);
    expect(objects[1]?.spec?.selector).toEqual({ "app.kubernetes.io/name": "openfief-plugin-host" });
  });

  it("runs nothing, and says so, when the recorded version no longer parses", () => {
    const broken = { ...RUNS_CURRENT, plan: { ...RUNS_CURRENT.plan, run: { ...RUNS_CURRENT.plan.run!, image: "not an image" } } };
    expect(desiredWorkload("echo", broken, TOPOLOGY)).toEqual({ desired: { name: "echo", running: false, objects: [], allowList: [] }, problem: { code: "version_unparseable" } });
  });

  it("appends a desired workload only when it differs from the latest", () => {
    const { desired } = desiredWorkload("echo", RUNS_CURRENT, TOPOLOGY);
    expect(desiredChanged(desired, null)).toBe(true);
    expect(desiredChanged(desired, stored("workload.desired", desired))).toBe(false);
    expect(desiredChanged({ ...desired, allowList: [] }, stored("workload.desired", desired))).toBe(true);
  });
});

describe("step 5, applying", () => {
  const desired: WorkloadDesired = { name: "echo", running: false, objects: [], allowList: [] };
  const applied = (ok: boolean, target: string, at: number): EventOf<"workload.applied"> => stored("workload.applied", { name: "echo", target, ok, ...(ok ? {} : { error: "boom" }) } satisfies WorkloadApplied, at);
  it.each<[string, EventOf<"workload.applied"> | null, boolean]>([
    ["applies a desired workload never applied", null, true],
    ["does not apply again what this target applied after it was desired", applied(true, "directory:/x", 20), false],
    ["applies again after a failed apply", applied(false, "directory:/x", 20), true],
    ["applies what another target applied", applied(true, "kubernetes", 20), true],
    ["applies a desired workload newer than the last apply", applied(true, "directory:/x", 5), true],
  ])("%s", (_what, last, expected) => {
    expect(needsApply(stored("workload.desired", desired, 10), last, "directory:/x")).toBe(expected);
  });
});
