/**
 * Every test file starts with the RE2 engine at hand, as every process of the product does: the
 * CLI registers a loader for it and the schema checks bring it (docs/adr/0188). A test of the model
 * that imports regex.ts or signers.ts alone would otherwise meet `PatternEngineNotLoaded`; the
 * tests of that refusal reset the engine themselves and give it back when they end.
 */
import { RE2JS } from "re2js";
import { resetPatternEngineForTests } from "../../src/plugins/re2-engine.js";

resetPatternEngineForTests(RE2JS);
