/**
 * can_view as RBAC over the console's users' roles (docs/adr/0024): a user may view a plugin when
 * their rules allow `get` on `plugins.openfief.io` of that name in namespace `openfief`. For an
 * installation that does not exist the name is unknown, so only a user who may get every plugin
 * is told it is missing (FUN-12): everyone else is refused as for any plugin they cannot view.
 */
import { API_GROUP, API_VERSION, NAMESPACE } from "../plugins/index.js";
import type { UserRoles, ViewAccess } from "./ports.js";
import { rulesAllow } from "./rbac-match.js";

/** can_view from the users' roles. */
export function rbacViewAccess(roles: UserRoles): ViewAccess {
  return {
    async canView(user, installation) {
      const rules = await roles.rulesFor(user, NAMESPACE);
      const name = installation.name ?? "";
      return rulesAllow(
        {
          kind: "resource", verb: "get", apiPrefix: "apis", apiGroup: API_GROUP, apiVersion: API_VERSION, namespace: NAMESPACE,
          resource: "plugins", subresource: "", name, parts: name === "" ? ["plugins"] : ["plugins", name],
          path: `/apis/${API_GROUP}/${API_VERSION}/namespaces/${NAMESPACE}/plugins${name === "" ? "" : `/${name}`}`, fieldSelector: "", labelSelector: "",
        },
        rules,
      );
    },
  };
}
