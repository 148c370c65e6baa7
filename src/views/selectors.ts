/**
 * Label and field selectors as kube-apiserver parses them (apimachinery `labels.Parse`,
 * `fields.ParseSelector`). RequestInfo needs them to know whether a list's options decode (a bad
 * selector leaves the request unnamed) and which name a `fieldSelector=metadata.name=` asks for;
 * the embedded upstream needs them to filter what it serves exactly as a cluster would.
 */

// ---- label selectors --------------------------------------------------------------------------------

/** One requirement of a label selector. */
export interface LabelRequirement {
  readonly key: string;
  readonly op: "in" | "notin" | "=" | "==" | "!=" | "exists" | "!" | "gt" | "lt";
  readonly values: readonly string[];
}

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** apimachinery's IsQualifiedName: `[prefix/]name`, prefix a DNS subdomain, name at most 63 characters. */
export function isLabelKey(k: string): boolean {
  const parts = k.split("/");
  let name: string;
  if (parts.length === 1) name = parts[0] as string;
  else if (parts.length === 2) {
    const prefix = parts[0] as string;
    if (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) return false;
    name = parts[1] as string;
  } else return false;
  return name.length > 0 && name.length <= 63 && QUALIFIED_NAME.test(name);
}

/** apimachinery's IsValidLabelValue: empty, or at most 63 characters of the qualified-name form. */
export function isLabelValue(v: string): boolean {
  return v === "" || (v.length <= 63 && QUALIFIED_NAME.test(v));
}

type Tok = "error" | "eos" | ")" | "," | "!" | "==" | "=" | ">" | "id" | "in" | "<" | "!=" | "notin" | "(";
const TOKENS: ReadonlyMap<string, Tok> = new Map<string, Tok>([
  [")", ")"], [",", ","], ["!", "!"], ["==", "=="], ["=", "="], [">", ">"], ["in", "in"], ["<", "<"], ["!=", "!="], ["notin", "notin"], ["(", "("],
]);
const isSpace = (c: string): boolean => c === " " || c === "\t" || c === "\r" || c === "\n";
const isSpecial = (c: string): boolean => c !== "" && "=!(),><".includes(c);
const END = "\u0000";

interface Item { readonly tok: Tok; readonly lit: string }

/**
 * The lexer of `labels.Parse`. Go's lexer reads byte 0 as "no more input": where a token would
 * start it ends the selector, inside a token it ends that token (and is skipped).
 */
class Lexer {
  #pos = 0;
  constructor(private readonly s: string) {}

  #read(): string {
    return this.#pos < this.s.length ? (this.s[this.#pos++] as string) : END;
  }

  /** Operators: the longest run of special characters that is still a token. */
  #special(): Item {
    let buffer = "";
    let last: Item | null = null;
    for (let c = this.#read(); c !== END; c = this.#read()) {
      if (!isSpecial(c)) {
        this.#pos--;
        break;
      }
      buffer += c;
      const t = TOKENS.get(buffer);
      if (t !== undefined) last = { tok: t, lit: buffer };
      else if (last !== null) {
        this.#pos--;
        break;
      }
    }
    return last ?? { tok: "error", lit: buffer };
  }

  /** An identifier, or the keywords `in` and `notin`. */
  #word(): Item {
    let buffer = "";
    for (let c = this.#read(); c !== END; c = this.#read()) {
      if (isSpecial(c) || isSpace(c)) {
        this.#pos--;
        break;
      }
      buffer += c;
    }
    const t = TOKENS.get(buffer);
    return { tok: t === "in" || t === "notin" ? t : "id", lit: buffer };
  }

  next(): Item {
    let ch = this.#read();
    while (isSpace(ch)) ch = this.#read();
    if (ch === END) return { tok: "eos", lit: "" };
    this.#pos--;
    return isSpecial(ch) ? this.#special() : this.#word();
  }

  all(): Item[] {
    const out: Item[] = [];
    for (let item = this.next(); ; item = this.next()) {
      out.push(item);
      if (item.tok === "eos") return out;
    }
  }
}

