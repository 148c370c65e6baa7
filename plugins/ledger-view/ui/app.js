// ledger-view: lists the control plane's plugins and what their grants approve, as the signed-in
// user, through the gateway, with the OpenFief browser SDK. The console hands the SDK a
// PluginToken; this script never sees the user's session and never stores the token. It keeps
// the list current with a watch, which the SDK renews before the token ends.
import { view } from "/plugins/sdk/0.1.0/sdk.js";

const BASE = "/apis/openfief.io/v1alpha1/namespaces/openfief";
const v = view();
const status = document.getElementById("status");
const table = document.getElementById("plugins");
const body = table.querySelector("tbody");
const session = document.getElementById("session");

/** The plugins and grants shown, by name. */
const plugins = new Map();
const grants = new Map();
let refreshes = 0;
/** The rollout decision's outcome in words. */
const OUTCOMES = { current: "runs the current version", previous: "runs the previous version (the new one waits)", none: "runs nothing", undecided: "not decided yet" };

function say(text, failed = false) {
  status.textContent = text;
  status.classList.toggle("failed", failed);
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className !== undefined) td.className = className;
  return td;
}

/** `localhost/openfief-demo/nbp-fx@sha256:32a1…` as `nbp-fx@32a155bf`. */
function shortImage(image) {
  if (typeof image !== "string") return "—";
  const [name, digest = ""] = image.split("@");
  return `${name.split("/").pop()}@${digest.replace("sha256:", "").slice(0, 8)}`;
}

function granted(spec) {
  if (spec === undefined) return "no grant";
  const parts = [...(spec.capabilities ?? [])];
  for (const h of spec.egress ?? []) parts.push(typeof h === "string" ? h : `${h.host}${h.port === undefined ? "" : `:${h.port}`}`);
  if ((spec.rbac ?? []).length > 0) parts.push(`${spec.rbac.length} rule(s)`);
  return parts.join(", ") || "nothing";
}

function render() {
  body.replaceChildren();
  for (const name of [...plugins.keys()].sort()) {
    const p = plugins.get(name);
    const row = body.insertRow();
    row.dataset.plugin = name;
    cell(row, name);
    const runs = cell(row, "");
    const code = document.createElement("code");
    code.textContent = shortImage(p.status?.deployed?.image);
    runs.append(code);
    const outcome = p.status?.outcome ?? "undecided";
    cell(row, OUTCOMES[outcome] ?? outcome, `outcome-${outcome}`);
    const isView = (p.spec?.manifest?.capabilities ?? []).includes("view");
    const state = isView ? (p.status?.view ?? "inactive") : "none";
    cell(row, isView ? state : "—", `view-${state}`);
    cell(row, granted(grants.get(name)?.spec));
  }
  table.hidden = plugins.size === 0;
}

async function list(plural, into) {
  const res = await v.kube(`${BASE}/${plural}`);
  if (!res.ok) throw new Error(`listing ${plural} answered ${res.status}`);
  const doc = await res.json();
  into.clear();
  for (const item of doc.items ?? []) into.set(item.metadata.name, item);
  return doc.metadata?.resourceVersion ?? "";
}

function follow(plural, into, resourceVersion) {
  return v.watch(`${BASE}/${plural}`, {
    resourceVersion,
    onEvent(e) {
      const name = e.object?.metadata?.name;
      if (typeof name !== "string") return;
      if (e.type === "DELETED") into.delete(name);
      else into.set(name, e.object);
      render();
    },
    onReset() {
      into.clear();
    },
  });
}

v.on("token", () => {
  refreshes += 1;
  session.textContent = `Token renewed ${refreshes} time(s) by the console.`;
});

v.on("authFailed", (reason) => {
  say(`The console can no longer give this view a token (${reason}). Reload the page once the plugin is granted again.`, true);
});

async function main() {
  const ctx = await v.ready();
  if (ctx.theme === "dark" || ctx.theme === "light") document.documentElement.dataset.theme = ctx.theme;
  session.textContent = `Viewing as ${ctx.user ?? "the signed-in user"} through ${ctx.installationName ?? "this view"}.`;
  const [pluginsRv, grantsRv] = await Promise.all([list("plugins", plugins), list("plugingrants", grants)]);
  render();
  say(`${plugins.size} plugin(s), read through the gateway as you.`);
  follow("plugins", plugins, pluginsRv);
  follow("plugingrants", grants, grantsRv);
}

main().catch((err) => {
  say(err?.name === "AuthFailedError" ? `The console could not give this view a token (${err.reason}).` : `Could not list the plugins: ${err?.message ?? err}`, true);
});
