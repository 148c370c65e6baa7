/**
 * The instance Secrets a WebAssembly plugin reads in a cluster (docs/adr/0198): the cluster's
 * plugin host reads each Secret the ConfigMap says the instance was granted through the
 * Kubernetes API on every call (a rotated value is used at once), under the Role
 * `openfief-plugin-host-secrets` the operator keeps naming exactly those Secrets. A Secret that is
 * absent, refused or not UTF-8 is left out (the plugin is told the role has no Secret) and logged
 * with its name and the API's status only: never a value, never the client's error (it carries the
 * host's own bearer token).
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { GrantedSecretValues } from "../host/index.js";
import type { HostedSecret } from "../plugins/index.js";
import { NAMESPACE } from "../plugins/index.js";

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });
/** How long one read may take. */
const READ_TIMEOUT_MS = 5_000;

/** Reads the granted Secrets of an instance, keyed by the role the manifest reads each as. */
export type ClusterSecretReader = (plugin: string, granted: readonly HostedSecret[]) => Promise<GrantedSecretValues>;

/** Secrets through the Kubernetes API, in `namespace` (default `openfief`). */
export async function apiSecretReader(kc: KubeConfig, o: { readonly namespace?: string; readonly logger: Logger }): Promise<ClusterSecretReader> {
  const { CoreV1Api } = await import("@kubernetes/client-node");
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = o.namespace ?? NAMESPACE;
  return async (plugin, granted) => {
    const out = new Map<string, Map<string, string>>();
    for (const s of granted) {
      let timer: NodeJS.Timeout | undefined;
      try {
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("timed out")), READ_TIMEOUT_MS);
        });
        const secret = await Promise.race([core.readNamespacedSecret({ name: s.name, namespace }), timeout]);
        const values = new Map<string, string>();
        for (const [k, v] of Object.entries(secret.data ?? {})) values.set(k, STRICT_UTF8.decode(Buffer.from(v, "base64")));
        out.set(s.role ?? s.name, values);
      } catch (err) {
        const status = (err as { code?: unknown }).code;
        const why = typeof status === "number" ? `the API answered ${status}` : err instanceof TypeError ? "a value is not UTF-8 text" : "unreadable";
        o.logger.warn({ plugin, secret: s.name, err: why }, "the plugin's Secret cannot be read; the call goes on without it");
      } finally {
        clearTimeout(timer);
      }
    }
    return out;
  };
}
