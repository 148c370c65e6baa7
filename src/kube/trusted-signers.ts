/**
 * The owner's trusted signers, read once at start from the optional ConfigMap
 * `openfief-trusted-signers` (key `signers.json`, seed 000). An absent ConfigMap means no owner
 * signers; a present but invalid one stops the operator from starting, with every problem named,
 * because a half-read list of who is trusted is worse than none.
 */
import { CoreV1Api } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { formatErrors, NAMESPACE, parseOwnerSigners, TRUSTED_SIGNERS_CONFIGMAP } from "../plugins/index.js";
import type { Signer } from "../plugins/index.js";
import { apiError, httpStatus, KubeError, KubeErrorCode } from "./errors.js";

/** The ConfigMap key holding the signers file. */
export const TRUSTED_SIGNERS_KEY = "signers.json";

/**
 * The owner signers in a ConfigMap's data (null when the ConfigMap does not exist).
 * Throws {@link KubeError} `invalid_trusted_signers` naming every bad entry.
 */
export function signersFromConfigMapData(data: Readonly<Record<string, string>> | null): Signer[] {
  if (data === null) return [];
  const text = data[TRUSTED_SIGNERS_KEY];
  if (text === undefined) {
    throw new KubeError(KubeErrorCode.InvalidTrustedSigners, `ConfigMap ${TRUSTED_SIGNERS_CONFIGMAP} has no key ${TRUSTED_SIGNERS_KEY}`);
  }
  const parsed = parseOwnerSigners(text);
  if (!parsed.ok) {
    throw new KubeError(KubeErrorCode.InvalidTrustedSigners, `ConfigMap ${TRUSTED_SIGNERS_CONFIGMAP} key ${TRUSTED_SIGNERS_KEY} is invalid: ${formatErrors(parsed.errors)}`);
  }
  return parsed.value;
}

/** Reads and parses the owner's trusted signers from the cluster. */
export async function readTrustedSigners(kc: KubeConfig, namespace: string = NAMESPACE): Promise<Signer[]> {
  const api = kc.makeApiClient(CoreV1Api);
  let data: Record<string, string> | null;
  try {
    const cm = await api.readNamespacedConfigMap({ name: TRUSTED_SIGNERS_CONFIGMAP, namespace });
    data = cm.data ?? {};
  } catch (err) {
    if (httpStatus(err) !== 404) throw apiError(`read ConfigMap ${namespace}/${TRUSTED_SIGNERS_CONFIGMAP}`, err);
    data = null;
  }
  return signersFromConfigMapData(data);
}
