/**
 * The Kubernetes adapter's one error class, with a stable code. Messages name the object and the
 * API's reason, never a token or a Secret's data.
 */
import { ApiException } from "@kubernetes/client-node";

/** Stable codes of {@link KubeError}. */
export const KubeErrorCode = {
  /** The Plugin an object would be owned by is not in the cluster (deleted, or not yet seen). */
  PluginNotFound: "plugin_not_found",
  /** The plugin name is not a valid plugin name, so it cannot key objects or field managers. */
  InvalidPluginName: "invalid_plugin_name",
  /** An object the target was handed is outside the namespace or has no name. */
  InvalidObject: "invalid_object",
  /** The API server refused a request. */
  ApiError: "api_error",
  /** The `openfief-trusted-signers` ConfigMap is present but invalid. */
  InvalidTrustedSigners: "invalid_trusted_signers",
  /** The Lease could not be read or written. */
  LeaseError: "lease_error",
  /** The API server did not answer a review or a write in time (or at all): refused, never allowed. */
  Unreachable: "api_unreachable",
  /** No cluster to talk to: not in a pod, and no (readable) kubeconfig given. */
  NotInCluster: "not_in_cluster",
} as const;

/** One of {@link KubeErrorCode}. */
export type KubeErrorCode = (typeof KubeErrorCode)[keyof typeof KubeErrorCode];

/** An error of the Kubernetes adapter. `status` is the HTTP status when the API server answered. */
export class KubeError extends Error {
  constructor(
    readonly code: KubeErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = "KubeError";
  }
}

/** The HTTP status of a client-node error, or undefined when the server did not answer. */
export function httpStatus(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  if (typeof err === "object" && err !== null) {
    const e = err as { code?: unknown; statusCode?: unknown };
    if (typeof e.statusCode === "number") return e.statusCode;
    if (typeof e.code === "number") return e.code;
  }
  return undefined;
}

/** Wraps a client-node error with what was being done; keeps only the API's message, never headers. */
export function apiError(doing: string, err: unknown): KubeError {
  const status = httpStatus(err);
  let reason = err instanceof Error ? err.message : String(err);
  if (err instanceof ApiException) {
    const body = err.body as unknown;
    let parsed: unknown = body;
    if (typeof body === "string") {
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = undefined;
      }
    }
    const msg = typeof parsed === "object" && parsed !== null ? (parsed as { message?: unknown }).message : undefined;
    reason = typeof msg === "string" ? msg : `HTTP ${err.code}`;
  }
  return status === undefined
    ? new KubeError(KubeErrorCode.ApiError, `${doing}: ${reason}`)
    : new KubeError(KubeErrorCode.ApiError, `${doing}: ${reason}`, status);
}
