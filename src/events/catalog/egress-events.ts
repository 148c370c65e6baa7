/** The egress proxy's decisions. Stream `egress/<plugin>`. */
import type { EventRegistry } from "../registry.js";
import { boolean, definer, inNamedStream, name, nonEmpty, opt, port, req, str } from "./schema.js";

/** `egress.decision`: one allow or deny of the egress proxy. */
export interface EgressDecision { plugin: string; host: string; port: number; allowed: boolean; reason: string; address?: string }

/** Data type of each egress event type. */
export interface EgressEventData {
  "egress.decision": EgressDecision;
}

export function defineEgressEvents(r: EventRegistry): void {
  const define = definer<EgressEventData>(r);
  define({
    type: "egress.decision", version: 1, stream: inNamedStream("egress", "plugin"),
    fields: { plugin: req(name), host: req(nonEmpty), port: req(port), allowed: req(boolean), reason: req(str), address: opt(str) },
  });
}
