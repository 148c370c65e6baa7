/**
 * The one escaping helper of the console: `html` is a tagged template that escapes every
 * interpolated value for HTML text and attribute values (`& < > " '`), unless the value is
 * already-escaped {@link Markup} (another `html` result). Arrays are joined, each item escaped the
 * same way; null, undefined and false render as nothing. Nothing reaches a page any other way, so
 * a value holding markup — a config value, a manifest field, a host name — shows as text.
 */

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text escaped for HTML text and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

let make: (text: string) => Markup;

/** Markup that is already escaped: only `html` and {@link trusted} make one. */
export class Markup {
  readonly #text: string;

  private constructor(text: string) {
    this.#text = text;
  }

  static {
    make = (text) => new Markup(text);
  }

  toString(): string {
    return this.#text;
  }
}

/** A value `html` may interpolate. */
export type Interpolated = Markup | string | number | boolean | null | undefined | readonly Interpolated[];

function render(v: Interpolated): string {
  if (v === null || v === undefined || v === false) return "";
  if (v instanceof Markup) return v.toString();
  if (Array.isArray(v)) return v.map(render).join("");
  return escapeHtml(String(v));
}

/** Builds markup from a template, escaping every interpolation that is not already {@link Markup}. */
export function html(strings: TemplateStringsArray, ...values: readonly Interpolated[]): Markup {
  let out = strings[0] ?? "";
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? "");
  });
  return make(out);
}

/**
 * Markup from a constant written in this code (a meta tag whose attribute holds JSON). Never call
 * it with anything read from a request, the log or a plugin.
 */
export function trusted(constant: string): Markup {
  return make(constant);
}
