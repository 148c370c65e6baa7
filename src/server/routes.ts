/**
 * The route table: every route's method, path, the query parameters and headers it reads, the
 * statuses it answers with, and who may call it. The dispatcher matches requests against it, the
 * query reader refuses parameters a route does not declare, and a test holds the OpenAPI document
 * to it — so a route cannot exist, read a parameter or answer a status the document does not say.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../app/index.js";
import type { FaceContext, Role, UserSession } from "../app/index.js";
import type { BodySpec } from "../http/index.js";
import type { Logger } from "pino";

/** Who may call a route: anyone, any signed-in user, or an owner. */
export type Access = "public" | "viewer" | "owner";

/** What a route is, for the OpenAPI check (only `api` and `ops` routes are in the document). */
export type RouteKind = "api" | "ops" | "page" | "asset";

/** An HTTP method a route answers. */
export type Method = "GET" | "POST" | "DELETE";

/** The server's settings a route may need. */
export interface ServerSettings {
  /** The origins a write may come from (`http://127.0.0.1:4780`). */
  readonly origins: readonly string[];
  /** Whether the server speaks TLS (cookies are then `Secure` and `__Host-`). */
  readonly tls: boolean;
  /** The longest a request may take (ms). */
  readonly deadlineMs: number;
}

/** What a handler is given. */
export interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
  readonly query: Query;
  /** The caller's session (null only on public routes). */
  readonly session: UserSession | null;
  readonly app: FaceContext;
  readonly settings: ServerSettings;
  /** Headers to add to the answer (a refreshed session cookie). */
  readonly extraHeaders: Record<string, string | string[]>;
  /** Aborted when the request's deadline passes or the client goes away. */
  readonly signal: AbortSignal;
  /** The request's own logger (a child of the face's, naming the request's id). */
  readonly log: Logger;
}

/** A route. */
export interface Route {
  readonly method: Method;
  /** `/api/v1/plugins/{name}`: `{x}` matches one path segment. */
  readonly path: string;
  readonly kind: RouteKind;
  readonly access: Access;
  readonly summary: string;
  /** Query parameters it reads; any other is refused. */
  readonly query: readonly string[];
  /** Request headers it reads (`If-Match`, `Last-Event-ID`). */
  readonly headers: readonly string[];
  /** Every status it answers with. */
  readonly statuses: readonly number[];
  /** Long-lived (server-sent events): no request deadline; the stream bounds itself. */
  readonly stream?: boolean;
  /**
   * The body it takes (media types, size): any other is refused with 415 or 413 before a byte is
   * read. Absent: it takes none, and a request that declares one is refused with 413.
   */
  readonly body?: BodySpec;
  handle(ctx: RequestContext): Promise<void> | void;
}

/** The longest a query parameter's value may be. */
export const MAX_QUERY_VALUE = 512;
/** The longest a request target may be. */
export const MAX_URL = 4096;
/** The most values one query may hold. */
const MAX_QUERY_VALUES = 64;

/** A request's query, holding only the parameters its route declares. */
export class Query {
  readonly #params: URLSearchParams;
  readonly #declared: ReadonlySet<string>;

  constructor(params: URLSearchParams, declared: readonly string[]) {
    this.#declared = new Set(declared);
    let n = 0;
    for (const [k, v] of params) {
      if (++n > MAX_QUERY_VALUES) throw new AppError("too_large", `at most ${MAX_QUERY_VALUES} query values`);
      if (!this.#declared.has(k)) throw new AppError("usage", `unknown query parameter ${JSON.stringify(k.slice(0, 64))}${declared.length === 0 ? "" : `: use ${declared.join(", ")}`}`, k.slice(0, 64));
      if (v.length > MAX_QUERY_VALUE) throw new AppError("too_large", `query parameter ${k} is over ${MAX_QUERY_VALUE} characters`, k);
    }
    this.#params = params;
  }

  #check(name: string): void {
    if (!this.#declared.has(name)) throw new AppError("internal", `the route reads a query parameter it does not declare: ${name}`);
  }

  /** The parameter's value; empty values count as absent (an empty form field). */
  get(name: string): string | undefined {
    this.#check(name);
    const v = this.#params.get(name);
    return v === null || v === "" ? undefined : v;
  }

  /** Every non-empty value of a repeatable parameter. */
  all(name: string): string[] {
    this.#check(name);
    return this.#params.getAll(name).filter((v) => v !== "");
  }
}

/** Matches a path against a route's pattern; the parameters by name, or null. */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split("/");
  const got = path.split("/");
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] ?? "";
    const g = got[i] ?? "";
    if (w.startsWith("{") && w.endsWith("}")) {
      if (g === "") return null;
      let value: string;
      try {
        value = decodeURIComponent(g);
      } catch {
        return null;
      }
      params[w.slice(1, -1)] = value;
    } else if (w !== g) return null;
  }
  return params;
}

/** True when a session's role may call a route of this access. */
export function allowed(access: Access, role: Role | null): boolean {
  if (access === "public") return true;
  if (role === null) return false;
  return access === "viewer" || role === "owner";
}
