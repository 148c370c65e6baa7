/**
 * The log's public key in the cluster (docs/adr/0192): the operator's leader, which signs
 * checkpoints with the private key from the Secret `openfief-log-key`, publishes the key's public
 * half — the signed-note verifier key and the checkpoints' origin — in the ConfigMap
 * `openfief-log-verifier`, which the console reads (it may `get` that one ConfigMap, nothing
 * more) to serve `/api/v1/log/key` and proofs. The private key never leaves the operator's pods.
 */
import { CoreV1Api } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { NAMESPACE } from "../plugins/index.js";
import { apiError, httpStatus } from "./errors.js";

/** The ConfigMap the log's public key is published in. */
export const LOG_VERIFIER_CONFIGMAP = "openfief-log-verifier";

/** The log's public key as published: the checkpoints' origin and the signed-note verifier key. */
export interface PublishedLogVerifier {
  readonly origin: string;
  readonly verifierKey: string;
}

/** The ConfigMap's keys. */
const ORIGIN_KEY = "origin";
const VERIFIER_KEY = "verifier-key";

/**
 * Writes `key` to the ConfigMap (made when absent, replaced when it says otherwise, left alone when
 * it says the same); returns whether it wrote. Throws a `KubeError` when the API server refuses.
 */
export async function publishLogVerifier(kc: KubeConfig, key: PublishedLogVerifier, namespace: string = NAMESPACE): Promise<boolean> {
  const api = kc.makeApiClient(CoreV1Api);
  const data = { [ORIGIN_KEY]: key.origin, [VERIFIER_KEY]: key.verifierKey };
  const body = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: LOG_VERIFIER_CONFIGMAP, namespace, labels: { "app.kubernetes.io/managed-by": "openfief-operator" } }, data };
  let current: Record<string, string> | null;
  try {
    current = (await api.readNamespacedConfigMap({ name: LOG_VERIFIER_CONFIGMAP, namespace })).data ?? {};
  } catch (err) {
    if (httpStatus(err) !== 404) throw apiError(`read ConfigMap ${namespace}/${LOG_VERIFIER_CONFIGMAP}`, err);
    current = null;
  }
  if (current?.[ORIGIN_KEY] === key.origin && current[VERIFIER_KEY] === key.verifierKey) return false;
  try {
    if (current === null) await api.createNamespacedConfigMap({ namespace, body });
    else await api.replaceNamespacedConfigMap({ name: LOG_VERIFIER_CONFIGMAP, namespace, body });
  } catch (err) {
    throw apiError(`write ConfigMap ${namespace}/${LOG_VERIFIER_CONFIGMAP}`, err);
  }
  return true;
}

/**
 * The published key as the ConfigMap holds it (unchecked: the caller parses it), or null when there
 * is no ConfigMap or it lacks a key. Throws a `KubeError` when the API server cannot be asked.
 */
export async function readLogVerifier(kc: KubeConfig, namespace: string = NAMESPACE): Promise<PublishedLogVerifier | null> {
  const api = kc.makeApiClient(CoreV1Api);
  let data: Record<string, string>;
  try {
    data = (await api.readNamespacedConfigMap({ name: LOG_VERIFIER_CONFIGMAP, namespace })).data ?? {};
  } catch (err) {
    if (httpStatus(err) === 404) return null;
    throw apiError(`read ConfigMap ${namespace}/${LOG_VERIFIER_CONFIGMAP}`, err);
  }
  const origin = data[ORIGIN_KEY];
  const verifierKey = data[VERIFIER_KEY];
  return origin === undefined || verifierKey === undefined ? null : { origin, verifierKey };
}
