/**
 * A real plugin host for tests: a real event store in a temp dir, a pino logger whose lines are
 * captured, short limits (a 500 ms time limit keeps the suite fast).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { openStore, type EventLog } from "../../../src/events/index.js";
import { createPluginHost, type PluginHost, type PluginHostOptions } from "../../../src/host/index.js";

/** The time limit of the host's tests. */
export const TEST_TIME_MS = 500;

export interface TestHost {
  readonly host: PluginHost;
  readonly store: EventLog;
  /** Every log line, parsed. */
  readonly logs: Record<string, unknown>[];
  /** Every log line as written. */
  readonly raw: string[];
  readonly dir: string;
  close(): Promise<void>;
}

/** Starts a host over a fresh store; `options` override the test defaults. */
export async function startHost(options: Partial<Omit<PluginHostOptions, "store" | "logger">> = {}): Promise<TestHost> {
  const dir = mkdtempSync(join(tmpdir(), "openfief-host-"));
  const store = await openStore({ file: join(dir, "events.db") });
  const raw: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line === "") continue;
        raw.push(line);
        logs.push(JSON.parse(line) as Record<string, unknown>);
      }
      cb();
    },
  });
  const host = createPluginHost({
    sealedDir: join(dir, "sealed"),
    ...options,
    store,
    logger: pino({ level: "debug" }, sink),
    limits: { time: TEST_TIME_MS, ...(options.limits ?? {}) },
  });
  return {
    host, store, logs, raw, dir,
    async close() {
      await host.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Counts timer ticks until stopped: proof that the event loop kept turning. */
export function ticker(ms = 10): { stop(): number } {
  let ticks = 0;
  const t = setInterval(() => ticks++, ms);
  return {
    stop() {
      clearInterval(t);
      return ticks;
    },
  };
}
