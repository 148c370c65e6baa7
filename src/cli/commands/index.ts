import type { Register } from "../program.js";

/**
 * A command module: the subcommands it adds and how to load it. Loaded only when one of its
 * names is asked for (`help NAME` loads every one; the full help prints from summaries.ts), so
 * `openfief get plugins` compiles what `get` uses and nothing of `up`, `verify` or `operator`
 * (ADR 0113). A new command's line in the full help: `npx tsx scripts/gen-cli-summaries.ts`.
 */
export interface CommandModule {
  readonly names: readonly string[];
  readonly load: () => Promise<Register>;
}

/** Every command module, in the order `openfief --help` lists them. Add one entry per module. */
export const COMMANDS: readonly CommandModule[] = [
  { names: ["reconcile", "up"], load: async () => { const { register } = await import("./up.js"); return register; } },
  { names: ["login"], load: async () => { const { register } = await import("./login.js"); return register; } },
  { names: ["apply", "delete"], load: async () => { const { register } = await import("./apply.js"); return register; } },
  { names: ["approve"], load: async () => { const { register } = await import("./approve.js"); return register; } },
  { names: ["get"], load: async () => { const { register } = await import("./get.js"); return register; } },
  { names: ["why"], load: async () => { const { register } = await import("./why.js"); return register; } },
  { names: ["log", "replay", "verify-log", "check-decisions"], load: async () => { const { register } = await import("./log.js"); return register; } },
  { names: ["deliveries", "import"], load: async () => { const { register } = await import("./deliveries.js"); return register; } },
  { names: ["call"], load: async () => { const { register } = await import("./call.js"); return register; } },
  { names: ["verify"], load: async () => { const { register } = await import("./verify.js"); return register; } },
  { names: ["verify-bundle"], load: async () => { const { register } = await import("./verify-bundle.js"); return register; } },
  { names: ["token"], load: async () => { const { register } = await import("./token.js"); return register; } },
  { names: ["egress"], load: async () => { const { register } = await import("./egress.js"); return register; } },
  { names: ["operator"], load: async () => { const { register } = await import("./cluster-operator.js"); return register; } },
  { names: ["console"], load: async () => { const { register } = await import("./console.js"); return register; } },
  { names: ["plugin-host"], load: async () => { const { register } = await import("./plugin-host.js"); return register; } },
  { names: ["store", "migrate-store"], load: async () => { const { register } = await import("./store.js"); return register; } },
  { names: ["prove", "verify-proof", "export", "verify-export"], load: async () => { const { register } = await import("./proofs.js"); return register; } },
  { names: ["export-tiles", "log-key"], load: async () => { const { register } = await import("./tlog.js"); return register; } },
  { names: ["witness"], load: async () => { const { register } = await import("./witness.js"); return register; } },
];

/**
 * The modules a command line needs: the one that adds its subcommand, none for `--version` (the
 * program answers it alone), or every module when the line names none of them (no arguments,
 * `--help`, `help`, a mistyped name that commander should answer with a suggestion).
 */
export function modulesFor(argv: readonly string[]): readonly CommandModule[] {
  const first = argv[0];
  if (argv.length === 1 && (first === "--version" || first === "-V")) return [];
  const one = first === undefined ? undefined : COMMANDS.find((c) => c.names.includes(first));
  return one === undefined ? COMMANDS : [one];
}
