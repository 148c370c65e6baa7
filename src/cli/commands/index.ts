import type { Command } from "commander";
import { register as apply } from "./apply.js";
import { register as approve } from "./approve.js";
import { register as call } from "./call.js";
import { register as get } from "./get.js";
import { register as egress } from "./egress.js";
import { register as log } from "./log.js";
import { register as login } from "./login.js";
import { register as token } from "./token.js";
import { registerOperator } from "./operator.js";
import { register as pluginHost } from "./plugin-host.js";
import { clusterReconcilerFactory } from "../../app/index.js";
import { register as up } from "./up.js";
import { register as verify } from "./verify.js";
import { register as verifyBundle } from "./verify-bundle.js";
import { register as why } from "./why.js";

/** Every subcommand's `register`. Add one line per command module. */
export const commands: ReadonlyArray<(program: Command) => void> = [up, login, apply, approve, get, why, log, call, verify, verifyBundle, token, egress, registerOperator(clusterReconcilerFactory), pluginHost];
