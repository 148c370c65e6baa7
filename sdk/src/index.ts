/**
 * @openfief/sdk: what a plugin needs to serve OpenFief's connector contract, verify that a call
 * comes from the core, call the core, and reach its institution through the egress proxy.
 */
export * from "./gen/openfief/connector/v1/connector_pb.js";
export { SdkError, type SdkErrorCode } from "./errors.js";
export {
  ENV,
  DEFAULT_TOKEN_FILE,
  DEFAULT_EGRESS_TOKEN_FILE,
  DEFAULT_SA_JWKS_DIR,
  DEFAULT_LISTEN_PORT,
  INSTANCE_AUDIENCE_PREFIX,
  instanceAudience,
  coreUrl,
  listenPort,
  loadConfig,
  readEnvironment,
  type Environment,
  type PluginEnvironment,
} from "./env.js";
export { readConfinedFile, readTokenFile, tokenFile, coreTokenSource, type TokenSource } from "./token-file.js";
export {
  ALLOWED_ALGORITHMS,
  CLOCK_LEEWAY_SECONDS,
  JwksVerifier,
  TokenRefusedError,
  newCoreVerifier,
  publicSigningKeys,
  type CoreVerifier,
  type JwksVerifierOptions,
  type TokenRefusal,
} from "./verifier.js";
export { requireCore, bearerToken, type AnyRequest, type AnyResponse, type RequestHandler, type RefusalListener } from "./require-core.js";
export { receiveFile, type ReceivedFile, type ReceiveFileOptions } from "./receive-file.js";
export {
  serveConnector,
  runConnector,
  connectorRoutes,
  SHUTDOWN_GRACE_MS,
  type ConnectorHandler,
  type ConnectorServer,
  type DeliveryInit,
  type ServeOptions,
} from "./serve.js";
export { createCoreClient, type ConnectorState, type CoreClient, type CoreClientOptions, type CoreIdentity } from "./core-client.js";
export { createEgressClient, egressProxyUrl, EGRESS_PROXY_USER, type EgressClient, type EgressClientOptions } from "./egress.js";
export {
  createConnectorClient,
  type CallTokenSource,
  type ConnectorClient,
  type ConnectorClientOptions,
  type ImportFileInput,
} from "./connector-client.js";
export { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
