/** Types of `sdk.js`, the browser SDK for OpenFief view plugins (Apache-2.0). */

/** The postMessage protocol's version. */
export declare const PROTOCOL_VERSION: 1;
/** This SDK's version: the `<version>` of `/plugins/sdk/<version>/sdk.js`. */
export declare const SDK_VERSION: string;
/** How far into a token's remaining life a watch reconnects (0.9: with a tenth left). */
export declare const WATCH_RECONNECT_FRACTION: number;

/** The view can no longer act: the console could not mint a token. */
export declare class AuthFailedError extends Error {
  readonly reason: string;
  constructor(reason: string);
}

/** What the console sent with `openfief:init`, besides the token. */
export interface ViewContext {
  readonly theme?: "light" | "dark";
  /** `<gateway origin>/clusters/<cluster>`: the base of every Kubernetes path. */
  readonly gatewayUrl?: string;
  readonly installationId?: string;
  readonly installationName?: string;
  readonly clusterId?: string;
  readonly user?: string;
  readonly [key: string]: unknown;
}

/** One event of a Kubernetes watch. */
export interface WatchEvent {
  readonly type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  readonly object: { readonly metadata?: { readonly resourceVersion?: string; readonly name?: string }; readonly [key: string]: unknown };
}

/** What a watch calls. */
export interface WatchHandlers {
  /** Start from this resourceVersion (default: the current state, as ADDED events). */
  readonly resourceVersion?: string;
  onEvent(event: WatchEvent): void;
  /** A refusal or a failure; the watch goes on with a backoff unless the view's auth failed. */
  onError?(error: { readonly code: number; readonly [key: string]: unknown }): void;
  /** The resourceVersion was too old (410): the watch starts over from the current state. */
  onReset?(): void;
}

/** A running watch. */
export interface Watch {
  readonly resourceVersion: string;
  readonly connections: number;
  stop(): void;
}

/** The smallest window the SDK needs (tests pass a fake one). */
export interface ViewWindow {
  readonly parent: { postMessage(message: unknown, targetOrigin: string): void } | null;
  readonly location?: { readonly href: string };
  addEventListener(type: "message", listener: (event: { data: unknown; origin: string; source: unknown }) => void): void;
  removeEventListener(type: "message", listener: (event: { data: unknown; origin: string; source: unknown }) => void): void;
}

/** Options of {@link createView}; in a browser none are needed. */
export interface ViewOptions {
  readonly window?: ViewWindow;
  readonly consoleOrigin?: string;
  readonly gatewayOrigin?: string;
  readonly pluginProxyOrigin?: string;
  readonly fetch?: (input: string, init: RequestInit) => Promise<Response>;
  readonly setTimeout?: (f: () => void, ms: number) => unknown;
  readonly clearTimeout?: (t: unknown) => void;
  /** ms since the epoch. */
  readonly now?: () => number;
  /** How long a 401 waits for a fresher token before its one retry (default 2000 ms). */
  readonly refreshWaitMs?: number;
}

/** A view's connection to the console. */
export interface View {
  getToken(): Promise<string>;
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  kube(path: string, init?: RequestInit): Promise<Response>;
  watch(path: string, handlers: WatchHandlers): Watch;
  ready(): Promise<ViewContext>;
  readonly context: ViewContext | null;
  readonly theme: "light" | "dark" | null;
  readonly failure: string | null;
  readonly stats: { readonly accepted: number; readonly ignored: number };
  on(kind: "init", f: (context: ViewContext) => void): () => void;
  on(kind: "token", f: (expiresAtSeconds: number | null) => void): () => void;
  on(kind: "authFailed", f: (reason: string) => void): () => void;
  close(): void;
}

/** The `exp` of a JWT (seconds since the epoch), read without verifying: only to schedule. */
export declare function tokenExpiry(token: string): number | null;
export declare function createView(options?: ViewOptions): View;
/** The page's one view connection. */
export declare function view(): View;
export declare function getToken(): Promise<string>;
export declare function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
export declare function kube(path: string, init?: RequestInit): Promise<Response>;
export declare function watch(path: string, handlers: WatchHandlers): Watch;
