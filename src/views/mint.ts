/**
 * Minting PluginTokens (seed 002, "Delivering the token", "Architecture"): the use case, and its
 * two faces, the Connect RPC `openfief.auth.v1.TokenService/MintPluginToken` and the console's
 * JSON route. Both faces hand the use case the caller's headers, and the console's rule ({@link
 * CallerGate}) reads the session and judges the `Origin` the same way for both. Only a user's
 * session token may mint (a PluginToken has the wrong audience, so it cannot mint another); then
 * the request's origin, then can_view, then the installation. Status codes per FUN-12 as FUN-17
 * states them, from one table ({@link MINT_ERRORS}): no or invalid session 401, can_view false
 * 403, no installation 404, an installation being deleted (or not running a view) 409 /
 * FailedPrecondition (docs/adr/0025).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import type { Logger } from "pino";
import { TokenService } from "../gen/openfief/auth/v1/token_pb.js";
import { readBody, sendJson } from "./http.js";
import { parseInstallationId } from "./installations.js";
import type { ViewMetrics } from "./metrics.js";
import type { Installation, Installations, SessionVerifier, ViewAccess } from "./ports.js";
import { PLUGIN_TOKEN_TTL_SECONDS, signPluginToken } from "./tokens.js";
import type { TokenProblem, TokenSigner } from "./tokens.js";

/** Stable error codes of the mint, each with its HTTP status (JSON route) and Connect code. */
export const MINT_ERRORS = {
  unauthenticated: { status: 401, connect: Code.Unauthenticated },
  invalid_argument: { status: 400, connect: Code.InvalidArgument },
  permission_denied: { status: 403, connect: Code.PermissionDenied },
  not_found: { status: 404, connect: Code.NotFound },
  failed_precondition: { status: 409, connect: Code.FailedPrecondition },
  unavailable: { status: 503, connect: Code.Unavailable },
} as const;

/** A mint refusal's code. */
export type MintErrorCode = keyof typeof MINT_ERRORS;

/** Why a mint was refused: a code, a finer reason, a sentence. Never a token. */
export interface MintError {
  readonly code: MintErrorCode;
  readonly reason: string;
  readonly message: string;
}

/** A minted token and the installation it is bound to. */
export interface Minted {
  readonly token: string;
  readonly expiresAt: Date;
  readonly installation: Installation;
}

/** The headers of a mint request that say who calls and from where, whichever face it came through. */
export interface MintCaller {
  readonly authorization: string | undefined;
  readonly cookie: string | undefined;
  readonly origin: string | undefined;
  /** `Sec-Fetch-Site`. */
  readonly secFetchSite: string | undefined;
}

/** What the console's rule says of a caller: the session token it presents, and why it may not write from where it is (null: it may). */
export interface CallerVerdict {
  readonly token: string | undefined;
  readonly crossSite: string | null;
}

/** The console's rule for a caller (its cookie, its origins), the same one its other writes pass. */
export interface CallerGate {
  check(caller: MintCaller): CallerVerdict;
}

/** What minting needs. */
export interface MintDeps {
  /** Reads the session a request presents and judges where it comes from. */
  readonly gate: CallerGate;
  /** Verifies the caller's session: only a user's session may mint. */
  readonly users: SessionVerifier;
  readonly installations: Installations;
  readonly access: ViewAccess;
  readonly signer: TokenSigner;
  /** This control plane's cluster, bound into every token. */
  readonly clusterId: string;
  /** A PluginToken's lifetime: 900 seconds (FUN-17), or less (a browser test of refreshing). Never more. */
  readonly ttlSeconds?: number;
  readonly logger?: Logger;
  readonly metrics?: ViewMetrics;
}

/** What a mint is asked. */
export interface MintRequest {
  readonly caller: MintCaller;
  readonly installationId: unknown;
}

/** A mint's answer: the token, or why not. */
export type MintResult = { ok: true; value: Minted } | { ok: false; error: MintError };

const MAX_ID = 80;

function refuse(code: MintErrorCode, reason: string, message: string): { ok: false; error: MintError } {
  return { ok: false, error: { code, reason, message } };
}

/** Mints a PluginToken for the session's user and one installation; every refusal is a value. */
export async function mintPluginToken(deps: MintDeps, req: MintRequest): Promise<MintResult> {
  const result = await mint(deps, req);
  deps.metrics?.mints.inc({ outcome: result.ok ? "ok" : result.error.code });
  if (!result.ok) deps.logger?.info({ code: result.error.code, reason: result.error.reason }, "plugin token mint refused");
  return result;
}

/** The caller's user, once its session verifies and it may write from where it comes; or why not. */
async function userOf(deps: MintDeps, caller: MintCaller): Promise<{ ok: true; user: string } | { ok: false; error: MintError }> {
  const verdict = deps.gate.check(caller);
  const session = await deps.users.verify(verdict.token);
  if (!session.ok) return refuse("unauthenticated", session.problem, sessionMessage(session.problem));
  if (verdict.crossSite !== null) return refuse("permission_denied", "origin", verdict.crossSite);
  return { ok: true, user: session.claims.sub };
}

