/**
 * `BENCH_ONLY=frames npm run bench:store`: the pages one batch of appends writes, by table and
 * index, as the log grows (docs/adr/0148). Grows one log to 10^4 and to `BENCH_EVENTS` events;
 * at each size empties the write-ahead log, appends four batches of 1,000 events of the workload
 * one at a time, and reads each batch's WAL frames back, naming each frame's page by SQLite's
 * `dbstat` (pages past the file's end before the batch are "new pages"). Counts, not timings:
 * they do not depend on the machine's load.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// The SQLite adapter itself: the benchmark reads its file's write-ahead log.
import { openSqliteLog } from "../src/events/store.js";
import { Workload } from "./workload.js";

const PAGE = 4096;
const FRAME_HEADER = 24;
const WAL_HEADER = 32;

/** The page numbers of the frames in a WAL file (its first transaction after a truncate). */
function walPages(file: string): number[] {
  const wal = readFileSync(file);
  const pages: number[] = [];
  for (let off = WAL_HEADER; off + FRAME_HEADER + PAGE <= wal.length; off += FRAME_HEADER + PAGE) pages.push(wal.readUInt32BE(off));
  return pages;
}

/** Checkpoints and truncates the WAL, waiting out the store's own checkpoint thread if it is busy. */
async function emptyWal(store: Awaited<ReturnType<typeof openSqliteLog>>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const [r] = store.database.pragma("wal_checkpoint(TRUNCATE)") as { busy: number; log: number }[];
    if (r !== undefined && r.busy === 0 && r.log === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the write-ahead log could not be emptied");
}

export async function framesBench(): Promise<void> {
  const total = Number(process.env.BENCH_EVENTS ?? 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), "openfief-frames-"));
  const file = join(dir, "frames.db");
  const store = await openSqliteLog({ file });
  const workload = new Workload(1000);
  const lines: string[] = [];
  try {
    for (const size of [10_000, total].filter((s, i, a) => a.indexOf(s) === i)) {
      while (await store.head() < size) {
        for (const b of workload.batches(await store.head(), Math.min(100_000, size - await store.head()), 10_000)) await store.append(b);
      }
      if (store.database.pragma("page_size", { simple: true }) !== PAGE) throw new Error("the frames are read as 4 KiB pages");
      const names = new Map<number, string>();
      for (const r of store.database.prepare("SELECT pageno, name FROM dbstat").all() as { pageno: number; name: string }[]) names.set(r.pageno, r.name);
      const at = await store.head();
      for (let k = 0; k < 4; k++) {
        await emptyWal(store);
        for (const b of workload.batches(await store.head(), 1000, 1000)) await store.append(b);
        const counts = new Map<string, number>();
        const pages = walPages(`${file}-wal`);
        for (const p of pages) {
          const n = names.get(p) ?? "new pages";
          counts.set(n, (counts.get(n) ?? 0) + 1);
        }
        const by = [...counts].sort((a, b) => b[1] - a[1]).map(([n, c]) => `${n} ${c}`).join(", ");
        lines.push(`| ${at.toLocaleString("en-US")} | ${k + 1} | ${pages.length} | ${by} |`);
      }
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nWAL frames (4 KiB pages) written by one batch of 1,000 events, by table and index`);
  console.log(`| events in the log | batch | frames | by table or index |`);
  console.log(`| ---: | ---: | ---: | --- |`);
  for (const l of lines) console.log(l);
}
