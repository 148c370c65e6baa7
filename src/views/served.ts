/**
 * What a list or watch is served, as kube-apiserver's list handler (`ListResource`) decides it
 * after RequestInfo: a name in the path of a watch (`/watch/…/plugingrants/ledger-view`) becomes
 * the field selector `metadata.name=<name>`, and a field selector sent beside it must pin that same
 * name (400 otherwise). RequestInfo names such a watch, so RBAC's `resourceNames` admit it; the
 * upstream must then serve that one object and nothing else (docs/adr/0093). The gateway hands
 * this selection to the upstream and records it in the decision.
 */
import type { RequestTarget } from "./go-url.js";
import type { ResourceAttributes } from "./request-info.js";
import { parseFieldSelector, requiresExactMatch } from "./selectors.js";

/** The selectors an upstream applies to a list or a watch. */
export interface Selection {
  readonly fieldSelector: string;
  readonly labelSelector: string;
  /** The name the selection pins (from the path or the field selector); "" when none. */
  readonly name: string;
}

/** Why a list or watch cannot be served as asked. */
export interface SelectionProblem {
  readonly reason: "name_mismatch" | "bad_field_selector";
  readonly message: string;
}

/** apimachinery's `fields.EscapeValue`: `\`, `,` and `=` escaped with a backslash. */
export function escapeFieldValue(v: string): string {
  return v.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/** Whether the request names its object in its path (`…/plugingrants/<name>`), rather than in a selector. */
function namedInPath(a: ResourceAttributes): boolean {
  return a.parts.length >= 2 && a.name !== "";
}

/**
 * The selection of a list or watch (null for any other verb): the field and label selectors of the
 * query as sent (one that does not parse is the upstream's to refuse, as kube-apiserver's handler
 * does), and for a watch named in its path `metadata.name=<name>`, or the query's field selector
 * when it pins that same name; any other field selector beside a path's name is a problem.
 */
export function selectionOf(a: ResourceAttributes, query: RequestTarget["query"]): { ok: true; value: Selection | null } | { ok: false; problem: SelectionProblem } {
  if (a.verb !== "list" && a.verb !== "watch") return { ok: true, value: null };
  const fieldSelector = query.get("fieldSelector")?.[0] ?? "";
  const labelSelector = query.get("labelSelector")?.[0] ?? "";
  if (!namedInPath(a)) return { ok: true, value: { fieldSelector, labelSelector, name: a.name } };
  const terms = parseFieldSelector(fieldSelector);
  if (terms === null) return { ok: false, problem: { reason: "bad_field_selector", message: "the field selector does not parse" } };
  if (terms.length === 0) return { ok: true, value: { fieldSelector: `metadata.name=${escapeFieldValue(a.name)}`, labelSelector, name: a.name } };
  if (requiresExactMatch(terms, "metadata.name") !== a.name) {
    return { ok: false, problem: { reason: "name_mismatch", message: "fieldSelector metadata.name doesn't match requested name" } };
  }
  return { ok: true, value: { fieldSelector, labelSelector, name: a.name } };
}
