/**
 * The standard formats (uri, email, date-time, …) a config schema may name, from ajv-formats, with
 * no network access of any kind. ajv-formats checks them with JavaScript regular expressions, and
 * some of those take time quadratic in the string (`url` spends seconds on 32 KiB of `@:`), so a
 * string longer than {@link CAPS.formatString} fails every format whose check is not plainly
 * linear. Such strings (a URI, an e-mail address, a date) are short; `byte` (base64, a linear
 * check) and the formats that accept any string are left uncapped.
 */
import type { Format, FormatDefinition } from "ajv";
import { formatNames, fullFormats } from "ajv-formats/dist/formats.js";
import { CAPS } from "./caps.js";

// Linear checks, or none: a long base64 blob in a config is legitimate.
const UNCAPPED = new Set<string>(["byte", "binary", "password"]);

function isStringDefinition(format: Exclude<Format, true | RegExp | string | ((s: string) => boolean)>): format is FormatDefinition<string> {
  return format.type !== "number" && format.async !== true;
}

function capped(format: Format): Format {
  if (format === true) return true;
  const within = (s: string): boolean => s.length <= CAPS.formatString;
  const testOf = (v: RegExp | string | ((s: string) => boolean)): ((s: string) => boolean) => {
    if (typeof v === "function") return v;
    const re = typeof v === "string" ? new RegExp(v, "u") : v;
    return (s) => re.test(s);
  };
  if (format instanceof RegExp || typeof format === "string" || typeof format === "function") {
    const test = testOf(format);
    return (s: string) => within(s) && test(s);
  }
  // Number formats (int32, float, …) and asynchronous ones (none are loaded) are kept as they are.
  if (!isStringDefinition(format)) return format;
  const test = testOf(format.validate);
  const out: FormatDefinition<string> = { validate: (s: string) => within(s) && test(s) };
  return format.compare === undefined ? out : { ...out, compare: format.compare };
}

/** Every format ajv-formats defines, by name, each capped as the module comment says. */
export const SCHEMA_FORMATS: ReadonlyMap<string, Format> = new Map(
  formatNames.map((name) => [name, UNCAPPED.has(name) ? fullFormats[name] : capped(fullFormats[name])]),
);
