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
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { EventStore } from "../events/index.js";
import { parseImageRef } from "../plugins/index.js";
import type { ImageRef } from "../plugins/index.js";
import { ImageSourceError, shippedFile } from "../trust/index.js";
import type { ImageSource } from "../trust/index.js";
import {
  EmbeddedUpstream, FileKeyStore, KeyRing, LogInstallations, PluginTokenValidator, StoreDecisionRecorder, TokenSigner, UiBundles, UserTokenValidator, ViewMetrics,
  checkOrigins, createGateway, createInstallationRoutes, createPluginProxy, jwksHandler, listenViews, mintJsonHandler, mintPluginToken, mintRoutes, rbacViewAccess, signUserToken, viewOriginProblems,
} from "../views/index.js";
import type { BlobRead, MintDeps, MintError, Minted, SessionVerifier, UiBlobSource, Upstream, UserRoles, ViewHandler, ViewOrigins } from "../views/index.js";
import { checkPrivateFile } from "./data-dir.js";
import { AppError } from "./errors.js";
import { consoleUserRoles, JWKS_PATH, KEY_MAX_AGE_SECONDS, VIEW_KEYS_FILE } from "./view-settings.js";
import type { ViewSettings } from "./view-settings.js";

/** Options of {@link startViews}. */
export interface ViewsOptions {
  readonly dataDir: string;
  readonly store: EventStore;
  /** Where an image's blobs are read from (the runtime's). */
  readonly sourceFor: (image: ImageRef) => Promise<{ readonly source: ImageSource; readonly repository: string }>;
  readonly logger: Logger;
  /** The control plane's registry: the views' counters join it. */
  readonly registry: Registry;
  readonly settings: ViewSettings;
  /** Where the two listeners bind (default 127.0.0.1: beyond this machine, put TLS in front). */
  readonly host?: string;
  /** Who may mint: the console's sessions; by default sessions signed by this ring (`signSession`). */
  readonly sessions?: SessionVerifier;
  readonly roles?: UserRoles;
  /** A PluginToken's lifetime, at most 900 s (shorter in a browser test of refreshing). */
  readonly ttlSeconds?: number;
  readonly upstream?: Upstream;
  readonly clock?: () => Date;
}

/** The views part, running. */
export interface RunningViews {
  /** The three origins, with any port 0 replaced by the port bound. */
  readonly origins: ViewOrigins;
  readonly clusterId: string;
  /** Where a view sends Kubernetes requests: `<gateway>/clusters/<cluster>`. */
  readonly gatewayUrl: string;
  /** Where the two listeners are (`127.0.0.1:4781`). */
  readonly listening: { readonly pluginProxy: string; readonly gateway: string };
  /** The ring's public keys. */
  readonly ring: KeyRing;
  /** Mints a PluginToken for the session's user (the use case behind both routes). */
  mint(sessionToken: string | undefined, installationId: unknown): Promise<{ ok: true; value: Minted } | { ok: false; error: MintError }>;
  /** The console's JSON mint route; `sessionToken` reads the session from a request (its cookie). */
  mintJson(sessionToken?: (req: IncomingMessage) => string | undefined): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** `openfief.auth.v1.TokenService` for a Connect router (the session in `Authorization: Bearer`). */
  readonly connectRoutes: (router: ConnectRouter) => void;
  /** A session token signed by this ring, for the default {@link SessionVerifier} (tests, scripts). */
  signSession(user: string, ttlSeconds: number): Promise<string>;
  close(): Promise<void>;
}

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

/** UI bundles read through the runtime's image sources: a refusal is final, an unreachable source is tried again. */
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

/** The settings' origins, checked: each an origin, and the plugin proxy a different site from the console. */
export function checkViewSettings(s: ViewSettings): void {
  try {
    checkOrigins({ console: s.consoleOrigin, pluginProxy: s.pluginProxyOrigin, gateway: s.gatewayOrigin });
  } catch (err) {
    throw new AppError("bad_setting", err instanceof Error ? err.message : String(err));
  }
  if (!/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/.test(s.clusterId)) throw new AppError("bad_setting", "the cluster ID is 1 to 63 lower-case letters, digits, '.' and '-'", "clusterId");
}

