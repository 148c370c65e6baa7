/**
 * The signature verdict that stands for an image digest and a manifest, from the log's indexed
 * lookups: its cost does not grow with the log, which is what lets `why` and the reconciler
 * gather a decider's state cheaply.
 */
import type { EventLookups, EventOf } from "../events/index.js";

/**
 * The latest signature verdict for a digest checked against `manifest` (a manifest digest)
 * before `beforeSeq`; when there is none, the latest checked against no manifest (which stands
 * for the digest whatever the manifest, as verdicts recorded before version 2 do).
 */
export async function verdictFor(q: EventLookups, digest: string, manifest: string | null, beforeSeq: number): Promise<EventOf<"signature.verdict"> | null> {
  const exact = manifest === null ? null : await q.signatureVerdict(digest, manifest, beforeSeq);
  return exact ?? q.signatureVerdict(digest, null, beforeSeq);
}
