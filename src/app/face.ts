/**
 * What a running process hands an HTTP face (src/server) and what the face hands back: the shapes
 * the composition (src/compose) and the faces share, kept here so that a face imports only the
 * application layer.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { EventLog } from "../events/index.js";
import type { MintCaller, MintResult } from "../views/index.js";
import type { ClusterAccess } from "./cluster-access.js";
import type { ControlPlaneMetrics } from "./metrics.js";
import type { Sessions } from "./sessions.js";

/** Whether the control plane can serve: the log checked and a first reconcile pass done. */
export interface Readiness {
  readonly ready: boolean;
  /** Why not, as short phrases (empty when ready). */
  readonly reasons: readonly string[];
}

/** What an HTTP face is given: the use cases' store, the sessions, the metrics, readiness, the views. */
export interface FaceContext {
  readonly dataDir: string;
  readonly store: EventLog;
  readonly sessions: Sessions;
  /** The views part, when it runs: the console frames views from it and mounts its mint. */
  readonly views: ViewsFace | null;
  /** The console's configured origin (its canonical one); absent: the face's own address. */
  readonly consoleOrigin?: string;
  readonly metrics: ControlPlaneMetrics;
  readonly logger: Logger;
  readonly clock: () => Date;
  /**
   * The console in a cluster: sign-in and roles are the cluster's (TokenReview, SubjectAccessReview),
   * approvals write the PluginGrant as the user, and Plugins and grants are changed with kubectl,
   * not through the face. Absent for `openfief up`.
   */
  readonly cluster?: ClusterAccess;
  readiness(): Readiness;
  /** The core API for plugins (docs/adr/0196), mounted under its prefix when it runs. */
  readonly core?: CoreFace | null;
  /** The log's public key and origin, when it signs checkpoints (`/api/v1/log/key`, the integrity page). */
  readonly logKey?: { readonly origin: string; readonly verifierKey: string } | null;
}

/** The core API as a face mounts it: a handler for every request under its prefix. */
export interface CoreFace {
  /** `/core/`. */
  readonly prefix: string;
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void;
}

/** A started HTTP face. */
export interface Face {
  /** Its base URL, where it listens (`http://127.0.0.1:4780`). */
  readonly url: string;
  /** Its canonical origin, where a browser opens it: the configured console origin, else `url`. */
  readonly origin: string;
  /** Every origin it answers at (writes must come from one); its other loopback names are redirected to `origin`. */
  readonly origins: readonly string[];
  /** Whether it speaks TLS (the session cookie is then `__Host-`). */
  readonly tls: boolean;
  /** Stops taking requests and ends the open ones. */
  close(): Promise<void>;
}

/** What the console frames for a plugin: the view's entry on the plugin proxy, and whose it is. */
export interface ViewFrame {
  /** The iframe's `src`: `<plugin proxy>/plugins/<name>/<version>/console/<entry>`. */
  readonly src: string;
  readonly installationId: string;
  readonly installationName: string;
  /** Whether a mint can succeed now (`ready`), or why not (`deleting`, `inactive`). */
  readonly state: "ready" | "deleting" | "inactive";
}

/** What the console needs of the views part: where views live, the frame of a plugin's view, the mint. */
export interface ViewsFace {
  /** The plugin proxy's origin: the only one the console frames (`frame-src`). */
  readonly pluginProxyOrigin: string;
  /** Where a view sends Kubernetes requests: `<gateway>/clusters/<cluster>`. */
  readonly gatewayUrl: string;
  readonly clusterId: string;
  /** The view a plugin's page frames, or null when the plugin has no UI that runs. */
  frame(name: string): Promise<ViewFrame | null>;
  /**
   * Mints a PluginToken for the session's user: the use case behind the JSON route and the RPC,
   * which reads the caller's session (Bearer or the console's cookie) and checks its `Origin` the
   * way every write to the console is checked.
   */
  mint(caller: MintCaller, installationId: unknown): Promise<MintResult>;
  /** The Connect RPC `openfief.auth.v1.TokenService/MintPluginToken` as a `node:http` handler, reading at most the mint's size limit. */
  readonly connect: (req: IncomingMessage, res: ServerResponse) => void;
  /** The path prefix the Connect handler answers (`/openfief.auth.v1.TokenService/`). */
  readonly connectPrefix: string;
}
