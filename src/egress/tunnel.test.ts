import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Tunnels } from "./tunnel.js";

let server: Server;
let port: number;
const accepted: Socket[] = [];
beforeAll(async () => {
  server = createServer((s) => {
    accepted.push(s);
    s.on("error", () => s.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  for (const s of accepted) s.destroy();
  server.close();
});

function socket(): Promise<Socket> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port }, () => resolve(s));
    s.on("error", () => s.destroy());
  });
}

describe("Tunnels", () => {
  it("admits up to its limit, and a released slot frees its place at once", async () => {
    const t = new Tunnels({ maxTunnels: 2, idleMs: 60_000 });
    const [a, b, c] = await Promise.all([socket(), socket(), socket()]);
    const sa = t.admit(a);
    expect(t.admit(b)?.state.phase).toBe("deciding");
    expect(t.admit(c)).toBeUndefined();
    if (sa === undefined) throw new Error("no slot");
    t.release(sa);
    expect(sa.state.phase).toBe("closed");
    expect(t.active).toBe(1);
    expect(t.admit(c)).toBeDefined();
    t.destroyAll();
    expect(t.active).toBe(0);
  });

  it("opens a deciding slot, counts it open, and closes both sockets when one side goes", async () => {
    const opened: number[] = [];
    const t = new Tunnels({ maxTunnels: 4, idleMs: 60_000, onOpenChange: (n) => opened.push(n) });
    const [client, upstream] = await Promise.all([socket(), socket()]);
    const slot = t.admit(client);
    if (slot === undefined) throw new Error("no slot");
    t.start(slot, upstream, Buffer.alloc(0));
    expect(slot.state.phase).toBe("open");
    expect(t.open).toBe(1);
    upstream.destroy();
    await new Promise<void>((r) => client.once("close", () => r()));
    expect(slot.state.phase).toBe("closed");
    expect(opened).toEqual([1, 0]);
    expect(t.active).toBe(0);
  });

  it("never opens a slot that already closed: the upstream is destroyed unused", async () => {
    const t = new Tunnels({ maxTunnels: 4, idleMs: 60_000 });
    const [client, upstream] = await Promise.all([socket(), socket()]);
    const slot = t.admit(client);
    if (slot === undefined) throw new Error("no slot");
    t.release(slot);
    t.start(slot, upstream, Buffer.from("never"));
    expect(upstream.destroyed).toBe(true);
    expect(t.open).toBe(0);
    client.destroy();
  });
});