function problemsOf(o: ViewOrigins): void {
  const problems = viewOriginProblems(o);
  if (problems.length > 0) throw new AppError("bad_setting", problems.join("; "));
}

/** Starts the views part: keys, mint, gateway and plugin proxy on their origins. */
export async function startViews(o: ViewsOptions): Promise<RunningViews> {
  checkViewSettings(o.settings);
  const keyFile = join(o.dataDir, VIEW_KEYS_FILE);
  checkKeyFile(keyFile);
  const clock = () => (o.clock ?? (() => new Date()))().getTime();
  const ring = await KeyRing.open({ store: new FileKeyStore(keyFile), clock });
  await ring.rotateIfOlderThan(KEY_MAX_AGE_SECONDS);
  const signer = new TokenSigner(ring, undefined, clock);
  const sessions = o.sessions ?? new UserTokenValidator({ jwks: () => ring.jwks(), clock, maxLifetimeSeconds: 24 * 3600 });
  const roles = o.roles ?? consoleUserRoles();
  const installations = new LogInstallations(o.store);
  const access = rbacViewAccess(roles);
  const metrics = new ViewMetrics(o.registry);
  const logger = o.logger.child({ component: "views" });
  const listeners = await listenViews({ host: o.host ?? "127.0.0.1", pluginProxyOrigin: o.settings.pluginProxyOrigin, gatewayOrigin: o.settings.gatewayOrigin, logger });
  try {
    const origins: ViewOrigins = { console: o.settings.consoleOrigin, pluginProxy: listeners.pluginProxy.origin, gateway: listeners.gateway.origin };
    problemsOf(origins);
    const gateway = createGateway({
      clusterId: o.settings.clusterId, tokens: new PluginTokenValidator({ jwks: () => ring.jwks(), clock }), installations, access,
      upstream: o.upstream ?? new EmbeddedUpstream(o.store, roles), installationRoutes: createInstallationRoutes(), recorder: new StoreDecisionRecorder(o.store),
      pluginProxyOrigin: origins.pluginProxy, logger, metrics,
    });
    const jwks = jwksHandler(ring);
    const gatewayFace: ViewHandler = {
      handle: (req, res) => ((req.url ?? "").split("?")[0] === JWKS_PATH ? jwks(req, res) : gateway.handle(req, res)),
      handleUpgrade: (req, socket, head) => gateway.handleUpgrade(req, socket, head),
    };
    const proxy = createPluginProxy({ origins, installations, bundles: new UiBundles(imageBlobSource(o.sourceFor)), sdk: shippedBrowserSdk(), gateway, logger, metrics });
    listeners.serve({ pluginProxy: proxy, gateway: gatewayFace });
    const deps: MintDeps = { users: sessions, installations, access, signer, clusterId: o.settings.clusterId, logger, metrics, ...(o.ttlSeconds === undefined ? {} : { ttlSeconds: o.ttlSeconds }) };
    // A key older than its age is replaced while up runs, too (checked hourly; the old one stays published).
    const rotation = setInterval(() => void ring.rotateIfOlderThan(KEY_MAX_AGE_SECONDS).catch((err: unknown) => logger.error({ err: String(err) }, "views: key rotation failed")), 3_600_000);
    rotation.unref();
    return {
      origins,
      clusterId: o.settings.clusterId,
      gatewayUrl: `${origins.gateway}/clusters/${o.settings.clusterId}`,
      listening: { pluginProxy: listeners.pluginProxy.address, gateway: listeners.gateway.address },
      ring,
      mint: (sessionToken, installationId) => mintPluginToken(deps, { userToken: sessionToken, installationId }),
      mintJson: (sessionToken) => mintJsonHandler(deps, sessionToken === undefined ? {} : { sessionToken }),
      connectRoutes: mintRoutes(deps),
      signSession: async (user, ttlSeconds) => (await signUserToken(signer, user, ttlSeconds)).token,
      async close() {
        clearInterval(rotation);
        await listeners.close();
      },
    };
  } catch (err) {
    await listeners.close();
    throw err;
  }
}