const BINARY: Partial<Record<Tok, LabelRequirement["op"]>> = { in: "in", "=": "=", "==": "==", ">": "gt", "<": "lt", notin: "notin", "!=": "!=" };
const INT64 = (v: string): boolean => /^[+-]?[0-9]+$/.test(v) && BigInt(v) >= -(2n ** 63n) && BigInt(v) < 2n ** 63n;

/** The parser of `labels.Parse`: null for anything it refuses. */
class Parser {
  #i = 0;
  constructor(private readonly items: readonly Item[]) {}

  /** In a value position, `in` and `notin` are plain identifiers. */
  peek(values: boolean): Tok {
    const t = (this.items[this.#i] as Item).tok;
    return values && (t === "in" || t === "notin") ? "id" : t;
  }

  take(values: boolean): Item {
    const item = this.items[this.#i++] as Item;
    return { tok: values && (item.tok === "in" || item.tok === "notin") ? "id" : item.tok, lit: item.lit };
  }

  selector(): LabelRequirement[] | null {
    const reqs: LabelRequirement[] = [];
    for (let t = this.peek(true); t !== "eos"; t = this.peek(true)) {
      if (t !== "id" && t !== "!") return null;
      const r = this.requirement();
      if (r === null) return null;
      reqs.push(r);
      const after = this.take(true).tok;
      if (after === "eos") break;
      const t2 = this.peek(true);
      if (after !== "," || (t2 !== "id" && t2 !== "!")) return null;
    }
    return reqs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  requirement(): LabelRequirement | null {
    let t = this.take(true);
    const negated = t.tok === "!";
    if (negated) t = this.take(true);
    if (t.tok !== "id" || !isLabelKey(t.lit)) return null;
    const key = t.lit;
    const next = this.peek(true);
    if (next === "eos" || next === ",") return { key, op: negated ? "!" : "exists", values: [] };
    if (negated) return { key, op: "!", values: [] };
    const op = BINARY[this.take(false).tok];
    if (op === undefined) return null;
    const values = this.valuesOf(op);
    return values === null ? null : { key, op, values };
  }

  /** The values an operator takes, checked as NewRequirement checks them. */
  valuesOf(op: LabelRequirement["op"]): string[] | null {
    const values = op === "in" || op === "notin" ? this.valueSet() : this.exactValue();
    if (values === null) return null;
    if ((op === "gt" || op === "lt") && !values.every(INT64)) return null;
    return values.every(isLabelValue) ? values : null;
  }

  /** `(a, b, …)`, where empty entries are the empty value. */
  valueSet(): string[] | null {
    if (this.take(true).tok !== "(") return null;
    const first = this.peek(true);
    if (first === ")") {
      this.take(true);
      return [""];
    }
    if (first !== "id" && first !== ",") return null;
    const values = this.identifiers();
    if (values === null || this.take(true).tok !== ")") return null;
    return [...values];
  }

  identifiers(): Set<string> | null {
    const values = new Set<string>();
    for (;;) {
      const v = this.take(true);
      const after = this.peek(true);
      if (v.tok === "id") {
        values.add(v.lit);
        if (after === ")") return values;
        if (after !== ",") return null;
      } else if (v.tok === ",") {
        if (values.size === 0 || after === ")" || after === ",") values.add("");
        if (after === ")") return values;
      } else return null;
    }
  }

  exactValue(): string[] | null {
    const next = this.peek(true);
    if (next === "eos" || next === ",") return [""];
    const v = this.take(true);
    return v.tok === "id" ? [v.lit] : null;
  }
}

/**
 * Parses a label selector exactly as `labels.Parse` accepts or refuses it (grammar, key and value
 * formats, integer values of `>` and `<`). Returns the requirements, or null when it is invalid.
 */
export function parseLabelSelector(selector: string): LabelRequirement[] | null {
  return new Parser(new Lexer(selector).all()).selector();
}

type Labels = Readonly<Record<string, string>>;

function compareInt(r: LabelRequirement, v: string | undefined): boolean {
  if (v === undefined || !/^[+-]?[0-9]+$/.test(v)) return false;
  const a = BigInt(v);
  const b = BigInt(r.values[0] as string);
  return r.op === "gt" ? a > b : a < b;
}

/** apimachinery's `Requirement.Matches`, one operator each. */
const MATCHES: Record<LabelRequirement["op"], (r: LabelRequirement, v: string | undefined) => boolean> = {
  in: (r, v) => v !== undefined && r.values.includes(v),
  "=": (r, v) => v !== undefined && r.values.includes(v),
  "==": (r, v) => v !== undefined && r.values.includes(v),
  notin: (r, v) => v === undefined || !r.values.includes(v),
  "!=": (r, v) => v === undefined || !r.values.includes(v),
  exists: (_r, v) => v !== undefined,
  "!": (_r, v) => v === undefined,
  gt: compareInt,
  lt: compareInt,
};

/** Whether labels satisfy every requirement (apimachinery's `Requirement.Matches`). */
export function labelsMatch(reqs: readonly LabelRequirement[], labels: Labels): boolean {
  return reqs.every((r) => MATCHES[r.op](r, Object.prototype.hasOwnProperty.call(labels, r.key) ? labels[r.key] : undefined));
}

// ---- field selectors --------------------------------------------------------------------------------

/** One term of a field selector. */
export interface FieldTerm {
  readonly field: string;
  readonly op: "=" | "!=";
  readonly value: string;
}

/** Splits on commas not escaped by a backslash (the backslash kept), as `splitTerms` does. */
function splitTerms(s: string): string[] {
  if (s === "") return [];
  const terms: string[] = [];
  let start = 0;
  let slash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (slash) slash = false;
    else if (c === "\\") slash = true;
    else if (c === ",") {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

/** `\\`, `\,` and `\=` are escapes; any other escape, or a bare `,` or `=`, is an error. */
function unescapeValue(s: string): string | null {
  if (!/[\\,=]/.test(s)) return s;
  let out = "";
  let slash = false;
  for (const c of s) {
    if (slash) {
      if (c !== "\\" && c !== "," && c !== "=") return null;
      out += c;
      slash = false;
    } else if (c === "\\") slash = true;
    else if (c === "," || c === "=") return null;
    else out += c;
  }
  return slash ? null : out;
}

/**
 * Parses a field selector as `fields.ParseSelector` does: terms sorted as strings, each split at
 * the first `!=`, `==` or `=`, its value unescaped. Null when it is invalid.
 */
export function parseFieldSelector(selector: string): FieldTerm[] | null {
  const parts = splitTerms(selector).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const terms: FieldTerm[] = [];
  for (const part of parts) {
    if (part === "") continue;
    let split: { lhs: string; op: "=" | "!="; rhs: string } | null = null;
    for (let i = 0; i < part.length && split === null; i++) {
      const rest = part.slice(i);
      if (rest.startsWith("!=")) split = { lhs: part.slice(0, i), op: "!=", rhs: part.slice(i + 2) };
      else if (rest.startsWith("==")) split = { lhs: part.slice(0, i), op: "=", rhs: part.slice(i + 2) };
      else if (rest.startsWith("=")) split = { lhs: part.slice(0, i), op: "=", rhs: part.slice(i + 1) };
    }
    if (split === null) return null;
    const value = unescapeValue(split.rhs);
    if (value === null) return null;
    terms.push({ field: split.lhs, op: split.op, value });
  }
  return terms;
}

/** `RequiresExactMatch`: the value of the first (in sorted order) `field=` term. */
export function requiresExactMatch(terms: readonly FieldTerm[], field: string): string | undefined {
  return terms.find((t) => t.field === field && t.op === "=")?.value;
}
