/**
 * What `openfief --help` lists for each subcommand, so the full help (and a mistyped command's
 * suggestion) needs no command module loaded (docs/adr/0188). Generated from the modules by
 * `npx tsx scripts/gen-cli-summaries.ts`; test/cli/help-summaries.test.ts fails when it is stale.
 */
import { Help } from "commander";
import type { Command } from "commander";

/** One subcommand as the full help lists it. */
export interface Summary {
  readonly name: string;
  /** What the help's left column shows: the name, `[options]` when it has any, its arguments. */
  readonly term: string;
  readonly description: string;
  readonly hidden: boolean;
  readonly aliases: readonly string[];
}

/** Every subcommand, in the order the command modules register them. */
export const SUMMARIES: readonly Summary[] = [
  {"name":"reconcile","term":"reconcile [options]","description":"run one reconcile pass over the log (verify, decide, compile, apply) and exit","hidden":false,"aliases":[]},
  {"name":"up","term":"up [options]","description":"run the control plane: event store, reconciler, directory target and the egress proxy, until stopped","hidden":false,"aliases":[]},
  {"name":"login","term":"login [options]","description":"print a session token for the API (Authorization: Bearer), or with --link a one-time sign-in link to the console","hidden":false,"aliases":[]},
  {"name":"apply","term":"apply [options]","description":"record Plugin and PluginGrant resources (YAML or JSON, as written for the cluster)","hidden":false,"aliases":[]},
  {"name":"delete","term":"delete [options] <kind> <name>","description":"record that a Plugin (its workload stops, its allow-list entry goes) or a PluginGrant is deleted","hidden":false,"aliases":[]},
  {"name":"approve","term":"approve [options] <plugin>","description":"add exactly the pending permissions of a plugin's current version to its grant","hidden":false,"aliases":[]},
  {"name":"get","term":"get [options] <what>","description":"list plugins: status, version running, version asked for, signature verdict, pending approval, problems","hidden":false,"aliases":[]},
  {"name":"why","term":"why [options] <plugin>","description":"explain the latest rollout decision of a plugin: its inputs and the events that caused it","hidden":false,"aliases":[]},
  {"name":"log","term":"log [options]","description":"print the event log (JSON lines with --json), optionally filtered, and follow it","hidden":false,"aliases":[]},
  {"name":"replay","term":"replay [options]","description":"show the state as it was at a sequence number or a time, folded from the log","hidden":false,"aliases":[]},
  {"name":"verify-log","term":"verify-log [options]","description":"walk the hash chain, naming the first event whose hash does not hold, and check the guards that keep the log append-only; with --checkpoint, check that the log still has the root a signed checkpoint kept elsewhere says (a log rebuilt wholesale, or its newest events deleted, is caught), and with --previous that it extends an older one (a fork is caught)","hidden":false,"aliases":[]},
  {"name":"check-decisions","term":"check-decisions [options]","description":"re-run the deciders over the log, each decision under the rules it names: report every one they do not reproduce (exit 1), and apart those today's rules would decide differently","hidden":false,"aliases":[]},
  {"name":"deliveries","term":"deliveries [options] [plugin] [batch]","description":"list the deliveries kept (newest first; those of a removed instance marked) and each connector's next sync; `deliveries get BATCH` prints one as JSON","hidden":false,"aliases":[]},
  {"name":"import","term":"import [options] <plugin> <file>","description":"import a statement file through a running connector's ImportFile, as one batch, and keep its delivery","hidden":false,"aliases":[]},
  {"name":"call","term":"call [options] <plugin> <method>","description":"call a running WebAssembly plugin once (manifest, sync, import_file, …) and print the result or the error code","hidden":false,"aliases":[]},
  {"name":"verify","term":"verify [options] [image]","description":"verify an image's signatures offline and decide with the trust policy (exit 0 admitted, 1 refused, 2 usage)","hidden":false,"aliases":[]},
  {"name":"verify-bundle","term":"verify-bundle [options]","description":"verify a Sigstore bundle offline against a trust root and one identity (exit 0 verified, 1 refused, 2 usage)","hidden":false,"aliases":[]},
  {"name":"token","term":"token [options] <plugin>","description":"mint a short-lived token for PLUGIN (audience openfief-egress, or openfief-core with --audience core), signed by the embedded key","hidden":false,"aliases":[]},
  {"name":"egress","term":"egress [options]","description":"run the egress proxy (cluster mode: ConfigMap allow-lists, TokenReview)","hidden":false,"aliases":[]},
  {"name":"operator","term":"operator [options]","description":"run the operator in a Kubernetes cluster (in-cluster credentials unless --kubeconfig)","hidden":false,"aliases":[]},
  {"name":"console","term":"console [options]","description":"serve the console and the API of a cluster over its shared log (sign-in with the cluster's tokens)","hidden":false,"aliases":[]},
  {"name":"plugin-host","term":"plugin-host [options]","description":"run the cluster's plugin host: the WebAssembly plugins of the openfief-plugin-host ConfigMap","hidden":false,"aliases":[]},
  {"name":"store","term":"store","description":"the event log's store: a PostgreSQL log's schema","hidden":false,"aliases":[]},
  {"name":"migrate-store","term":"migrate-store [options]","description":"copy a log to another store and verify the copy: the same rows, the same hashes, byte for byte","hidden":false,"aliases":[]},
  {"name":"prove","term":"prove [options] <seq>","description":"write a self-contained proof (C2SP tlog-proof) that an event is in the log: the event, its inclusion proof, and a signed checkpoint with its witnesses' cosignatures","hidden":false,"aliases":[]},
  {"name":"verify-proof","term":"verify-proof [options] <file>","description":"check a proof file offline with the log's public key (and the witnesses you require): one line per failure, exit 1 when any","hidden":false,"aliases":[]},
  {"name":"export","term":"export [options]","description":"write events from a sequence number with what ties them to a signed checkpoint (and its cosignatures), to check offline with verify-export","hidden":false,"aliases":[]},
  {"name":"verify-export","term":"verify-export [options] <file>","description":"check an export offline with the log's public key (and the witnesses you require): one line per failure, exit 1 when any","hidden":false,"aliases":[]},
  {"name":"export-tiles","term":"export-tiles [options] <dir>","description":"write the log's newest signed checkpoint, its Merkle tree tiles and entry bundles (C2SP tlog-tiles) to a folder a static web server can publish","hidden":false,"aliases":[]},
  {"name":"log-key","term":"log-key [options] <file>","description":"make a log signing key (Ed25519, C2SP signed-note) in a new file, readable by its owner only, and print its verifier key; for the cluster's Secret openfief-log-key","hidden":false,"aliases":[]},
  {"name":"witness","term":"witness [options]","description":"run a transparency-log witness: cosign the checkpoints of the given logs, never two histories of one","hidden":false,"aliases":[]},
];

/**
 * Adds each subcommand as a stub that only its help line comes from: a program for printing the
 * full help or refusing a mistyped name, never for running a command.
 */
export function registerSummaries(program: Command): void {
  const terms = new Map<string, string>();
  for (const s of SUMMARIES) {
    const stub = program.command(s.name, { hidden: s.hidden }).description(s.description);
    for (const alias of s.aliases) stub.alias(alias);
    terms.set(s.name, s.term);
  }
  const standard = new Help();
  program.configureHelp({ subcommandTerm: (c) => terms.get(c.name()) ?? standard.subcommandTerm(c) });
}
