/**
 * The egress allow-lists as the proxy reads them: the projected `host:port` entries of every
 * running plugin, encoded with the pure model's codec for the `openfief-egress-allowlist` ConfigMap.
 */
import { encodeAllowLists } from "../plugins/index.js";
import type { EgressHost } from "../plugins/index.js";
import type { AllowListState } from "./folds.js";
import type { Projector } from "./projector.js";

/** Parses a `host:port` entry (the port after the last colon). */
export function entryToHost(entry: string): EgressHost {
  const colon = entry.lastIndexOf(":");
  return { host: entry.slice(0, colon), port: Number(entry.slice(colon + 1)) };
}

/** The ConfigMap data for the projected allow-lists (call `catchUp()` first). */
export async function allowListConfigData(projector: Projector): Promise<Record<string, string>> {
  const lists = new Map<string, EgressHost[]>();
  for (const [plugin, s] of await projector.rows<AllowListState>("egress_allowlists")) lists.set(plugin, s.entries.map(entryToHost));
  return encodeAllowLists(lists);
}
