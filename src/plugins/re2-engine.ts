/**
 * The RE2 engine (re2js) as the model's pattern code reaches it, without loading it (docs/adr/0188).
 *
 * re2js is the largest library a command that reads the log would otherwise load (about 270 KB of
 * code to compile at every start), and a read compiles a pattern only when a config schema must be
 * checked or a trusted signer is named by a subject pattern: on most logs, never. So regex.ts asks
 * this module for the engine instead of importing it, and the engine arrives in one of three ways:
 *
 * - config-schema.ts imports re2js and hands it over as it loads ({@link providePatternEngine}):
 *   every process that checks schemas (the reconciler, `apply`, the console, the tests, which import
 *   the model's door) has it, as before;
 * - a process may load it ahead with {@link loadPatternEngine} (an `import()`, its own chunk in the
 *   CLI's bundle);
 * - a process that cannot know ahead whether it will meet a pattern (the CLI's read commands)
 *   registers a synchronous loader ({@link providePatternEngineLoader}), called the first time a
 *   pattern is compiled.
 *
 * With none of these, compiling a pattern throws {@link PatternEngineNotLoaded} (a kind of
 * {@link SchemaChecksNotLoaded}, which the parsers let through and the read use cases answer by
 * loading and reading again): never a pattern read as refused because its engine was missing.
 * Pure: no I/O here; the loaders are given by the process.
 */
import type { RE2JS } from "re2js";
import { SchemaChecksNotLoaded } from "./schema-check.js";

/** The engine: re2js's `RE2JS` class. */
export type PatternEngine = typeof RE2JS;

/** Thrown when a pattern must be compiled and the engine was neither provided nor loadable. */
export class PatternEngineNotLoaded extends SchemaChecksNotLoaded {
  constructor() {
    super();
    this.message = "the RE2 engine is not loaded: await loadPatternEngine() (or register a loader) before compiling a pattern";
    this.name = "PatternEngineNotLoaded";
  }
}

let engine: PatternEngine | undefined;
let loader: (() => PatternEngine) | undefined;

/** Called by config-schema.ts as it loads, and by {@link loadPatternEngine}. */
export function providePatternEngine(e: PatternEngine): void {
  engine ??= e;
}

/** Registers how to load the engine synchronously on first use (the CLI's entry does, from node_modules). */
export function providePatternEngineLoader(load: () => PatternEngine): void {
  loader = load;
}

/** Loads the engine (once) by `import()`: what that costs is paid only by the process that calls this. */
export async function loadPatternEngine(): Promise<PatternEngine> {
  if (engine === undefined) {
    const { RE2JS: loaded } = await import("re2js");
    providePatternEngine(loaded);
  }
  return engine as PatternEngine;
}

/** The engine: provided, or loaded now by the registered loader; else {@link PatternEngineNotLoaded}. */
export function patternEngine(): PatternEngine {
  if (engine === undefined && loader !== undefined) providePatternEngine(loader());
  if (engine === undefined) throw new PatternEngineNotLoaded();
  return engine;
}

/** Whether the engine is in this process (the start-up tests ask). */
export function patternEngineLoaded(): boolean {
  return engine !== undefined;
}

/** Forgets the engine and the loader: for tests that start as a fresh command does. */
export function resetPatternEngineForTests(e?: PatternEngine, load?: () => PatternEngine): void {
  engine = e;
  loader = load;
}
