/**
 * A tiny OCI registry on 127.0.0.1 (node:http) for the misbehaviours a real one will not show:
 * wrong bytes under a digest, huge or malformed referrer indexes, a referrers API, bearer auth.
 * It records every request (path and Authorization header) so tests can assert on them.
 */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeRegistryOptions {
  /** Manifests by digest or tag: bytes and content type. */
  manifests?: Map<string, { bytes: Uint8Array; mediaType: string }>;
  blobs?: Map<string, Uint8Array>;
  /** When set, answers /v2/<name>/referrers/<digest> with this body (else 404). */
  referrers?: (digest: string) => { bytes: Uint8Array; headers?: Record<string, string> } | undefined;
  /** When set, every /v2/ request needs `Authorization: Bearer <token>`; the realm is this server's /token. */
  bearer?: { token: string; service: string };
}

export interface FakeRegistry {
  readonly host: string;
  readonly requests: { path: string; authorization?: string }[];
  close(): Promise<void>;
}

export async function startFakeRegistry(opts: FakeRegistryOptions): Promise<FakeRegistry> {
  const requests: { path: string; authorization?: string }[] = [];
  let host = "";
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? "/", "http://x");
    const auth = req.headers.authorization;
    requests.push({ path: url.pathname + url.search, ...(auth === undefined ? {} : { authorization: auth }) });
    if (url.pathname === "/token") {
      if (opts.bearer === undefined || url.searchParams.get("service") !== opts.bearer.service) {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token: opts.bearer.token }));
      return;
    }
    if (opts.bearer !== undefined && auth !== `Bearer ${opts.bearer.token}`) {
      const m = /^\/v2\/(.+)\/(manifests|blobs|referrers)\//.exec(url.pathname);
      const scope = m === null ? "" : `,scope="repository:${m[1]}:pull"`;
      res
        .writeHead(401, { "www-authenticate": `Bearer realm="http://${host}/token",service="${opts.bearer.service}"${scope}` })
        .end();
      return;
    }
    const manifest = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(url.pathname);
    if (manifest !== null) {
      const m = opts.manifests?.get(manifest[2] ?? "");
      if (m === undefined) res.writeHead(404).end();
      else res.writeHead(200, { "content-type": m.mediaType, "content-length": String(m.bytes.length) }).end(Buffer.from(m.bytes));
      return;
    }
    const blob = /^\/v2\/(.+)\/blobs\/([^/]+)$/.exec(url.pathname);
    if (blob !== null) {
      const b = opts.blobs?.get(blob[2] ?? "");
      if (b === undefined) res.writeHead(404).end();
      else res.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.from(b));
      return;
    }
    const referrers = /^\/v2\/(.+)\/referrers\/([^/]+)$/.exec(url.pathname);
    if (referrers !== null && opts.referrers !== undefined) {
      const r = opts.referrers(referrers[2] ?? "");
      if (r === undefined) res.writeHead(404).end();
      else res.writeHead(200, { "content-type": "application/vnd.oci.image.index.v1+json", ...r.headers }).end(Buffer.from(r.bytes));
      return;
    }
    res.writeHead(404).end();
  };
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    host,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
