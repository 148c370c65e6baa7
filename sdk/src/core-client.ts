import { Agent, Headers, fetch as undiciFetch, type Dispatcher, type RequestInit, type Response } from "undici";
import { coreUrl, type Environment } from "./env.js";
import { SdkError } from "./errors.js";
import { coreTokenSource, type TokenSource } from "./token-file.js";

/** Options for createCoreClient; everything defaults to the operator's environment. */
export interface CoreClientOptions {
  /** The core's base URL; OPENFIEF_CORE_ADDRESS by default. */
  readonly baseUrl?: string | URL;
  /** The `openfief-core` token; OPENFIEF_TOKEN_FILE (re-read on every request) by default. */
  readonly token?: TokenSource;
  /** The environment to read; process.env by default. */
  readonly env?: Environment;
  /** The connection pool; a plain undici Agent by default, never a proxy. */
  readonly dispatcher?: Dispatcher;
}

/** Who the calling instance is, as the core knows it (`GET /core/v1/whoami`). */
export interface CoreIdentity {
  readonly instance: string;
  /** `system:serviceaccount:openfief:plugin-<instance>`. */
  readonly serviceAccount: string;
  /** The image (or module artifact) that runs. */
  readonly image: string;
  /** The instance's effective permissions: what both its manifest and its grant hold. */
  readonly permissions: {
    readonly capabilities: readonly string[];
    readonly egress: readonly { readonly host: string; readonly port: number }[];
    readonly secrets: readonly { readonly name: string; readonly mountPath: string; readonly role?: string }[];
    readonly dataTiers: readonly string[];
  };
}

/** Where a connector's syncs stand (`GET /core/v1/connector/state`). */
export interface ConnectorState {
  readonly instance: string;
  /** What the next sync is passed: the last synced delivery's watermark, `""` from the start. */
  readonly watermark: string;
  readonly lastSync: { readonly batchId: string; readonly at: string; readonly digest: string; readonly counts: Readonly<Record<string, number>> } | null;
  readonly lastFailure: { readonly batchId: string; readonly at: string; readonly code: string; readonly attempt: number } | null;
  readonly latestDelivery: { readonly batchId: string; readonly kind: "sync" | "import"; readonly digest: string; readonly recordedAt: string; readonly counts: Readonly<Record<string, number>> } | null;
}

/** An HTTP client for the core (seed 000, CoreHTTPClient). */
export interface CoreClient {
  /** The core's base URL. */
  readonly baseUrl: URL;
  /** Sends a request to a path on the core with the current `openfief-core` token. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Who this instance is and its effective permissions; throws `core_refused` (with the core's code) when refused. */
  whoAmI(): Promise<CoreIdentity>;
  /** This connector's watermark, last sync and latest delivery; throws `core_refused` when refused (`capability_not_held` for a non-connector). */
  connectorState(): Promise<ConnectorState>;
  /** Closes idle connections. */
  close(): Promise<void>;
}

/** The largest answer of the core the client reads. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** GETs a core path and reads its JSON; a refusal becomes `core_refused` with the core's code and status. */
async function answer(fetchCore: (path: string) => Promise<Response>, path: string): Promise<unknown> {
  const res = await fetchCore(path);
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > MAX_ANSWER_BYTES) {
    await res.body?.cancel();
    throw new SdkError("core_refused", `the core's answer to ${path} is over ${MAX_ANSWER_BYTES} bytes`);
  }
  const text = await res.text();
  if (text.length > MAX_ANSWER_BYTES) throw new SdkError("core_refused", `the core's answer to ${path} is over ${MAX_ANSWER_BYTES} bytes`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SdkError("core_refused", `the core answered ${path} with ${res.status} and no JSON`);
  }
  if (res.status === 200) return body;
  const refusal = body as { code?: unknown; message?: unknown };
  const code = typeof refusal.code === "string" ? refusal.code.slice(0, 64) : "unknown";
  const message = typeof refusal.message === "string" ? refusal.message.slice(0, 300) : "";
  throw new SdkError("core_refused", `the core refused ${path} (${res.status} ${code})${message === "" ? "" : `: ${message}`}`, { status: res.status, refusal: code });
}

/**
 * A client for the core that adds the current `openfief-core` token as a bearer token on every
 * request and never uses a proxy: it dials the core's ClusterIP directly (NO_PROXY holds it).
 * Requests may only go to the core's own origin, so the token never leaves for anywhere else.
 */
export function createCoreClient(options: CoreClientOptions = {}): CoreClient {
  const env = options.env ?? process.env;
  const base = options.baseUrl !== undefined ? new URL(options.baseUrl) : coreUrl(env);
  const token = options.token ?? coreTokenSource(env);
  const ownDispatcher = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? new Agent();
  const fetchCore = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(path, base);
    if (url.origin !== base.origin) throw new SdkError("core_wrong_origin", "a core request may only go to the core");
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${await token()}`);
    // Redirects are not followed: a redirect elsewhere would carry the token away.
    return undiciFetch(url, { ...init, headers, dispatcher, redirect: "manual" });
  };
  return {
    baseUrl: base,
    fetch: fetchCore,
    whoAmI: async () => (await answer(fetchCore, "/core/v1/whoami")) as CoreIdentity,
    connectorState: async () => (await answer(fetchCore, "/core/v1/connector/state")) as ConnectorState,
    async close() {
      if (ownDispatcher) await dispatcher.close();
    },
  };
}
