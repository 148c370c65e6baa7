/**
 * The regular expressions of a config schema (`pattern`, and the names of `patternProperties`),
 * checked before ajv compiles anything: each must be valid ECMAScript, mean the same under RE2 and
 * compile there within the caps (see regex.ts), and all of them together may not exceed
 * {@link CAPS.schemaPatternPrograms} RE2 instructions, which bounds the work per character of config.
 */
import { CAPS, tooLarge } from "./caps.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import { isPlainObject } from "./json.js";
import { compileSchemaPattern } from "./regex.js";
import type { SchemaNode } from "./schema-walk.js";

/** Every pattern RE2 cannot take, at its path, and the total's cap at `path`. */
export function patternProblems(nodes: readonly SchemaNode[], path: string): FieldError[] {
  const errors: FieldError[] = [];
  let program = 0;
  const check = (pattern: string, at: string): void => {
    const compiled = compileSchemaPattern(pattern);
    if (compiled.ok) program += compiled.program;
    else errors.push(fieldError(compiled.tooLarge ? ErrorCode.TooLarge : ErrorCode.InvalidConfigSchema, at, compiled.message));
  };
  for (const n of nodes) {
    if (!isPlainObject(n.schema)) continue;
    const pattern = n.schema["pattern"];
    if (typeof pattern === "string") check(pattern, join(n.path, "pattern"));
    const props = n.schema["patternProperties"];
    if (isPlainObject(props)) for (const name of Object.keys(props)) check(name, join(join(n.path, "patternProperties"), name));
  }
  if (program > CAPS.schemaPatternPrograms) {
    errors.push(tooLarge(path, `the schema's patterns compile to ${program} RE2 instructions together; at most ${CAPS.schemaPatternPrograms} are allowed`));
  }
  return errors;
}
