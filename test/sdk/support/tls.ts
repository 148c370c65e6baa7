import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A self-signed certificate and key for one host name. */
export interface TestCert {
  readonly cert: string;
  readonly key: string;
}

/** Makes a self-signed certificate for `host` with openssl (present on every Debian machine). */
export function selfSignedCert(host: string): TestCert {
  const dir = mkdtempSync(join(tmpdir(), "sdk-tls-"));
  try {
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "2",
      "-subj", `/CN=${host}`, "-addext", `subjectAltName=DNS:${host}`,
    ], { stdio: "ignore" });
    return { cert: readFileSync(join(dir, "cert.pem"), "utf8"), key: readFileSync(join(dir, "key.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
