/**
 * What each witness of the log last did, kept in a table beside the log (a projection table, on
 * both stores; docs/adr/0155): read by `prove`, `export`, the published checkpoint and the console,
 * written by the witnesses' client (witnesses.ts). Apart from that client so that a command that
 * only reads them loads no HTTP client or metrics.
 */
import type { Cell, EventLog, ProjectionTableSpec, StoredCheckpoint } from "../events/index.js";

/** The table of what each witness last did, keyed by its URL. */
export const WITNESS_TABLE: ProjectionTableSpec = {
  name: "tlog-witnesses",
  version: 1,
  table: "tlog_witnesses",
  columns: [
    { name: "size", type: "INTEGER" },
    { name: "cosignature", type: "TEXT" },
    { name: "witness", type: "TEXT" },
    { name: "status", type: "TEXT" },
    { name: "detail", type: "TEXT" },
    { name: "at", type: "TEXT" },
  ],
};

/** What a witness last did. `size` and `cosignature` are the newest checkpoint it cosigned. */
export interface WitnessState {
  readonly url: string;
  /** The newest size it cosigned (0: none yet). */
  readonly size: number;
  /** Its signature lines on the checkpoint of {@link size} (`— <name> <base64>\n`…), "" when none. */
  readonly cosignature: string;
  /** `<name>+<key ID>` of the cosigner, when known. */
  readonly witness: string;
  /** `cosigned`, `behind` (busy or not yet asked), `refused` (422: inconsistent), `rejected` (it does not take this log), `unreachable`. */
  readonly status: WitnessStatus;
  /** The last answer's one line, when it was not a cosignature. */
  readonly detail: string;
  /** When it last answered or failed (ISO-8601). */
  readonly at: string;
}
export type WitnessStatus = "cosigned" | "behind" | "refused" | "rejected" | "unreachable";

/** The witness states kept beside the log (none when the table was never written). */
export async function witnessStates(store: EventLog): Promise<WitnessState[]> {
  let rows: (readonly [string, Cell[]])[];
  try {
    await store.tables.projections.open([WITNESS_TABLE]);
    rows = await store.tables.projections.rows(WITNESS_TABLE);
  } catch {
    return [];
  }
  return rows.map(([url, c]) => ({
    url, size: Number(c[0] ?? 0), cosignature: String(c[1] ?? ""), witness: String(c[2] ?? ""),
    status: String(c[3] ?? "behind") as WitnessStatus, detail: String(c[4] ?? ""), at: String(c[5] ?? ""),
  }));
}

/** The cosignatures kept, by checkpoint size. */
export interface CosignedCheckpoints {
  /** Sizes some witness cosigned. */
  sizes(): number[];
  /** How many witnesses cosigned the checkpoint of `size`. */
  countFor(size: number): number;
  /** The checkpoint's signed note with every kept cosignature of its size appended. */
  noteFor(c: StoredCheckpoint): string;
}

/** Reads the cosignatures kept beside the log. */
export async function cosignedCheckpoints(store: EventLog): Promise<CosignedCheckpoints> {
  const states = (await witnessStates(store)).filter((s) => s.size > 0 && s.cosignature !== "");
  return {
    sizes: () => [...new Set(states.map((s) => s.size))],
    countFor: (size) => states.filter((s) => s.size === size).length,
    noteFor: (c) => c.note + states.filter((s) => s.size === c.size).map((s) => s.cosignature).join(""),
  };
}

