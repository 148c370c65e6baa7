/**
 * `openfief token PLUGIN`: mints a short-lived egress token for a plugin of the log, signed by the
 * embedded key in the data folder, so a plugin can run locally under the same confinement as in a
 * cluster: `HTTPS_PROXY=http://plugin:$(openfief token NAME)@127.0.0.1:4750`. With
 * `--audience core`, the token the plugin calls `up`'s core API with (`/core/v1/…`).
 */
import type { Command } from "commander";
import { AppError, mintPluginEgressToken } from "../../app/index.js";
import { DEFAULT_TOKEN_TTL_SECONDS } from "../../egress/index.js";
import { CORE_AUDIENCE, EGRESS_AUDIENCE, TOKEN_EXPIRATION_SECONDS } from "../../plugins/index.js";
import { DEFAULT_DATA_DIR, dataDir, pluginArg } from "../context.js";

interface Options {
  data?: string;
  ttl: string;
  json?: boolean;
  audience: string;
}

/** The audiences `--audience` takes, by their short names. */
const AUDIENCES = { egress: EGRESS_AUDIENCE, core: CORE_AUDIENCE } as const;

export function register(program: Command): void {
  program
    .command("token")
    .description("mint a short-lived token for PLUGIN (audience openfief-egress, or openfief-core with --audience core), signed by the embedded key")
    .argument("<plugin>", "the plugin's name")
    .option("--data <dir>", `data folder holding the embedded key (default: $OPENFIEF_DATA or ${DEFAULT_DATA_DIR})`)
    .option("--ttl <seconds>", `lifetime, at most ${TOKEN_EXPIRATION_SECONDS}`, String(DEFAULT_TOKEN_TTL_SECONDS))
    .option("--audience <name>", "egress (the egress proxy's) or core (the core API's)", "egress")
    .option("--json", "print {token, subject, audience, issuer, expiresAt} as JSON")
    .action(async (plugin: string, opts: Options) => {
      pluginArg(plugin);
      const ttl = Number(opts.ttl);
      if (!/^[0-9]+$/.test(opts.ttl) || ttl <= 0 || ttl > TOKEN_EXPIRATION_SECONDS) {
        throw new AppError("usage", `--ttl must be 1..${TOKEN_EXPIRATION_SECONDS} seconds`);
      }
      const audience = Object.hasOwn(AUDIENCES, opts.audience) ? AUDIENCES[opts.audience as keyof typeof AUDIENCES] : undefined;
      if (audience === undefined) throw new AppError("usage", `--audience must be egress or core, not ${JSON.stringify(opts.audience.slice(0, 64))}`, "audience");
      const minted = await mintPluginEgressToken(dataDir(opts), plugin, ttl, audience);
      if (opts.json === true) process.stdout.write(`${JSON.stringify({ ...minted, expiresAt: minted.expiresAt.toISOString() })}\n`);
      else process.stdout.write(`${minted.token}\n`);
    });
}
