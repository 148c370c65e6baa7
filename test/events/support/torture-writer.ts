/**
 * A writer process of the PostgreSQL torture test (test/events/postgres-torture.slow.test.ts), run
 * with `node --import tsx`. Its writers append until the deadline, each append held inside its
 * transaction by the log's test hook (`whileLocked`) for a random while, 5 % of them rolled back
 * by the hook throwing; they report each id they were told committed, and each refused with its
 * code. Roles: `writers` (several writers), `victim` (tells the parent when it holds the write
 * lock, then waits to be killed), `staller` (holds the lock past the server's idle deadline once).
 */
import { openPostgresLog } from "../../../src/events/postgres/index.js";
import type { NewEvent } from "../../../src/events/types.js";

interface Args { url: string; role: "writers" | "victim" | "staller"; proc: number; writers: number }
const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const send = (m: unknown): void => { process.send?.(m); };

const ROLLBACK = "rolled back by the test";
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  let hold: () => Promise<void>;
  if (args.role === "victim") hold = async () => { send({ kind: "holding" }); await sleep(60_000); };
  else if (args.role === "staller") hold = () => sleep(2_500);
  else hold = async () => {
    await sleep(Math.floor(Math.random() * 12));
    if (Math.random() < 0.05) throw new Error(ROLLBACK);
  };
  const log = await openPostgresLog({
    url: args.url, poolSize: args.writers + 1, whileLocked: hold,
    timeouts: { lock: 1_000, idleInTransaction: 1_500, statement: 10_000, connect: 10_000 },
  });
  // Every process is ready (its modules loaded, its log open) before any appends: the parent says when, and for how long.
  send({ kind: "ready" });
  const { runMs, delayMs } = await new Promise<{ runMs: number; delayMs: number }>((resolve) => process.once("message", (m) => resolve(m as { runMs: number; delayMs: number })));
  await sleep(delayMs);
  const until = Date.now() + runMs;
  const committed: string[] = [];
  const refused: { ids: string[]; code: string }[] = [];
  const writer = async (w: number): Promise<void> => {
    const stream = `plugin/w${args.proc}x${w}`;
    for (let n = 0; Date.now() < until; n++) {
      // Mostly a few events (their rows go with the COMMIT); one append in ten more than 8 (its rows go alone, as arrays).
      const size = Math.random() < 0.1 ? 9 + Math.floor(Math.random() * 12) : 1 + Math.floor(Math.random() * 5);
      const ids = Array.from({ length: size }, (_, k) => `${args.proc}-${w}-${n}-${k}`);
      const batch: NewEvent[] = ids.map((id, k) => k % 2 === 0
        ? { stream, type: "plugin.observed", actor: "torture", data: { name: `w${args.proc}x${w}`, spec: { id } } }
        : { stream: "egress/shared", type: "egress.decision", actor: "torture", data: { plugin: "shared", host: "h.example", port: 443, allowed: true, reason: id , rules: 1} });
      send({ kind: "attempt", ids });
      try {
        const expected = { [stream]: await log.version(stream) };
        await log.append(batch, { expected });
        committed.push(...ids);
      } catch (err) {
        const code = (err as { code?: string }).code ?? ((err as Error).message === ROLLBACK ? "rolled_back" : `error: ${String(err)}`);
        refused.push({ ids, code });
      }
      if (args.role === "staller") break;
    }
  };
  await Promise.all(Array.from({ length: args.writers }, (_, w) => writer(w)));
  await log.close();
  send({ kind: "done", committed, refused });
}

main().then(() => process.exit(0), (err: unknown) => { send({ kind: "crashed", error: String(err) }); process.exit(1); });
