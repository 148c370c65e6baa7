import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { Server } from "node:http";
import { startHealthServer } from "./health.js";
import type { HealthState } from "./health.js";

const NOW = new Date("2026-11-01T10:00:00Z");

function state(over: Partial<{ synced: boolean; last: Date | null; election: boolean; leader: boolean }>): HealthState {
  const s = { synced: true, last: NOW as Date | null, election: true, leader: false, ...over };
  return { synced: () => s.synced, lastSuccessfulList: () => s.last, electionStarted: () => s.election, isLeader: () => s.leader };
}

describe("the health endpoints", () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((r) => (server === undefined ? r() : server.close(() => r())));
    server = undefined;
  });

  async function get(s: HealthState, path: string): Promise<[number, Record<string, unknown>]> {
    server = await startHealthServer(0, s, { now: () => NOW, maxListAgeMs: 60_000 }, "127.0.0.1");
    const port = (server.address() as AddressInfo).port;
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return [res.status, (await res.json()) as Record<string, unknown>];
  }

  it.each<[string, Parameters<typeof state>[0], string, number]>([
    ["live even before anything is listed", { synced: false, last: null }, "/healthz", 200],
    ["not ready before the first list", { synced: false, last: null }, "/readyz", 503],
    ["not ready before leader election ran", { election: false }, "/readyz", 503],
    ["ready as a standby that listed", { leader: false }, "/readyz", 200],
    ["ready as the leader", { leader: true }, "/readyz", 200],
    ["not ready when the last list is too old", { last: new Date(NOW.getTime() - 120_000) }, "/readyz", 503],
    ["not found elsewhere", {}, "/metrics", 404],
  ])("is %s", async (_name, over, path, code) => {
    const [status, body] = await get(state(over), path);
    expect(status).toBe(code);
    expect(body["ok"]).toBe(code === 200);
  });

  it("names the role when ready", async () => {
    const [, body] = await get(state({ leader: true }), "/readyz");
    expect(body).toMatchObject({ role: "leader", lastSuccessfulList: NOW.toISOString() });
  });
});
