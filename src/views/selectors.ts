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
const isSpecial = (c: string): boolean => "=!(),><".includes(c) && c !== "";

/**
 * The lexer of `labels.Parse`. Go's lexer reads byte 0 as "no more input": where a token would
 * start it ends the selector, inside a token it ends that token (and is skipped).
 */
function lex(s: string): Array<{ tok: Tok; lit: string }> {
  let pos = 0;
  const read = (): string => {
    if (pos < s.length) return s[pos++] as string;
    return "\u0000";
  };
  const out: Array<{ tok: Tok; lit: string }> = [];
  for (;;) {
    let ch = read();
    while (isSpace(ch)) ch = read();
    if (ch === "\u0000") {
      out.push({ tok: "eos", lit: "" });
      return out;
    }
    pos--;
    if (isSpecial(ch)) {
      let buffer = "";
      let last: { tok: Tok; lit: string } | null = null;
      for (;;) {
        const c = read();
        if (c === "\u0000") break;
        if (!isSpecial(c)) {
          pos--;
          break;
        }
        buffer += c;
        const t = TOKENS.get(buffer);
        if (t !== undefined) last = { tok: t, lit: buffer };
        else if (last !== null) {
          pos--;
          break;
        }
      }
      out.push(last ?? { tok: "error", lit: buffer });
    } else {
      let buffer = "";
      for (;;) {
        const c = read();
        if (c === "\u0000") break;
        if (isSpecial(c) || isSpace(c)) {
          pos--;
          break;
        }
        buffer += c;
      }
      const t = TOKENS.get(buffer);
      out.push({ tok: t === "in" || t === "notin" ? t : "id", lit: buffer });
    }
  }
}

/**
 * Parses a label selector exactly as `labels.Parse` accepts or refuses it (grammar, key and value
 * formats, integer values of `>` and `<`). Returns the requirements, or null when it is invalid.
 */
export function parseLabelSelector(selector: string): LabelRequirement[] | null {
  const items = lex(selector);
  let i = 0;
  // In a value position, `in` and `notin` are plain identifiers.
  const peek = (values: boolean): Tok => {
    const t = (items[i] as { tok: Tok }).tok;
    return values && (t === "in" || t === "notin") ? "id" : t;
  };
  const take = (values: boolean): { tok: Tok; lit: string } => {
    const item = items[i++] as { tok: Tok; lit: string };
    return { tok: values && (item.tok === "in" || item.tok === "notin") ? "id" : item.tok, lit: item.lit };
  };
  const reqs: LabelRequirement[] = [];

  const requirement = (): LabelRequirement | null => {
    let op: LabelRequirement["op"] | null = null;
    let t = take(true);
    if (t.tok === "!") {
      op = "!";
      t = take(true);
    }
    if (t.tok !== "id" || !isLabelKey(t.lit)) return null;
    const key = t.lit;
    const next = peek(true);
    if (next === "eos" || next === ",") return { key, op: op ?? "exists", values: [] };
    if (op === "!") return { key, op, values: [] };
    const o = take(false).tok;
    const ops: Partial<Record<Tok, LabelRequirement["op"]>> = { in: "in", "=": "=", "==": "==", ">": "gt", "<": "lt", notin: "notin", "!=": "!=" };
    const operator = ops[o];
    if (operator === undefined) return null;
    const values = new Set<string>();
    if (operator === "in" || operator === "notin") {
      if (take(true).tok !== "(") return null;
      const first = peek(true);
      if (first === ")") {
        take(true);
        values.add("");
      } else if (first === "id" || first === ",") {
        for (;;) {
          const v = take(true);
          if (v.tok === "id") {
            values.add(v.lit);
            const after = peek(true);
            if (after === ",") continue;
            if (after === ")") break;
            return null;
          }
          if (v.tok === ",") {
            if (values.size === 0) values.add("");
            const after = peek(true);
            if (after === ")") {
              values.add("");
              break;
            }
            if (after === ",") values.add("");
            continue;
          }
          return null;
        }
        if (take(true).tok !== ")") return null;
      } else return null;
    } else {
      const next2 = peek(true);
      if (next2 === "eos" || next2 === ",") values.add("");
      else {
        const v = take(true);
        if (v.tok !== "id") return null;
        values.add(v.lit);
      }
    }
    const list = [...values];
    if ((operator === "gt" || operator === "lt") && !list.every((v) => /^[+-]?[0-9]+$/.test(v) && BigInt(v) >= -(2n ** 63n) && BigInt(v) < 2n ** 63n)) return null;
    if (!list.every(isLabelValue)) return null;
    return { key, op: operator, values: list };
  };

  for (;;) {
    const t = peek(true);
    if (t === "eos") break;
    if (t !== "id" && t !== "!") return null;
    const r = requirement();
    if (r === null) return null;
    reqs.push(r);
    const after = take(true).tok;
    if (after === "eos") break;
    if (after !== ",") return null;
    const t2 = peek(true);
    if (t2 !== "id" && t2 !== "!") return null;
  }
  return reqs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Whether labels satisfy every requirement (apimachinery's `Requirement.Matches`). */
export function labelsMatch(reqs: readonly LabelRequirement[], labels: Readonly<Record<string, string>>): boolean {
  return reqs.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = has ? (labels[r.key] as string) : undefined;
    switch (r.op) {
      case "in":
      case "=":
      case "==":
        return v !== undefined && r.values.includes(v);
      case "notin":
      case "!=":
        return v === undefined || !r.values.includes(v);
      case "exists":
        return has;
      case "!":
        return !has;
      case "gt":
      case "lt": {
        if (v === undefined || !/^[+-]?[0-9]+$/.test(v)) return false;
        const a = BigInt(v);
        const b = BigInt(r.values[0] as string);
        return r.op === "gt" ? a > b : a < b;
      }
    }
  });
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
