/**
 * The plugin host's own metrics (prom-client, into the registry it is given: the control plane's
 * `/metrics` in `openfief up`, the health port's in a cluster): calls waiting for an instance now,
 * how long calls waited and ran, calls refused because their module's queue was full, and hard
 * stops (sandbox processes killed because an instance did not stop in time). No label names a
 * plugin or a module: the sets stay bounded.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** How a call's run on an instance ended. */
export type RunEnd = "returned" | "failed" | "timed_out";

const SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The host's metrics in one registry. */
export class PluginHostMetrics {
  readonly queueWait: Histogram;
  readonly run: Histogram<"result">;
  readonly busy: Counter;
  readonly hardStops: Counter;
  readonly #depth: Gauge;

  /** @param depth how many calls wait for an instance now, read at each scrape */
  constructor(registry: Registry, depth: () => number = () => 0) {
    const registers = [registry];
    this.#depth = new Gauge({
      name: "openfief_plugin_host_queue_depth", help: "calls waiting for an instance of their module now", registers,
      collect: () => this.#depth.set(depth()),
    });
    this.queueWait = new Histogram({ name: "openfief_plugin_host_queue_wait_seconds", help: "time a call waited for an instance of its module (a cold start included)", registers, buckets: SECONDS });
    this.run = new Histogram({ name: "openfief_plugin_host_run_seconds", help: "time a call ran on its instance, by result (returned, failed, timed_out)", labelNames: ["result"], registers, buckets: SECONDS });
    this.busy = new Counter({ name: "openfief_plugin_host_busy_total", help: "calls refused (plugin_busy) because every instance of their module was busy and its queue was full", registers });
    this.hardStops = new Counter({ name: "openfief_plugin_host_hard_stops_total", help: "sandbox processes killed because an instance did not stop in time", registers });
    this.busy.inc(0);
    this.hardStops.inc(0);
  }
}
