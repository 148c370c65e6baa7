/**
 * The CONNECT handshake and its checks, before any allow-list: the request-target, the refusal
 * to chain through another proxy, the Basic token, and who the token belongs to. Each step
 * answers a value; the token never leaves this module's results except to the reviewer.
 */
import { pluginForServiceAccount } from "../plugins/index.js";
import { proxyTokenFrom, type ProxyAuthError } from "./proxy-auth.js";
import { reviewWithin, type ReviewRefusal, type TokenReviewer } from "./reviewer.js";
import { parseConnectTarget, type ConnectTarget } from "./target.js";

/** What a well-formed handshake carries. */
export interface Handshake {
  readonly host: string;
  readonly port: number;
  /** Only for the reviewer: never logged, recorded or answered. */
  readonly token: string;
}

/** Why a handshake is refused before its token is reviewed. */
export type HandshakeRefusal = "malformed_target" | "upstream_proxy_refused" | ProxyAuthError;

/** The head's checks; a refusal carries the target once it parsed. */
export type HandshakeResult =
  | { readonly ok: true; readonly value: Handshake }
  | { readonly ok: false; readonly code: HandshakeRefusal; readonly target?: ConnectTarget };

/** What the handshake reads of a head: the target, whether it asks to chain, its Proxy-Authorization. */
export interface HandshakeFields {
  readonly target: string;
  readonly upstreamProxy: boolean;
  /** The first Proxy-Authorization value, and how many the head held. */
  readonly proxyAuthorization: string | undefined;
  readonly proxyAuthorizations: number;
}

/** Reads a CONNECT's target and token from the fields of its head (`request-head.ts`). Pure. */
export function handshakeOf(head: HandshakeFields): HandshakeResult {
  const target = parseConnectTarget(head.target);
  if (!target.ok) return { ok: false, code: target.code };
  if (head.upstreamProxy) return { ok: false, code: "upstream_proxy_refused", target: target.value };
  const tok = proxyTokenFrom(head.proxyAuthorization, head.proxyAuthorizations);
  if (!tok.ok) return { ok: false, code: tok.code, target: target.value };
  return { ok: true, value: { host: target.value.host, port: target.value.port, token: tok.token } };
}

/** Who asked: a plugin, or why not. */
export type Identity = { readonly ok: true; readonly plugin: string } | { readonly ok: false; readonly code: ReviewRefusal | "not_a_plugin" };

function toIdentity(review: Awaited<ReturnType<typeof reviewWithin>>): Identity {
  if (!review.ok) return { ok: false, code: review.code };
  const who = pluginForServiceAccount(review.username);
  return who.ok ? { ok: true, plugin: who.value } : { ok: false, code: "not_a_plugin" };
}

/**
 * Reviews the token under its deadline and maps the username to a plugin. A synchronous review
 * (a cache hit) is answered synchronously, with no timer and no promise.
 */
export function identify(reviewer: TokenReviewer, token: string, timeoutMs: number): Identity | Promise<Identity> {
  const reviewing = reviewWithin(reviewer, token, timeoutMs);
  return reviewing instanceof Promise ? reviewing.then(toIdentity) : toIdentity(reviewing);
}
