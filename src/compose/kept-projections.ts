/**
 * What `up` keeps current as events arrive, so that the console's egress and integrity pages read
 * projections instead of folding the log: the egress counts and the decision check. Each catches up
 * a step at a time shortly after appends (whoever made them: the egress writer thread's are
 * announced too), so a large backlog — a big log the first time `up` opens it — never holds the
 * event loop for more than one step. A page still catches up whatever is left when it is asked.
 */
import type { Logger } from "pino";
import { recheckAddresses } from "../egress/index.js";
import type { EventLog } from "../events/index.js";
import { decisionCheck, egressCounts } from "../projections/index.js";

/** How long after an append the projections catch up (appends close together share one catch-up). */
const AFTER_APPEND_MS = 200;

/** Starts keeping the projections current; returns the function that stops it. */
export function keepProjections(store: EventLog, logger: Logger): () => void {
  const counts = egressCounts(store);
  const check = decisionCheck(store, recheckAddresses);
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  /** A step under way: the next one is scheduled when it ends, so steps never overlap. */
  let running = false;
  const schedule = (ms: number): void => {
    if (timer !== null || running || stopped) return;
    timer = setTimeout(() => void step(), ms);
    timer.unref();
  };
  async function step(): Promise<void> {
    timer = null;
    if (stopped) return;
    running = true;
    let more = false;
    try {
      const head = await store.head();
      await counts.catchUp(1);
      await check.catchUp(1);
      more = (await counts.checkpoint()) < head || (await check.checkpoint()) < head;
    } catch (err) {
      if (!stopped) logger.warn({ err: err instanceof Error ? err.message : String(err) }, "catching up the console's projections failed; the next append retries");
    } finally {
      running = false;
    }
    // More to do: the next step after the event loop has served what waited meanwhile.
    if (more) schedule(0);
  }
  const unsubscribe = store.subscribe(() => schedule(AFTER_APPEND_MS));
  schedule(0);
  return () => {
    stopped = true;
    unsubscribe();
    if (timer !== null) clearTimeout(timer);
  };
}
