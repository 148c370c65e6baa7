/**
 * A real DNS server on 127.0.0.1 (dns2, UDP) that answers the test's names. Each name maps to a
 * behaviour: fixed answers, a different answer per query (rebinding), NXDOMAIN, SERVFAIL, or
 * silence (a timeout). Answers carry TTL 0 (as a rebinding name's do) unless a `ttl` is given.
 */
import dns2 from "dns2";

const { Packet } = dns2;

/** What one name answers. */
export type NameBehaviour =
  | { kind: "answer"; addresses: readonly string[]; ttl?: number }
  | { kind: "sequence"; answers: readonly (readonly string[])[]; ttl?: number }
  | { kind: "nxdomain" }
  | { kind: "servfail" }
  | { kind: "silent" };

export interface TestDnsServer {
  readonly port: number;
  readonly server: string;
  /** How many queries each name (lower case, no trailing dot) received, per type. */
  readonly queries: Map<string, number>;
  set(name: string, behaviour: NameBehaviour): void;
  close(): Promise<void>;
}

export async function startDnsServer(names: Record<string, NameBehaviour>): Promise<TestDnsServer> {
  const table = new Map<string, NameBehaviour>(Object.entries(names).map(([k, v]) => [k.toLowerCase(), v]));
  const seen = new Map<string, number>();
  const counters = new Map<string, number>();
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      if (question === undefined) return send(response);
      const name = question.name.toLowerCase().replace(/\.$/, "");
      seen.set(name, (seen.get(name) ?? 0) + 1);
      const behaviour = table.get(name) ?? { kind: "nxdomain" };
      if (behaviour.kind === "silent") return;
      if (behaviour.kind === "nxdomain" || behaviour.kind === "servfail") {
        (response.header as { rcode: number }).rcode = behaviour.kind === "nxdomain" ? 3 : 2;
        return send(response);
      }
      let addresses: readonly string[];
      if (behaviour.kind === "sequence") {
        // Count per name and type, so the A and AAAA queries of one resolution see the same step.
        const key = `${name}/${question.type}`;
        const n = counters.get(key) ?? 0;
        counters.set(key, n + 1);
        addresses = behaviour.answers[Math.min(n, behaviour.answers.length - 1)] ?? [];
      } else addresses = behaviour.addresses;
      const ttl = behaviour.ttl ?? 0;
      for (const address of addresses) {
        const v6 = address.includes(":");
        if (question.type === Packet.TYPE.A && !v6) {
          response.answers.push({ name: question.name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl, address } as unknown as (typeof response.answers)[number]);
        } else if (question.type === Packet.TYPE.AAAA && v6) {
          response.answers.push({ name: question.name, type: Packet.TYPE.AAAA, class: Packet.CLASS.IN, ttl, address } as unknown as (typeof response.answers)[number]);
        }
      }
      send(response);
    },
  });
  await new Promise<void>((resolve) => {
    server.on("listening", () => resolve());
    void server.listen({ udp: { port: 0, address: "127.0.0.1" } });
  });
  const addrs = server.addresses() as { udp?: { port: number } };
  const port = addrs.udp?.port ?? 0;
  return {
    port,
    server: `127.0.0.1:${port}`,
    queries: seen,
    set: (name, behaviour) => {
      table.set(name.toLowerCase(), behaviour);
      for (const k of [...counters.keys()]) if (k.startsWith(`${name.toLowerCase()}/`)) counters.delete(k);
    },
    close: async () => {
      await server.close();
    },
  };
}
