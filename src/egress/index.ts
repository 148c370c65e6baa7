/** The egress proxy's public surface (issue 6, seed 004). */
export { AddressPolicy, checkAddress, embeddedIPv4, FORBIDDEN_IPV4, FORBIDDEN_IPV6, type AddressRefusal, type AddressVerdict } from "./address.js";
export { ALLOWLISTS_REFUSED_MESSAGE, ErrNotSynced, MemoryAllowListSource, type AllowListSource } from "./allowlist-source.js";
export { CachingTokenReviewer, DEFAULT_TOKEN_CACHE_TTL_MS, InvalidCacheTtlError, TOKEN_CACHE_MAX_ENTRIES } from "./caching-reviewer.js";
export { watchAllowLists, type ConfigMapAllowListSource } from "./configmap-source.js";
export { anonymousEvent, decisionRecord, EGRESS_DECISION_TYPE, EGRESS_REFUSED_TYPE, EGRESS_REFUSALS_TYPE, egressDecisionEvent, egressRefusalsEvent, egressRefusedEvent, isSummary, type AnonymousRecord, type AnonymousRefusalRecord, type AnonymousSummaryRecord, type EgressDecisionRecord } from "./decision.js";
/** The proxy's prom-client counters, registered in a registry the caller passes in. */
export { EgressMetrics, type CacheLookup, type ParserRejection } from "./metrics.js";
/** The rate limit on recording refusals before identity (ADR 0031). */
export { ANONYMOUS_LIMITS, AnonymousRecording, AnonymousRefusalLimit, type AnonymousLimitOptions, type AnonymousRefusal, type AnonymousSink } from "./anonymous-limit.js";
export { dialTcp, startEmbeddedEgress, type EmbeddedEgressOptions } from "./embedded.js";
export { EGRESS_KEY_FILE } from "./key-file.js";
export { DEFAULT_TOKEN_TTL_SECONDS, EMBEDDED_ISSUER, ensureEmbeddedKey, mintEgressToken, readEmbeddedJwks, type EmbeddedAudience, type MintedToken } from "./embedded-key.js";
export { JwksTokenReviewer } from "./jwks-reviewer.js";
export { KubeTokenReviewer } from "./kube-reviewer.js";
export { basicProxyAuthorization, proxyToken, type ProxyAuthError } from "./proxy-auth.js";
export { createEgressProxy, EgressConfigError, PROXY_REALM, refuseUpstreamProxyEnv, TUNNEL_HIGH_WATER_MARK, type ConnectFn, type DialAddress, type EgressProxy, type EgressProxyOptions, type EgressProxyPorts } from "./proxy.js";
/** The pure egress decision: allow-list, then every resolved address (what `check-egress` re-runs). */
export { ADDRESS_RULES, afterResolution, decideAddresses, decideDestination, decideListed, recheckAddresses, type AddressRecheckStep, type AddressChecker, type AddressDecision, type DestinationDecision, type DestinationInputs, type ListVerdict } from "./decide.js";
/** The one refusal table: code → status, reason text, where it is recorded, counter label, refused or failed, Proxy-Status error. */
export { decisionOutcome, REFUSALS, refusal, refusalOutcome, type Recording, type Refusal, type RefusalCode, type RefusalOutcome } from "./refusals.js";
/** The `Proxy-Status` header of every refusal (RFC 9209). */
export { PROXY_ERROR_TYPES, PROXY_NAME, proxyStatusValue, type DnsRcode, type ProxyError, type ProxyErrorType } from "./proxy-status.js";
export { Batcher, BatchingDecisionRecorder, StoreDecisionRecorder, type DecisionRecorder, type EventAppender } from "./recorder.js";
export { DNS_CACHE_MAX_NAMES, DNS_CACHE_MAX_TTL_MS, DnsResolver, type DnsResolverOptions, type ResolveOutcome, type Resolver } from "./resolver.js";
export { reviewWithin, systemClock, type Clock, type ReviewRefusal, type ReviewResult, type TokenReviewer } from "./reviewer.js";
export { parseConnectTarget, type ConnectTarget } from "./target.js";
/** Decisions committed by a worker thread with its own connection (ADR 0033). */
export { CommitError, DEFAULT_COMMIT_TIMEOUT_MS, WorkerDecisionRecorder, type WorkerRecorderOptions } from "./writer.js";
/** A buffered pino destination for the decision log, flushed on a timer and at close (ADR 0033). */
export { bufferedLog, LOG_BUFFER, type BufferedLog, type BufferedLogOptions } from "./decision-log.js";
