/**
 * Sites as a browser tells them apart, for FUN-17's "Origin model": the plugin proxy and the
 * gateway must each be a different *site* from the console, not just a different origin (cookies
 * are not port-scoped), or the console's cookies and same-site protections would reach the views. A site is the registrable domain of a host; for an
 * IP address or a single label (`localhost`) the host itself, so `127.0.0.1` and `localhost` are
 * two sites on one machine.
 *
 * Without the Public Suffix List the registrable domain is approximated by the last two labels,
 * which errs only towards "same site" (`a.example.co.uk` and `b.other.co.uk` count as one): a
 * configuration is refused, never wrongly admitted. Schemes are not compared: `http://x` and
 * `https://x` count as one site, the stricter reading.
 */
import { isIP } from "node:net";

/** The site of an origin, as this module approximates it (lower case, no port). */
export function siteOf(origin: string): string {
  const host = new URL(origin).hostname.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (isIP(host) !== 0) return host;
  const labels = host.split(".");
  return labels.length <= 2 ? host : labels.slice(-2).join(".");
}

/** Whether two origins are the same site (see the module's note on the approximation). */
export function sameSite(a: string, b: string): boolean {
  return siteOf(a) === siteOf(b);
}

/** What is wrong with a views deployment's origins: empty when nothing is. */
export function viewOriginProblems(o: { readonly console: string; readonly pluginProxy: string; readonly gateway: string }): string[] {
  const problems: string[] = [];
  if (sameSite(o.console, o.pluginProxy)) {
    problems.push(`the plugin proxy (${o.pluginProxy}) must be a different site from the console (${o.console}), such as http://localhost:4781 beside http://127.0.0.1:4780, so that a view's code can never reach the console's session`);
  }
  // Cookies are not port-scoped: a console on the gateway's site would send its session cookie
  // there, and views would be same-site with the console.
  if (sameSite(o.console, o.gateway)) {
    problems.push(`the gateway (${o.gateway}) must be a different site from the console (${o.console}), such as http://localhost:4782 beside http://127.0.0.1:4780: cookies are shared across ports`);
  }
  const all = [o.console, o.pluginProxy, o.gateway];
  if (new Set(all.map((x) => new URL(x).origin)).size !== all.length) problems.push("the console, the plugin proxy and the gateway need three different origins");
  return problems;
}
