/**
 * `uniqueItems` in linear time. ajv compares every pair of items when they may be objects or
 * arrays, so a 64 KiB config of 16,000 small arrays under a vendor's `uniqueItems: true` takes
 * seconds. Here each item is reduced once to its RFC 8785 canonical JSON, which is equal for two
 * items exactly when JSON Schema calls them equal (numbers by value, object members in any order),
 * and the duplicates are found with a map.
 */
import type { FuncKeywordDefinition } from "ajv";
import type { DataValidateFunction } from "ajv/dist/types/index.js";
import { canonicalize } from "json-canonicalize";

/**
 * The first pair of equal items, as `[earlier, later]` indexes, or undefined. The precompiled
 * meta-schema validators (src/gen/config-meta-schemas.js) call it too, so both check alike.
 */
export function duplicatePair(data: readonly unknown[]): [number, number] | undefined {
  const seen = new Map<string, number>();
  for (let i = 0; i < data.length; i++) {
    const key = canonicalize(data[i]);
    const j = seen.get(key);
    if (j !== undefined) return [j, i];
    seen.set(key, i);
  }
  return undefined;
}

/** The message ajv's own keyword gives, so a refusal reads the same. */
export function duplicateMessage(j: number, i: number): string {
  return `must NOT have duplicate items (items ## ${j} and ${i} are identical)`;
}

const firstDuplicate: DataValidateFunction = (data: unknown): boolean => {
  firstDuplicate.errors = [];
  if (!Array.isArray(data)) return true;
  const pair = duplicatePair(data);
  if (pair === undefined) return true;
  const [j, i] = pair;
  firstDuplicate.errors = [{ keyword: "uniqueItems", message: duplicateMessage(j, i), params: { i, j } }];
  return false;
};

/** The keyword, replacing ajv's own (`ajv.removeKeyword("uniqueItems")` first). `uniqueItems: false` checks nothing. */
export const UNIQUE_ITEMS: FuncKeywordDefinition = {
  keyword: "uniqueItems",
  type: "array",
  schemaType: "boolean",
  errors: true,
  compile: (schema: unknown) => (schema === true ? firstDuplicate : () => true),
};
