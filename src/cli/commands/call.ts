/**
 * `openfief call PLUGIN METHOD [--params JSON]`: calls a running WebAssembly plugin once, under
 * its effective permissions, and prints its result, or the error's code (the host's `plugin_*`
 * codes, or the plugin's own) and exits 1. Its HTTP goes through the egress proxy of the
 * `openfief up` holding the data folder; with none running, HTTP fails (and is recorded).
 */
import type { Command } from "commander";
import { AppError } from "../../app/index.js";
import { parseStrictJson } from "../../plugins/index.js";
import { pluginArg, print, printJson, withData, withJson } from "../context.js";
import type { DataOptions } from "../context.js";
import { withHostedPlugins } from "../hosted.js";

/** The most bytes `--params` may hold. */
const MAX_PARAMS = 64 * 1024;
const METHOD = /^[a-z][a-z0-9_]{0,63}$/;

export function register(program: Command): void {
  withJson(withData(program.command("call")))
    .description("call a running WebAssembly plugin once (manifest, sync, import_file, …) and print the result or the error code")
    .argument("<plugin>", "the plugin's name")
    .argument("<method>", "the ABI method: manifest, sync, import_file, …")
    .option("--params <json>", "the call's params, as JSON (default: {})", "{}")
    .action(async (name: string, method: string, o: DataOptions & { params: string }) => {
      pluginArg(name);
      if (!METHOD.test(method)) throw new AppError("usage", `invalid method ${JSON.stringify(method.slice(0, 64))}: lower-case letters, digits and _`);
      if (o.params.length > MAX_PARAMS) throw new AppError("too_large", `--params is over ${MAX_PARAMS} bytes`);
      const parsed = parseStrictJson(o.params, "--params");
      if (!parsed.ok) throw new AppError("usage", `--params is not JSON: ${parsed.errors[0]?.message ?? "invalid"}`);
      await withHostedPlugins(o, async (hosted) => {
        const r = await hosted.call(name, method, parsed.value);
        if (r.ok) {
          if (o.json === true) printJson({ ok: true, result: r.result });
          else print(JSON.stringify(r.result, null, 2));
          return;
        }
        if (o.json === true) printJson({ ok: false, error: r.error });
        else print(`${name} ${method}: ${r.error.code}${r.error.source === "plugin" ? " (reported by the plugin)" : ""}: ${r.error.message}`);
        process.exitCode = 1;
      });
    });
}
