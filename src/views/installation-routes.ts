/**
 * An installation's own routes (seed 002, "Scoping"): `/installations/{id}/runtime/*` goes to the
 * plugin's pod, `/installations/{id}/controller/*` to the control plane's status of the plugin (in
 * OpenFief the control plane is the plugin controller). The gateway has already checked the
 * PluginToken, that its installation is the URL's, can_view and the installation's state; there
 * is no Kubernetes scope to apply here. A path with a dot segment (`/..`, `%2e%2e`), a hidden
 * separator, or no path at all never reaches the pod: the gateway answers it 404 before any gate,
 * and this module refuses it again (the pod gets the core's token).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { rulesToJSON } from "../plugins/index.js";
import { sendJson, statusBody } from "./http.js";
import type { Installation } from "./ports.js";
import { isCleanRoutePath } from "./gates.js";
import { forwardHttp } from "./proxy.js";
import type { UpstreamEndpoint } from "./proxy.js";

/** One request to an installation's route, as the gateway hands it on. */
export interface InstallationRequest {
  readonly route: "runtime" | "controller";
  readonly installation: Installation;
  /** The raw target after `/installations/{id}/{route}`. */
  readonly rest: string;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Headers every answer carries (CORS). */
  readonly headers: Readonly<Record<string, string>>;
}

/** Serves the two routes for the gateway. */
export interface InstallationRoutes {
  serve(r: InstallationRequest): Promise<void>;
}

/** Where an installation's pod answers, and the core's token for it (D-59: only the core calls a plugin). */
export interface RuntimeEndpoint extends UpstreamEndpoint {
  /** A token with the audience `openfief-plugin:<instance>`, sent as the bearer; absent sends none. */
  readonly token?: () => Promise<string>;
}

/** Options of {@link createInstallationRoutes}. */
export interface InstallationRoutesOptions {
  /** The pod of an installation, or null when it has none reachable (then 503). */
  readonly runtime?: (installation: Installation) => Promise<RuntimeEndpoint | null>;
  /** The status the controller route shows; defaults to the installation as the log has it. */
  readonly status?: (installation: Installation) => Promise<unknown>;
}

/** The installation's status as the controller route shows it by default. */
export function installationStatus(i: Installation): Record<string, unknown> {
  return {
    id: i.id, name: i.name, state: i.state, pluginName: i.pluginName, pluginVersion: i.pluginVersion,
    definitionHash: i.definitionHash, rules: rulesToJSON(i.rules), serviceAccount: `${i.serviceAccount.namespace}/${i.serviceAccount.name}`,
  };
}

/** The runtime and controller routes. */
export function createInstallationRoutes(options: InstallationRoutesOptions = {}): InstallationRoutes {
  return {
    async serve({ route, installation, rest, req, res, headers }) {
      if (!isCleanRoutePath(rest)) return sendJson(res, 404, statusBody(404, "no such route"), { ...headers });
      if (route === "controller") {
        const path = rest.split("?")[0] ?? "";
        if (path !== "/status" && path !== "/status/") return sendJson(res, 404, statusBody(404, "the controller route serves /status"), { ...headers });
        if (req.method !== "GET" && req.method !== "HEAD") return sendJson(res, 405, statusBody(405, "GET only"), { ...headers });
        const status = options.status === undefined ? installationStatus(installation) : await options.status(installation);
        return sendJson(res, 200, status, { ...headers });
      }
      const endpoint = options.runtime === undefined ? null : await options.runtime(installation);
      if (endpoint === null) return sendJson(res, 503, statusBody(503, "the plugin's runtime is not reachable"), { ...headers });
      const extra: Record<string, string> = {};
      if (endpoint.token !== undefined) extra["authorization"] = `Bearer ${await endpoint.token()}`;
      await forwardHttp({ endpoint, target: rest, req, res, extraHeaders: extra, responseHeaders: headers });
    },
  };
}
