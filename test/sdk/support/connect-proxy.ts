import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";

/** One CONNECT the test proxy saw. */
export interface ConnectSeen {
  readonly target: string;
  readonly proxyAuthorization: string | undefined;
}

/** A minimal CONNECT proxy for tests: records each CONNECT and tunnels it to `route(target)`. */
export interface TestProxy {
  readonly url: string;
  readonly seen: ConnectSeen[];
  close(): Promise<void>;
}

/**
 * Starts the proxy on 127.0.0.1. `route` maps the requested `host:port` to a local port, so
 * nothing ever dials a public address; an unmapped target gets 403.
 */
export async function startConnectProxy(route: (target: string) => number | undefined): Promise<TestProxy> {
  const seen: ConnectSeen[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((_req, res) => {
    res.writeHead(405).end();
  });
  server.on("connection", (s: net.Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const target = req.url ?? "";
    seen.push({ target, proxyAuthorization: req.headers["proxy-authorization"] });
    const port = route(target);
    if (port === undefined) {
      client.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    const upstream = net.connect(port, "127.0.0.1", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.once("close", () => sockets.delete(upstream));
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
