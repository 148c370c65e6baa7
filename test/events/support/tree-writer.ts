/**
 * A writer process of the tree's kill test (test/events/tree-kill.slow.test.ts), run with
 * `node --import tsx`: appends batches to a SQLite log and extends its Merkle tree between them,
 * telling the parent the head after each step, until it is killed.
 */
import { openStore } from "../../../src/events/store.js";

const file = process.argv[2] ?? "";
const send = (m: unknown): void => { process.send?.(m); };

async function main(): Promise<void> {
  const log = await openStore({ file });
  for (let n = 0; ; n++) {
    const size = 1 + ((n * 37) % 120);
    await log.append(Array.from({ length: size }, (_, i) => ({
      stream: `egress/w${n % 7}`, type: "egress.decision", actor: "egress",
      data: { plugin: `w${n % 7}`, host: `h${n}-${i}.example`, port: 443, allowed: i % 2 === 0, reason: i % 2 === 0 ? "listed" : "not_listed", rules: 1 },
    })));
    // The tree follows in steps of its own, sometimes behind by several appends.
    if (n % 3 === 0) await log.tree.catchUp();
    send({ head: await log.head(), tree: await log.tree.size() });
  }
}

void main();
