import type { Register } from "../program.js";

/**
 * A command module: the subcommands it adds and how to load it. Loaded only when one of its
 * names is asked for (or for the full help), so `openfief get plugins` compiles what `get` uses and
 * nothing of `up`, `verify` or `operator` (ADR 0113).
 */
export interface CommandModule {
  readonly names: readonly string[];
  readonly load: () => Promise<Register>;
}

/** Every command module, in the order `openfief --help` lists them. Add one entry per module. */
export const COMMANDS: readonly CommandModule[] = [
  { names: ["reconcile", "up"], load: async () => (await import("./up.js")).register },
  { names: ["login"], load: async () => (await import("./login.js")).register },
  { names: ["apply", "delete"], load: async () => (await import("./apply.js")).register },
  { names: ["approve"], load: async () => (await import("./approve.js")).register },
  { names: ["get"], load: async () => (await import("./get.js")).register },
  { names: ["why"], load: async () => (await import("./why.js")).register },
  { names: ["log", "replay", "verify-log", "check-decisions"], load: async () => (await import("./log.js")).register },
  { names: ["call"], load: async () => (await import("./call.js")).register },
  { names: ["verify"], load: async () => (await import("./verify.js")).register },
  { names: ["verify-bundle"], load: async () => (await import("./verify-bundle.js")).register },
  { names: ["token"], load: async () => (await import("./token.js")).register },
  { names: ["egress"], load: async () => (await import("./egress.js")).register },
  { names: ["operator"], load: async () => (await import("./cluster-operator.js")).register },
  { names: ["plugin-host"], load: async () => (await import("./plugin-host.js")).register },
];

/**
 * The modules a command line needs: the one that adds its subcommand, or every module when the
 * line names none of them (no arguments, `--help`, `help`, a mistyped name that commander should
 * answer with a suggestion).
 */
export function modulesFor(argv: readonly string[]): readonly CommandModule[] {
  const first = argv[0];
  const one = first === undefined ? undefined : COMMANDS.find((c) => c.names.includes(first));
  return one === undefined ? COMMANDS : [one];
}
