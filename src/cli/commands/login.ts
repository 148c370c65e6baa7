/**
 * `openfief login`: a session token for scripts (sent as `Authorization: Bearer`), or with
 * `--link` a one-time sign-in link to the console of the `openfief up` serving the data folder.
 * Both are signed with the data folder's session key; `--role viewer` makes one that may only look.
 */
import type { Command } from "commander";
import { AppError, checkUserName, defaultUser, MAX_TOKEN_TTL_SECONDS, parseRole, requireLog, runningConsole, Sessions, signInLink } from "../../app/index.js";
import { dataDir, print, printJson, withData, withJson } from "../context.js";
import type { DataOptions } from "../context.js";

interface LoginOptions extends DataOptions {
  role?: string;
  user?: string;
  ttl?: string;
  link?: boolean;
}

const UNITS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600 };

/** `900`, `900s`, `15m`, `1h`: seconds, at most a day. */
export function parseTtl(text: string): number {
  const m = /^(\d{1,6})([smh]?)$/.exec(text);
  const n = m === null ? NaN : Number(m[1]) * (UNITS[m[2] || "s"] ?? 1);
  if (!Number.isInteger(n) || n < 1 || n > MAX_TOKEN_TTL_SECONDS) throw new AppError("usage", `--ttl must be 1s to 24h, such as 900, 15m or 1h, not ${JSON.stringify(text.slice(0, 32))}`);
  return n;
}

export function register(program: Command): void {
  withJson(withData(program.command("login")))
    .description("print a session token for the API (Authorization: Bearer), or with --link a one-time sign-in link to the console")
    .option("--role <role>", "owner (may approve and change) or viewer (may only look)", "owner")
    .option("--user <name>", "the user it names (default: this machine's user)")
    .option("--ttl <duration>", "how long the token lives, at most 24h (not with --link: a link lives 10 minutes)", "1h")
    .option("--link", "print a sign-in link to the running console instead of a token")
    .action(async (o: LoginOptions) => {
      const role = parseRole(o.role ?? "owner");
      const user = checkUserName(o.user ?? defaultUser());
      const dir = dataDir(o);
      requireLog(dir);
      const sessions = await Sessions.open(dir);
      if (o.link === true) {
        const link = await signInLink(sessions, runningConsole(dir), user, role);
        if (o.json === true) printJson({ url: link.url, user, role, expiresAt: link.expiresAt.toISOString() });
        else print(link.url);
        return;
      }
      const m = await sessions.mintSession(user, role, parseTtl(o.ttl ?? "1h"));
      if (o.json === true) printJson({ token: m.token, user, role, expiresAt: m.expiresAt.toISOString() });
      else print(m.token);
    });
}
