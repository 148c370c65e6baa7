/**
 * `openfief export-tiles DIR`: the log's Merkle tree as C2SP tlog-tiles files (the newest signed
 * checkpoint, its tiles and entry bundles) in a folder any static web server can publish, each
 * file exactly what the console's `/tlog/<path>` serves. `--sign` first signs a checkpoint of the
 * whole log with the log's key (docs/adr/0141–0143).
 *
 * `openfief log-key FILE [--name NAME]`: makes a log signing key in a new file (0600), for a
 * cluster's Secret (docs/adr/0144), and prints the verifier key anyone checks checkpoints with.
 */
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import type { Command } from "commander";
import { AppError, checkExportDir, exportTiles, loadLogKey, readLogKey, signCheckpointNow, writeNewLogKey } from "../../app/index.js";
import { dataDir, print, printJson, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";

interface LogKeyOptions {
  name?: string;
  json?: boolean;
}

interface ExportOptions extends DataOptions {
  sign?: boolean;
  logKey?: string;
}

export function register(program: Command): void {
  withJson(withData(program.command("export-tiles")))
    .argument("<dir>", "the folder to write (made when missing; files in it are replaced)")
    .description("write the log's newest signed checkpoint, its Merkle tree tiles and entry bundles (C2SP tlog-tiles) to a folder a static web server can publish")
    .option("--sign", "first sign a checkpoint of the whole log with the log's key")
    .option("--log-key <file>", "the log's signing key for --sign (default: $OPENFIEF_LOG_KEY_FILE, else <data>/log-key)")
    .action(async (dir: string, o: ExportOptions) => {
      // A folder that cannot take the export is refused before the log is opened.
      checkExportDir(dir);
      const key = o.sign === true ? loadLogKey({ ...(o.logKey === undefined ? {} : { file: o.logKey }), env: process.env, dataDir: dataDir(o), create: false }) : null;
      const r = await withLog(o, async (store) => {
        if (key !== null) await signCheckpointNow(store, key);
        return exportTiles(store, dir);
      });
      if (o.json === true) printJson({ dir: r.dir, size: r.checkpoint.size, root: r.checkpoint.root, tiles: r.tiles, bundles: r.bundles, skipped: r.skipped });
      else {
        print(`wrote the checkpoint of ${r.checkpoint.size} events (root ${r.checkpoint.root}), ${r.tiles} tile(s) and ${r.bundles} entry bundle(s) to ${r.dir}`);
        for (const s of r.skipped) print(`  left out ${s}: an event in it is over 65,535 bytes, which a bundle cannot hold (its proof carries it)`);
      }
    });

  withJson(program.command("log-key"))
    .argument("<file>", "the file to make (refused when it is there: a log's key is never replaced)")
    .description("make a log signing key (Ed25519, C2SP signed-note) in a new file, readable by its owner only, and print its verifier key; for the cluster's Secret openfief-log-key")
    .option("--name <name>", "the log's name, the origin line of its checkpoints (default: openfief/log/ and 16 hex digits of its public key)")
    .action((file: string, o: LogKeyOptions) => {
      if (!existsSync(dirname(file))) throw new AppError("usage", `cannot make ${file}: its folder ${dirname(file)} does not exist`, "FILE");
      if (!writeNewLogKey(file, o.name)) throw new AppError("usage", `${file} is there: a log's key is never replaced (remove it first, if no checkpoint was signed with it)`, "FILE");
      const key = readLogKey(file);
      if (o.json === true) printJson({ file, origin: key.origin, verifierKey: key.verifierKey });
      else {
        print(`made the log key ${file} (mode 0600); checkpoints signed with it say ${key.origin}`);
        print(`verifier key: ${key.verifierKey}`);
      }
    });
}
