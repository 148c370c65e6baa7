import type { Command } from "commander";
import { register as verify } from "./verify.js";
import { register as verifyBundle } from "./verify-bundle.js";

/** Every subcommand's `register`. Add one line per command module. */
export const commands: ReadonlyArray<(program: Command) => void> = [verifyBundle, verify];
