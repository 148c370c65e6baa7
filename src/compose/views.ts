/**
 * The views part of `openfief up` (seed 002, FUN-17; issues 15 and 16): the control plane's key
 * ring in the data folder, the mint, the gateway on its own origin in front of the embedded API,
 * and the plugin proxy on another, with the gateway's decisions in the log and the views' counters
 * in the control plane's registry. The faces mount the mint (`mint`, `mintJson`, `connectRoutes`);
 * the JWKS is published on the gateway's origin (`/.well-known/jwks.json`), where tokens are
 * verified. `close()` stops the listeners (ending open watches) before anything they read closes.
 * It loads the Connect stack and the views room: `startControlPlane` imports it only when asked
 * for views, so other commands start without them (ADR 0008).
 */
import { readFileSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { EventLog } from "../events/index.js";
import { TokenService } from "../gen/openfief/auth/v1/token_pb.js";
import { parseImageRef } from "../plugins/index.js";
import type { ImageRef } from "../plugins/index.js";
import { ImageSourceError, shippedFile } from "../trust/index.js";
import type { ImageSource } from "../trust/index.js";
import {
  EmbeddedUpstream, FileKeyStore, KeyRing, LogInstallations, PluginTokenValidator, StoreDecisionRecorder, TokenSigner, UiBundles, ViewMetrics,
  checkOrigins, createGateway, createInstallationRoutes, gatewayLimits, gatewayLimitsProblems, createPluginProxy, jwksHandler, listenViews, MAX_MINT_BYTES, mintJsonHandler, mintPluginToken, mintRoutes, rbacViewAccess,
  viewOriginProblems, ViewListenerFailed,
} from "../views/index.js";
import type {
  BlobRead, Gateway, GatewayLimitsInput, MintDeps, SessionVerifier, TokenProblem, UiBlobSource, Upstream, UserRoles, ViewAccess, ViewHandler, ViewOrigins,
} from "../views/index.js";
import { AppError, checkPrivateFile, consoleCallerGate, consoleUserRoles, JWKS_PATH, KEY_MAX_AGE_SECONDS, VIEW_DEFAULTS, VIEW_KEYS_FILE } from "../app/index.js";
import type { ConsoleOrigins, SessionProblem, UserSessionVerifier, ViewFrame, ViewsFace, ViewSettings } from "../app/index.js";
import { listenRefused } from "./listeners.js";

/** Options of {@link startViews}. */
export interface ViewsOptions {
  readonly dataDir: string;
  readonly store: EventLog;
  /** Where an image's blobs are read from (the runtime's). */
  readonly sourceFor: (image: ImageRef) => Promise<{ readonly source: ImageSource; readonly repository: string }>;
  readonly logger: Logger;
  /** The control plane's registry: the views' counters join it. */
  readonly registry: Registry;
  readonly settings: ViewSettings;
  /** Where the two listeners bind (default 127.0.0.1: beyond this machine, put TLS in front). */
  readonly host?: string;
  /** Who may mint: the console's sessions (`sessionVerifier(sessions)`). */
  readonly sessions: SessionVerifier;
  readonly roles?: UserRoles;
  /** A PluginToken's lifetime, at most 900 s (shorter in a browser test of refreshing). */
  readonly ttlSeconds?: number;
  readonly upstream?: Upstream;
  readonly clock?: () => Date;
  /** The gateway's limits, in part (the `gatewayLimits` setting); the rest default. */
  readonly limits?: GatewayLimitsInput;
}

/** The views part, running. Its listeners answer 503 until {@link RunningViews.serve} names the console. */
export interface RunningViews extends ViewsFace {
  /** The three origins (any port 0 replaced by the port bound); the console's is known once served. */
  readonly origins: ViewOrigins;
  readonly gatewayOrigin: string;
  /** Where the two listeners are (`127.0.0.1:4781`). */
  readonly listening: { readonly pluginProxy: string; readonly gateway: string };
  /** The ring's public keys. */
  readonly ring: KeyRing;
  /**
   * Starts serving with the console at `console.origin` (the only page that may frame a view) and
   * answering at `console.origins` (where a mint may come from); refuses (`bad_setting`) a console
   * origin on the plugin proxy's or the gateway's site. Once.
   */
  serve(console: ConsoleAt): ViewOrigins;
  /** The mint's JSON route as a handler (the console mounts the API's own, over {@link ViewsFace.mint}). */
  mintJson(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** `openfief.auth.v1.TokenService` for a Connect router. */
  readonly connectRoutes: (router: ConnectRouter) => void;
  close(): Promise<void>;
}

/** Where the console is: its canonical origin, every origin it answers at, whether over TLS. */
export interface ConsoleAt extends ConsoleOrigins {
  readonly origin: string;
}

/** The mint's port over the console's sessions: a valid `openfief-user` session names its user. */
export function sessionVerifier(sessions: UserSessionVerifier): SessionVerifier {
  return {
    async verify(token) {
      const r = await sessions.verifyUserSession(token ?? undefined);
      if (r.ok) return { ok: true, claims: { sub: r.session.user }, expiresAt: r.session.expiresAt };
      return { ok: false, problem: SESSION_PROBLEMS[r.problem] };
    },
  };
}

/** The console's refusals of a session in the token validators' words. */
const SESSION_PROBLEMS: Readonly<Record<SessionProblem, TokenProblem>> = {
  missing: "missing", too_large: "too_large", malformed: "malformed", wrong_alg: "wrong_alg", bad_signature: "bad_signature",
  wrong_issuer: "wrong_issuer", wrong_audience: "wrong_audience", expired: "expired", not_yet_valid: "not_yet_valid",
  too_long_lived: "lifetime_too_long", bad_claims: "missing_claim", already_used: "malformed", from_before_start: "malformed",
};

/** Refuses a key file others may read or write: whoever reads it can mint a PluginToken for anyone. */
function checkKeyFile(path: string): void {
  checkPrivateFile(path, "the views signing key");
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    return;
  }
  if ((mode & 0o077) !== 0) {
    throw new AppError("bad_setting", `the views signing key ${path} is readable by others (mode ${mode.toString(8).padStart(4, "0")}): run chmod 600 ${path}`);
  }
}

/** The browser SDK as shipped in `sdk/browser/`: its version (from its package.json) and its source. */
export function shippedBrowserSdk(): { version: string; source: Uint8Array } {
  const pkg = JSON.parse(readFileSync(shippedFile("sdk", "browser", "package.json"), "utf8")) as { version?: unknown };
  if (typeof pkg.version !== "string") throw new AppError("bad_setting", "sdk/browser/package.json has no version");
  return { version: pkg.version, source: readFileSync(shippedFile("sdk", "browser", "sdk.js")) };
}

/** UI bundles read through the runtime's image sources: an unreachable source is 503 (try again), any other refusal 502. */
export function imageBlobSource(sourceFor: ViewsOptions["sourceFor"]): UiBlobSource {
  return {
    async read(image, digest, maxBytes): Promise<BlobRead> {
      const ref = parseImageRef(image);
      if (!ref.ok) return { ok: false, retry: false, message: "not an image reference" };
      try {
        const { source, repository } = await sourceFor(ref.value);
        return { ok: true, bytes: await source.blob(repository, digest, maxBytes) };
      } catch (err) {
        if (err instanceof ImageSourceError) return { ok: false, retry: err.code === "unreachable", message: err.message };
        return { ok: false, retry: true, message: err instanceof Error ? err.message : String(err) };
      }
    },
  };
}

/** The settings' origins, checked: each an origin (the console's, when set). */
export function checkViewSettings(s: ViewSettings): void {
  try {
    checkOrigins({ console: s.consoleOrigin ?? VIEW_DEFAULTS.consoleOrigin, pluginProxy: s.pluginProxyOrigin, gateway: s.gatewayOrigin });
  } catch (err) {
    throw new AppError("bad_setting", err instanceof Error ? err.message : String(err));
  }
  if (!/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/.test(s.clusterId)) throw new AppError("bad_setting", "the cluster ID is 1 to 63 lower-case letters, digits, '.' and '-'", "clusterId");
}

/** Refuses views beside a console answering on their site: its cookie would reach them (docs/adr/0095). */
function problemsOf(o: ViewOrigins, consoleOrigins: readonly string[]): void {
  const problems = [...new Set([o.console, ...consoleOrigins].flatMap((c) => viewOriginProblems({ ...o, console: c })))];
  if (problems.length > 0) throw new AppError("bad_setting", problems.join("; "));
}

/** The parts of the views part, before it serves. */
interface Parts {
  readonly o: ViewsOptions;
  readonly ring: KeyRing;
  readonly installations: LogInstallations;
  readonly access: ViewAccess;
  readonly roles: UserRoles;
  readonly metrics: ViewMetrics;
  readonly logger: Logger;
  readonly clock: () => number;
}

/** The gateway (with the JWKS beside it) and the plugin proxy for these origins. */
function handlers(p: Parts, origins: ViewOrigins): { pluginProxy: ViewHandler; gateway: ViewHandler; gatewayCore: Gateway } {
  const { o, ring, installations, access, roles, metrics, logger, clock } = p;
  const gateway = createGateway({
    clusterId: o.settings.clusterId, tokens: new PluginTokenValidator({ jwks: () => ring.jwks(), clock }), installations, access,
    upstream: o.upstream ?? new EmbeddedUpstream(o.store, roles), installationRoutes: createInstallationRoutes(), recorder: new StoreDecisionRecorder(o.store),
    pluginProxyOrigin: origins.pluginProxy, logger, metrics, clock, ...(o.limits === undefined ? {} : { limits: o.limits }),
  });
  const jwks = jwksHandler(ring);
  const proxy = createPluginProxy({ origins, installations, bundles: new UiBundles(imageBlobSource(o.sourceFor)), sdk: shippedBrowserSdk(), gateway, logger, metrics });
  return {
    gatewayCore: gateway,
    pluginProxy: proxy,
    gateway: {
      handle: (req, res) => ((req.url ?? "").split("?")[0] === JWKS_PATH ? jwks(req, res) : gateway.handle(req, res)),
      handleUpgrade: (req, socket, head) => gateway.handleUpgrade(req, socket, head),
    },
  };
}

/** The frame of a plugin's view: only an installation whose running version has a UI bundle. */
async function frameOf(installations: LogInstallations, pluginProxyOrigin: string, name: string): Promise<ViewFrame | null> {
  const i = await installations.byName(name);
  if (i === null || i.ui === null) return null;
  const src = `${pluginProxyOrigin}/plugins/${encodeURIComponent(i.name)}/${i.pluginVersion}/console/${i.ui.entry}`;
  return { src, installationId: i.id, installationName: i.name, state: i.state };
}

/** Starts the views part: keys, the mint, the gateway's and the plugin proxy's listeners (serving once {@link RunningViews.serve} is called). */
export async function startViews(o: ViewsOptions): Promise<RunningViews> {
  checkViewSettings(o.settings);
  const limitProblems = gatewayLimitsProblems(gatewayLimits(o.limits));
  if (limitProblems.length > 0) throw new AppError("bad_setting", `gatewayLimits: ${limitProblems.join("; ")}`, "gatewayLimits");
  const keyFile = join(o.dataDir, VIEW_KEYS_FILE);
  checkKeyFile(keyFile);
  const clock = () => (o.clock ?? (() => new Date()))().getTime();
  const ring = await KeyRing.open({ store: new FileKeyStore(keyFile), clock });
  await ring.rotateIfOlderThan(KEY_MAX_AGE_SECONDS);
  const roles = o.roles ?? consoleUserRoles();
  const parts: Parts = { o, ring, installations: new LogInstallations(o.store), access: rbacViewAccess(roles), roles, metrics: new ViewMetrics(o.registry), logger: o.logger.child({ component: "views" }), clock };
  const listeners = await listenViews({ host: o.host ?? "127.0.0.1", pluginProxyOrigin: o.settings.pluginProxyOrigin, gatewayOrigin: o.settings.gatewayOrigin, logger: parts.logger }).catch((err: unknown) => {
    throw err instanceof ViewListenerFailed ? listenRefused(err.listener, err.address, err.code) : err;
  });
  let served: ConsoleAt | null = null;
  const deps: MintDeps = {
    gate: consoleCallerGate(() => served),
    users: o.sessions, installations: parts.installations, access: parts.access, signer: new TokenSigner(ring, undefined, clock), clusterId: o.settings.clusterId,
    logger: parts.logger, metrics: parts.metrics, ...(o.ttlSeconds === undefined ? {} : { ttlSeconds: o.ttlSeconds }),
  };
  // A key older than its age is replaced while up runs, too (checked hourly; the old one stays published).
  const rotation = setInterval(() => void ring.rotateIfOlderThan(KEY_MAX_AGE_SECONDS).catch((err: unknown) => parts.logger.error({ err: String(err) }, "views: key rotation failed")), 3_600_000);
  rotation.unref();
  const pluginProxyOrigin = listeners.pluginProxy.origin;
  const connectRoutes = mintRoutes(deps);
  let origins: ViewOrigins | null = null;
  let gateway: Gateway | null = null;
  return {
    get origins(): ViewOrigins {
      return origins ?? { console: o.settings.consoleOrigin ?? VIEW_DEFAULTS.consoleOrigin, pluginProxy: pluginProxyOrigin, gateway: listeners.gateway.origin };
    },
    pluginProxyOrigin,
    gatewayOrigin: listeners.gateway.origin,
    clusterId: o.settings.clusterId,
    gatewayUrl: `${listeners.gateway.origin}/clusters/${o.settings.clusterId}`,
    listening: { pluginProxy: listeners.pluginProxy.address, gateway: listeners.gateway.address },
    ring,
    serve(at) {
      if (origins !== null) return origins;
      const o2: ViewOrigins = { console: at.origin, pluginProxy: pluginProxyOrigin, gateway: listeners.gateway.origin };
      try {
        checkOrigins(o2);
      } catch (err) {
        throw new AppError("bad_setting", err instanceof Error ? err.message : String(err));
      }
      problemsOf(o2, at.origins);
      const h = handlers(parts, o2);
      gateway = h.gatewayCore;
      listeners.serve(h);
      origins = o2;
      served = at;
      return o2;
    },
    frame: (name) => frameOf(parts.installations, pluginProxyOrigin, name),
    mint: (caller, installationId) => mintPluginToken(deps, { caller, installationId }),
    mintJson: () => mintJsonHandler(deps),
    connectRoutes,
    connect: connectNodeAdapter({ routes: connectRoutes, readMaxBytes: MAX_MINT_BYTES }),
    connectPrefix: `/${TokenService.typeName}/`,
    async close() {
      clearInterval(rotation);
      await listeners.close();
      // After the listeners: what the refusal budget still counts is recorded before the store closes.
      await gateway?.close();
    },
  };
}
