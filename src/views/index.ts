/**
 * The views room (seed 002, FUN-17): plugin UIs acting as the user, limited to user ∩ plugin.
 * Kubernetes request attributes and the RBAC matcher; the control plane's tokens (ES256, a
 * rotating key ring, one audience per validator); minting PluginTokens; the gateway with its two
 * upstreams; an installation's runtime and controller routes; gateway decisions in the log.
 * Every face is a `node:http` handler or a Connect route taking its collaborators as ports.
 */

/** Kubernetes request attributes, exactly as kube-apiserver's RequestInfo derives them. */
export { requestInfo, requestInfoFromTarget } from "./request-info.js";
export type { RequestAttributes, ResourceAttributes, NonResourceAttributes, RequestInfoProblem } from "./request-info.js";
/** Go's reading of a request target (path decoding, query splitting), which RequestInfo relies on. */
export { parseRequestTarget } from "./go-url.js";
export type { RequestTarget, TargetProblem } from "./go-url.js";
/** Label and field selectors as apimachinery parses them. */
export { parseLabelSelector, parseFieldSelector, labelsMatch, requiresExactMatch } from "./selectors.js";
export type { LabelRequirement, FieldTerm } from "./selectors.js";
/** The PolicyRule matcher with Kubernetes RBAC semantics. */
export { ruleAllows, rulesAllow, firstAllowing } from "./rbac-match.js";

/** The signing keys: ES256 with key IDs, rotation with overlap, published as a JWKS. */
export { KeyRing, MemoryKeyStore, FileKeyStore, jwksHandler } from "./key-ring.js";
export type { KeyStore, KeyRingOptions, StoredKey } from "./key-ring.js";
/** Tokens: the ES256 signer, the one-audience validator, PluginTokens and user sessions. */
export {
  TokenSigner, TokenValidator, PluginTokenValidator, UserTokenValidator, signPluginToken, signUserToken, bearerToken,
  USER_AUDIENCE, PLUGIN_AUDIENCE, DEFAULT_ISSUER, TOKEN_ALGORITHM, MAX_TOKEN_BYTES, PLUGIN_TOKEN_TTL_SECONDS, PLUGIN_CLAIMS,
} from "./tokens.js";
export type { TokenProblem, Verified, TokenValidatorOptions, PluginTokenClaims, UserIdentity } from "./tokens.js";

/** The ports: installations, can_view, the users' roles. */
export type { Installation, InstallationState, Installations, ViewAccess, UserRoles, SessionVerifier } from "./ports.js";
/** Installations read from the event log, and the definition hash of a manifest. */
export { LogInstallations, definitionHash, parseInstallationId } from "./installations.js";
/** can_view as RBAC over the users' roles, and a fixed table of roles. */
export { rbacViewAccess } from "./view-access.js";
export { StaticUserRoles } from "./user-roles.js";
export type { UserBindings } from "./user-roles.js";

/** Minting PluginTokens: the use case, its error table, the Connect routes and the JSON route, one cap on what either reads. */
export { mintPluginToken, mintRoutes, mintJsonHandler, MINT_ERRORS, MAX_MINT_BYTES } from "./mint.js";
export type { CallerGate, CallerVerdict, MintCaller, MintDeps, MintRequest, MintResult, MintError, MintErrorCode, Minted } from "./mint.js";

/** The gateway, its ordered gates, its limits, its CORS policy, its upstreams and the installation routes. */
export { createGateway, MAX_TARGET } from "./gateway.js";
export type { Gateway, GatewayOptions } from "./gateway.js";
export { GATES, routeOf, isCleanRoutePath } from "./gates.js";
export type { Gate, Refusal as GatewayRefusal, Route as GatewayRouteOf } from "./gates.js";
export { GATEWAY_LIMITS, gatewayLimits, gatewayLimitsProblems, RateBuckets, WatchSlots } from "./limits.js";
export type { GatewayLimits, GatewayLimitsInput, RateLimit, WatchScope } from "./limits.js";
/** What a list or watch is served: a name in a watch's path as a `metadata.name` field selector. */
export { selectionOf, escapeFieldValue } from "./served.js";
export type { Selection, SelectionProblem } from "./served.js";
export { CorsPolicy, CORS_METHODS, CORS_HEADERS, CORS_MAX_AGE } from "./cors.js";
export type { CorsVerdict } from "./cors.js";
export type { Upstream, Review, ForwardContext } from "./upstream.js";
export { WEBSOCKET_TOKEN_PROTOCOL } from "./upstream.js";
export { KubeUpstream, SA_TOKEN_SECONDS, accessReviewSpec, defaultUserSubject, serviceAccountSubject, watchTarget } from "./kube-upstream.js";
export type { KubeUpstreamOptions, KubeSubject } from "./kube-upstream.js";
export { EmbeddedUpstream, DISCOVERY_RULES } from "./embedded-upstream.js";
export { EmbeddedApi, EVENTS_PAGE } from "./embedded-api.js";
export type { EmbeddedRequest } from "./embedded-api.js";
export type { UpstreamEndpoint } from "./proxy.js";
export { createInstallationRoutes, installationStatus } from "./installation-routes.js";
export type { InstallationRoutes, InstallationRoutesOptions, RuntimeEndpoint } from "./installation-routes.js";

/** Gateway decisions: the recorder, and the query `why` and the console show. */
export { StoreDecisionRecorder, recordedDecision } from "./decisions.js";
export type { DecisionRecorder, DecisionInput } from "./decisions.js";
/** A view's recent decisions and their counts (queries of the log, in the projections). */
export { recentDecisions, recentGatewayRecords, summarizeDecisions } from "../projections/index.js";
export type { DecisionSummary, GatewayRecord } from "../projections/index.js";
/** The room's counters (prom-client, registry passed in). */
export { ViewMetrics } from "./metrics.js";

/** The two listeners of the views part, bound before their handlers so that port 0 origins work. */
export { listenViews, originPort, ViewListenerFailed } from "./servers.js";
export type { ViewListeners, ViewHandler, BoundListener } from "./servers.js";
/** Sites as browsers tell them apart, and the check that the plugin proxy is not the console's site. */
export { siteOf, sameSite, viewOriginProblems } from "./sites.js";

/** The plugin proxy: view UIs' files with FUN-17's CSP, the browser SDK, the installation routes. */
export { createPluginProxy, pluginProxyCsp, sdkContextModule, contentTypeOf, checkOrigins, parseAssetPath, IMMUTABLE } from "./plugin-proxy.js";
export type { PluginProxy, PluginProxyOptions, ViewOrigins, BrowserSdk } from "./plugin-proxy.js";
/** UI bundles read by digest through a port, verified, split into files, cached within a byte budget. */
export { UiBundles, UI_BUNDLE_LIMITS } from "./ui-bundles.js";
export type { UiBlobSource, BlobRead, BundleLookup, UiBundlesOptions } from "./ui-bundles.js";
/** The bounded tar reader of UI bundles, and what a clean bundle path is. */
export { readTar, isBundlePath, DEFAULT_TAR_CAPS } from "./tar.js";
export type { TarCaps, TarProblem, TarResult } from "./tar.js";
