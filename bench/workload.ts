/**
 * The store benchmark's workload: plugins' lives as the reconciler and the egress proxy record
 * them, 20 events a round. Its decisions are the deciders' honest answers, so `checkDecisions`
 * over a log made of it finds nothing to report (bench/workload.test.ts holds it to that).
 */
import { createHash } from "node:crypto";
import type { NewEvent, RecordedVersion, RolloutDecided, VerdictOutcome } from "../src/events/index.js";
import { decideRollout, deployedBy, emptyFacts } from "../src/projections/index.js";

/** The host every plugin of the workload is granted, and the one it is refused. */
export const LISTED_HOST = "api.example.com";
export const UNLISTED_HOST = "tracker.example.net";
/** What DNS answered for the listed host: an address the proxy's fixed ranges let through. */
const ADDRESS = "93.184.215.14";

const MANIFEST = { capabilities: ["connector"], egress: [{ host: LISTED_HOST, port: 443 }], secrets: [], dataTiers: [] };
const GRANT = { capabilities: ["connector"], egress: [{ host: LISTED_HOST, port: 443 }], secrets: [], dataTiers: [] };
const digestOf = (round: number): string => "sha256:" + createHash("sha256").update(String(round)).digest("hex");
const imageOf = (round: number): string => `registry.example/plugins/p@${digestOf(round)}`;

/** Events in rounds of 20, for `plugins` plugins in turn; remembers what each plugin runs. */
export class Workload {
  readonly #deployed = new Map<string, RecordedVersion | null>();
  #next = 0;

  constructor(readonly plugins = 1000) {}

  /** Rounds made so far. */
  get rounds(): number {
    return this.#next;
  }

  /**
   * One round of a plugin's life, 20 events: observed spec, config verdict, signature verdict,
   * rollout decision (caused by the observation), desired workload, workload applied, egress
   * decisions (every 7th a refusal of a host its allow-list does not hold). `base` is the seq the
   * first event will get (causes are real seqs).
   */
  round(base: number): NewEvent[] {
    const r = this.#next++;
    const name = `p${r % this.plugins}`;
    const stream = `plugin/${name}`;
    const image = imageOf(r);
    const out: NewEvent[] = [
      { stream, type: "plugin.observed", actor: "cluster", data: { name, spec: { image, manifest: MANIFEST } } },
      { stream, type: "config.verdict", actor: "reconciler", data: { name, image, ok: true, errors: [], rules: 1 } },
      { stream: "trust", type: "signature.verdict", actor: "trust", data: { digest: digestOf(r), image, outcome: "verified", signers: [{ name: "acme", kind: "catalog" }], identities: [], trustRoot: "r".repeat(64), catalog: "c".repeat(64), rules: 1 } },
      { stream, type: "rollout.decided", actor: "reconciler", data: this.#decide(name, image, r) },
      { stream, type: "workload.desired", actor: "reconciler", data: { name, running: true, image, objects: [{ kind: "Deployment", metadata: { name: `plugin-${name}` } }], allowList: [`${LISTED_HOST}:443`] } },
      { stream, type: "workload.applied", actor: "reconciler", data: { name, target: "directory", ok: true } },
    ];
    if (r < this.plugins) out.splice(1, 0, { stream, type: "grant.observed", actor: "owner:cli", data: { name, spec: GRANT } });
    for (let i = out.length; i < 20; i++) {
      const data = i % 7 === 0
        ? { plugin: name, host: UNLISTED_HOST, port: 443, allowed: false, reason: "not_listed", rules: 1 }
        : { plugin: name, host: LISTED_HOST, port: 443, allowed: true, reason: "listed", rules: 1, address: ADDRESS, addresses: [ADDRESS] };
      out.push({ stream: `egress/${name}`, type: "egress.decision", actor: "egress", data });
    }
    // Causes name real seqs: the decision is caused by the observation, the workload by the decision…
    const at = (type: string): number => base + out.findIndex((e) => e.type === type);
    const cause: Record<string, number> = { "rollout.decided": at("plugin.observed"), "workload.desired": at("rollout.decided"), "workload.applied": at("workload.desired") };
    return out.map((e) => (cause[e.type] === undefined ? e : { ...e, causedBy: cause[e.type] as number }));
  }

  /** The next rounds, at least `n` events, as batches of about `per` events, seqs counted from `head`. */
  batches(head: number, n: number, per: number): NewEvent[][] {
    const out: NewEvent[][] = [];
    let batch: NewEvent[] = [];
    let seq = head + 1;
    let done = 0;
    while (done < n) {
      const evs = this.round(seq);
      batch.push(...evs);
      seq += evs.length;
      done += evs.length;
      if (batch.length >= per) { out.push(batch); batch = []; }
    }
    if (batch.length > 0) out.push(batch);
    return out;
  }

  /** The decision the decider makes for a granted plugin whose new image is verified (previous: what ran). */
  #decide(name: string, image: string, round: number): RolloutDecided {
    const verdicts = new Map<string, VerdictOutcome>([[digestOf(round), "verified"]]);
    const prev = this.#deployed.get(name) ?? null;
    if (prev !== null) verdicts.set(prev.image.slice(prev.image.indexOf("@") + 1), "verified");
    const d = decideRollout({ ...emptyFacts(name), spec: { image, manifest: MANIFEST }, grant: GRANT, configOk: new Map([[image, true]]), verdicts, deployed: prev });
    this.#deployed.set(name, deployedBy(d.plan));
    return d;
  }
}
