/**
 * Approved origins: what a call may reach over HTTP. OpenFief's rule (ADR 0013): a module runs
 * with the intersection of the origins its manifest declares and those its PluginGrant
 * approves, its effective egress hosts; an origin not yet approved is simply not reachable.
 */
import type { EgressHost } from "../plugins/index.js";

/** `https://host` for port 443, `https://host:port` otherwise: the form URLs' origins take. */
export function originOf(h: EgressHost): string {
  return h.port === 443 ? `https://${h.host}` : `https://${h.host}:${h.port}`;
}

/** The origins of a plugin's effective egress hosts (`effective(manifest, grant).egress`). */
export function originsOf(hosts: readonly EgressHost[]): string[] {
  return hosts.map(originOf);
}

/**
 * The canonical https origins among `origins`, as a set. Anything else (another scheme, a path,
 * a form the URL parser rewrites) is dropped: a malformed entry can never widen what is reached.
 */
export function approvedOriginSet(origins: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const o of origins) {
    if (typeof o !== "string" || o.length > 300) continue;
    try {
      const u = new URL(o);
      if (u.protocol === "https:" && u.origin === o) out.add(o);
    } catch {
      // Not a URL: dropped.
    }
  }
  return out;
}
