/**
 * The deliveries kept, on the JSON API: `GET /api/v1/deliveries` (newest first, of one plugin with
 * `plugin`) and `GET /api/v1/deliveries/{batch}` (one, with its contents). Each names the removed
 * instance it came from, when its plugin was deleted or uninstalled since (docs/adr/0195): a removed
 * instance's deliveries stay, shown as such.
 */
import { AppError, BATCH_ID, deliveriesOf, markRemovedDeliveries, markRemovedDelivery } from "../app/index.js";
import { sendJson } from "./http.js";
import { limitOf, pluginParam } from "./params.js";
import type { Route } from "./routes.js";

const READ = [200, 401, 400, 413, 500, 503];

/** The deliveries routes. */
export function deliveriesRoutes(): Route[] {
  return [
    { kind: "api", method: "GET", path: "/api/v1/deliveries", access: "viewer", query: ["plugin", "limit"], headers: [], statuses: READ,
      summary: "the deliveries kept, newest first (of one plugin with plugin); each names the removed instance it came from, if its plugin was removed since",
      handle: async ({ res, app, query }) => {
        const given = query.get("plugin");
        const plugin = given === undefined ? undefined : pluginParam(app.store, given);
        const listed = await deliveriesOf(app.store, app.dataDir).list(plugin, limitOf(query));
        sendJson(res, 200, { deliveries: await markRemovedDeliveries(app.store, listed) });
      } },
    { kind: "api", method: "GET", path: "/api/v1/deliveries/{batch}", access: "viewer", query: [], headers: [], statuses: [...READ, 404],
      summary: "one delivery kept, with its contents and the removed instance it came from, if any",
      handle: async ({ res, app, params }) => {
        const batch = params["batch"] ?? "";
        if (!BATCH_ID.test(batch)) throw new AppError("usage", "invalid batch ID: letters, digits, \".\", \"_\" and \"-\", at most 128", "batch");
        const d = await deliveriesOf(app.store, app.dataDir).get(batch);
        if (d === null) throw new AppError("not_found", `no delivery of batch ${batch}`);
        sendJson(res, 200, await markRemovedDelivery(app.store, d));
      } },
  ];
}