async function mint(deps: MintDeps, req: MintRequest): Promise<MintResult> {
  const who = await userOf(deps, req.caller);
  if (!who.ok) return who;
  const id = req.installationId;
  // The ID's form before any lookup (ADR 25): `<plugin name>.<seq>`, nothing else reaches the store.
  if (typeof id !== "string" || id.length > MAX_ID || parseInstallationId(id) === null) return refuse("invalid_argument", "installation_id", "installation_id must name an installation (<plugin name>.<number>)");
  const user = who.user;
  let installation: Installation | null;
  let viewable: boolean;
  try {
    installation = await deps.installations.get(id);
    viewable = await deps.access.canView(user, { id, name: installation?.name ?? null });
  } catch (err) {
    deps.logger?.error({ err: err instanceof Error ? err.message : String(err) }, "plugin token mint: lookup failed");
    return refuse("unavailable", "lookup_failed", "the control plane could not look the installation up; try again");
  }
  if (!viewable) return refuse("permission_denied", "can_view", "you may not view this plugin");
  if (installation === null) return refuse("not_found", "no_installation", "no such installation");
  if (installation.state === "deleting") return refuse("failed_precondition", "deleting", "the installation is being deleted");
  if (installation.state !== "ready") return refuse("failed_precondition", "view_not_running", "no view of this installation runs: it is not granted the view capability, or nothing of it runs");
  const ttl = Math.min(PLUGIN_TOKEN_TTL_SECONDS, Math.max(1, Math.floor(deps.ttlSeconds ?? PLUGIN_TOKEN_TTL_SECONDS)));
  const { token, expiresAt } = await signPluginToken(deps.signer, {
    sub: user,
    installation_id: installation.id,
    cluster_id: deps.clusterId,
    plugin_name: installation.pluginName,
    plugin_version: installation.pluginVersion,
    definition_hash: installation.definitionHash,
    installation_name: installation.name,
  }, ttl);
  return { ok: true, value: { token, expiresAt, installation } };
}

function sessionMessage(problem: TokenProblem): string {
  if (problem === "missing") return "a session is required";
  if (problem === "wrong_audience") return "only a user's session may mint a PluginToken";
  return "the session is not valid";
}

// ---- the Connect face --------------------------------------------------------------------------------

/** The caller's headers from a header getter. */
function callerOf(get: (name: string) => string | string[] | null | undefined): MintCaller {
  const one = (name: string): string | undefined => {
    const v = get(name);
    return typeof v === "string" ? v : undefined;
  };
  return { authorization: one("authorization"), cookie: one("cookie"), origin: one("origin"), secFetchSite: one("sec-fetch-site") };
}

/** The most bytes a mint request may send, on either face. */
export const MAX_MINT_BYTES = 4096;

/** Registers `TokenService` on a Connect router (mount it with `readMaxBytes: MAX_MINT_BYTES`). */
export function mintRoutes(deps: MintDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(TokenService, {
      async mintPluginToken(request, context: HandlerContext) {
        const r = await mintPluginToken(deps, { caller: callerOf((n) => context.requestHeader.get(n)), installationId: request.installationId });
        if (!r.ok) throw new ConnectError(r.error.message, MINT_ERRORS[r.error.code].connect);
        context.responseHeader.set("cache-control", "no-store");
        return { token: r.value.token, expireTime: timestampFromDate(r.value.expiresAt), installationId: r.value.installation.id };
      },
    });
  };
}

// ---- the JSON face -------------------------------------------------------------------------------

/**
 * The console's JSON route: `POST` with `{"installationId": "…"}` as `application/json` answers
 * `{token, expiresAt, installationId}`, or `{error: {code, reason, message}}` with the table's
 * status. JSON only, so a cross-site form can never post to it.
 */
export function mintJsonHandler(deps: MintDeps): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const fail = (status: number, code: string, message: string): void => sendJson(res, status, { error: { code, reason: code, message } });
    if (req.method !== "POST") return fail(405, "method_not_allowed", "POST only");
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json") return fail(415, "unsupported_media_type", "send application/json");
    const body = await readBody(req, MAX_MINT_BYTES);
    if (body === null) return fail(413, "too_large", `the body is at most ${MAX_MINT_BYTES} bytes`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      return fail(400, "invalid_argument", "the body is not JSON");
    }
    const installationId = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>)["installationId"] : undefined;
    const r = await mintPluginToken(deps, { caller: callerOf((n) => req.headers[n]), installationId });
    if (!r.ok) return sendJson(res, MINT_ERRORS[r.error.code].status, { error: r.error });
    sendJson(res, 200, { token: r.value.token, expiresAt: r.value.expiresAt.toISOString(), installationId: r.value.installation.id });
  };
}
