/** Real TLS servers on 127.0.0.1 with a self-signed certificate made for the test. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";

export interface Cert {
  key: string;
  cert: string;
}

/** A self-signed certificate for the given DNS names (and 127.0.0.1). */
export function makeCert(names: readonly string[]): Cert {
  const dir = mkdtempSync(join(tmpdir(), "egress-cert-"));
  try {
    const san = [...names.map((n) => `DNS:${n}`), "IP:127.0.0.1"].join(",");
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1",
      "-subj", `/CN=${names[0] ?? "localhost"}`, "-addext", `subjectAltName=${san}`,
    ], { stdio: "ignore" });
    return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An HTTPS server that answers every request with `hello from <label>`. */
export async function startTlsServer(cert: Cert, label: string): Promise<{ server: Server; port: number; close: () => Promise<void> }> {
  const server = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    const body = `hello from ${label} ${req.url ?? ""}`;
    res.writeHead(200, { "content-type": "text/plain", "content-length": Buffer.byteLength(body) }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
