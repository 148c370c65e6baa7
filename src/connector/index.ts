/**
 * The connector server: the face through which the core calls a plugin host's connectors
 * (`openfief.connector.v1.ConnectorService` over Connect, gRPC and gRPC-Web, ADR 0081), each call
 * carrying the core's token. It stands beside src/server (the owner's face) and, like it, imports
 * only the application layer; src/compose starts it with the ports it serves.
 */
export { MAX_IMPORT_BYTES, serveConnectors, SHUTDOWN_GRACE_MS } from "./connector-server.js";
export type { ConnectorPorts, ConnectorServer } from "./connector-server.js";
