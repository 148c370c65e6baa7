#!/usr/bin/env node
// The `openfief` command. Runs the TypeScript sources through tsx so that `npx openfief` works
// in a clone right after `npm ci`, with no build step.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
