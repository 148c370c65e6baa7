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

const firstDuplicate: DataValidateFunction = (data: unknown): boolean => {
  firstDuplicate.errors = [];
  if (!Array.isArray(data)) return true;
  const seen = new Map<string, number>();
  for (let i = 0; i < data.length; i++) {
    const key = canonicalize(data[i]);
    const j = seen.get(key);
    if (j !== undefined) {
      // The message ajv's own keyword gives, so a refusal reads the same.
      firstDuplicate.errors = [{ keyword: "uniqueItems", message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, params: { i, j } }];
      return false;
    }
    seen.set(key, i);
  }
  return true;
};

/** The keyword, replacing ajv's own (`ajv.removeKeyword("uniqueItems")` first). `uniqueItems: false` checks nothing. */
export const UNIQUE_ITEMS: FuncKeywordDefinition = {
  keyword: "uniqueItems",
  type: "array",
  schemaType: "boolean",
  errors: true,
  compile: (schema: unknown) => (schema === true ? firstDuplicate : () => true),
};
