import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
/** The egress re-decider over a real store: the allow-list in force and the recorded addresses. */
import { recheckAddresses } from "../../src/egress/index.js";
import { openStore, type EgressDecision, type EventLog } from "../../src/events/index.js";
import { checkDecisions, checkEgress } from "../../src/projections/index.js";

let store: EventLog | undefined;
let dir: string | undefined;
afterEach(async () => {
  await store?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  store = undefined;
  dir = undefined;
});

async function logOf(events: ({ desired: string[] | null } | { deleted: true } | EgressDecision)[]): Promise<EventLog> {
  dir = mkdtempSync(join(tmpdir(), "check-egress-"));
  store = await openStore({ file: join(dir, "events.db") });
  for (const e of events) {
    if ("desired" in e) {
      await store.append([{ stream: "plugin/alpha", type: "workload.desired", actor: "reconciler", data: { name: "alpha", running: e.desired !== null, objects: [], allowList: e.desired ?? [] } }]);
    } else if ("deleted" in e) {
      await store.append([{ stream: "plugin/alpha", type: "plugin.deleted", actor: "cluster", data: { name: "alpha" } }]);
    } else await store.append([{ stream: `egress/${e.plugin}`, type: "egress.decision", actor: "egress-proxy", data: e }]);
  }
  return store;
}

const base = { plugin: "alpha", host: "api.example.com", port: 443, rules: 1 };
const allowed = (address: string, addresses: string[]): EgressDecision => ({ ...base, allowed: true, reason: "listed", address, addresses });
const LIST = { desired: ["api.example.com:443"] };

describe("checkEgress", () => {
  it.each<[string, ({ desired: string[] | null } | { deleted: true } | EgressDecision)[], { field: string; recorded: unknown }[]]>([
    ["reproduces an allowed decision from its list and addresses", [LIST, allowed("8.8.4.4", ["8.8.4.4", "1.1.1.1"])], []],
    ["reproduces an unlisted refusal", [LIST, { ...base, host: "x.example.com", allowed: false, reason: "not_listed" }], []],
    ["reproduces a forbidden-address refusal from the recorded addresses", [LIST, { ...base, allowed: false, reason: "forbidden_address", addresses: ["8.8.4.4", "10.0.0.7"], refusedAddress: "10.0.0.7", addressRefusal: "forbidden_range" }], []],
    ["accepts a deployment's own refusal it cannot see, when the addresses before it pass", [LIST, { ...base, allowed: false, reason: "forbidden_address", addresses: ["8.8.4.4", "9.9.9.9"], refusedAddress: "9.9.9.9", addressRefusal: "denied_cidr" }], []],
    ["reproduces a DNS failure that gave no addresses", [LIST, { ...base, allowed: false, reason: "dns_nxdomain", addresses: [] }], []],
    ["finds an allowed decision for a host not on the list", [{ desired: ["other.example.com:443"] }, allowed("8.8.4.4", ["8.8.4.4"])], [{ field: "list", recorded: "listed" }]],
    ["finds an allowed decision whose addresses include a private one", [LIST, allowed("8.8.4.4", ["8.8.4.4", "10.0.0.7"])], [{ field: "refusal", recorded: null }]],
    ["finds a dialed address that is not the first checked one", [LIST, allowed("1.1.1.1", ["8.8.4.4", "1.1.1.1"])], [{ field: "address", recorded: "1.1.1.1" }]],
    ["finds a forbidden-address refusal of a public address", [LIST, { ...base, allowed: false, reason: "forbidden_address", addresses: ["8.8.4.4"], refusedAddress: "8.8.4.4", addressRefusal: "forbidden_range" }], [{ field: "refusal", recorded: { refusedAddress: "8.8.4.4", addressRefusal: "forbidden_range" } }]],
    ["finds a refusal naming an address DNS never gave", [LIST, { ...base, allowed: false, reason: "forbidden_address", addresses: ["8.8.4.4"], refusedAddress: "10.0.0.7", addressRefusal: "forbidden_range" }], [{ field: "refusal", recorded: { refusedAddress: "10.0.0.7", addressRefusal: "forbidden_range" } }]],
    ["finds a decision allowed after the plugin was deleted and its list replaced", [LIST, { deleted: true }, { desired: ["other.example.com:443"] }, allowed("8.8.4.4", ["8.8.4.4"])], [{ field: "list", recorded: "listed" }]],
    ["accepts a decision that raced one swap of the list", [LIST, { desired: [] }, allowed("8.8.4.4", ["8.8.4.4"])], []],
  ])("%s", async (_what, events, expected) => {
    const s = await logOf(events);
    const r = await checkEgress(s, { recheck: recheckAddresses });
    expect(r.checked).toBe(1);
    expect(r.divergences.map((d) => ({ field: d.field, recorded: d.recorded }))).toEqual(expected);
  });

  it("re-decides only the addresses when the log holds no allow-list (a proxy's own log)", async () => {
    const s = await logOf([allowed("8.8.4.4", ["8.8.4.4"]), allowed("8.8.4.4", ["10.0.0.1"])]);
    const r = await checkEgress(s, { recheck: recheckAddresses });
    expect(r).toMatchObject({ checked: 2, listsUnknown: 2 });
    expect(r.divergences.map((d) => d.seq)).toEqual([2]);
  });

  it("re-decides only the allow-list without the proxy's address step, and counts the rest", async () => {
    const s = await logOf([LIST, allowed("8.8.4.4", ["10.0.0.1"]), { ...base, host: "x.example.com", allowed: true, reason: "listed", address: "8.8.4.4", addresses: ["8.8.4.4"] }]);
    const r = await checkEgress(s);
    expect(r).toMatchObject({ checked: 2, addressesUnchecked: 2 });
    expect(r.divergences.map((d) => [d.seq, d.field])).toEqual([[3, "list"]]);
  });

  it("is part of check-decisions, each divergence named egress.<part>", async () => {
    const s = await logOf([LIST, allowed("8.8.4.4", ["8.8.4.4"]), { ...base, host: "x.example.com", allowed: true, reason: "listed", address: "8.8.4.4", addresses: ["8.8.4.4"] }]);
    const r = await checkDecisions(s, { egressAddresses: recheckAddresses });
    expect(r.checked).toBe(2);
    expect(r.divergences.map((d) => [d.seq, d.name, d.field])).toEqual([[3, "alpha", "egress.list"]]);
  });
});
