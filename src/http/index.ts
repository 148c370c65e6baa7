/**
 * The HTTP plumbing every listener shares (a leaf: it imports no room): the listeners' limits,
 * request bodies declared by their routes and refused (415, 413) before they are read, the one body
 * reader, JSON answers, and each request's child logger with its request id.
 */

/** The limits of every listener, and servers created with them. */
export { createListener, http2Settings, LISTENER_LIMITS, listenerLimits, listenerOptions, overrideListenerLimits, withHttp2Limits, withLimits } from "./limits.js";
export type { ListenerLimits } from "./limits.js";
/** What a route takes as its body, its refusal by the headers alone, and the one reader. */
export { hasBody, mediaType, NO_BODY, readBody, refuseBody } from "./body.js";
export type { BodyRead, BodyRefusal, BodySpec } from "./body.js";
/** JSON answers. */
export { sendJson } from "./answer.js";
/** Each request's child logger, with its request id. */
export { requestId, requestLogger } from "./request-log.js";
