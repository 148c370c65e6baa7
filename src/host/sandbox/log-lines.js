// @ts-check
/**
 * Plugin log capture, shared by the instance worker (for a guest's stdout and stderr) and the host
 * (for an unconfined executable's stderr, and again before anything reaches pino): text is cut
 * into lines, every Secret value the call was handed is replaced by `[REDACTED]` *before* a line
 * is cut to its cap (so a cut never leaves the start of a Secret), each line is capped, and
 * everything past the per-call cap is dropped and counted.
 *
 * Plain JavaScript: it runs inside the sandbox, whose workers start without a TypeScript loader
 * (ADR 0011).
 */

/** What replaces a Secret. */
export const REDACTED = "[REDACTED]";

/**
 * The strings to redact: each Secret, and each line of a Secret that spans lines (a log line can
 * hold only one of them), longest first so a Secret containing another is replaced whole.
 * @param {readonly string[]} secrets
 * @returns {string[]}
 */
export function redactionList(secrets) {
  /** @type {Set<string>} */
  const out = new Set();
  for (const s of secrets) {
    if (typeof s !== "string" || s === "") continue;
    out.add(s);
    if (/[\r\n]/.test(s)) for (const piece of s.split(/\r\n|\r|\n/)) if (piece !== "") out.add(piece);
  }
  return [...out].sort((a, b) => b.length - a.length);
}

/**
 * `text` with every listed string replaced by {@link REDACTED}.
 * @param {string} text
 * @param {readonly string[]} list from {@link redactionList}
 * @returns {string}
 */
export function redact(text, list) {
  let out = text;
  for (const s of list) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/**
 * Where to cut `text` at most `cap` characters in so that no listed string straddles the cut.
 * @param {string} text
 * @param {number} cap
 * @param {readonly string[]} list
 * @returns {number}
 */
export function safeCut(text, cap, list) {
  let cut = Math.min(cap, text.length);
  for (let moved = true; moved; ) {
    moved = false;
    for (const s of list) {
      // The earliest occurrence that could straddle starts after cut - s.length.
      let i = text.indexOf(s, Math.max(0, cut - s.length + 1));
      while (i >= 0 && i < cut) {
        if (i + s.length > cut) {
          cut = i;
          moved = true;
          break;
        }
        i = text.indexOf(s, i + 1);
      }
    }
  }
  return cut;
}

/**
 * What a call may still log, shared by its streams (stdout and stderr draw on one budget):
 * characters and lines (a flood of one-character lines costs a message each, so lines are capped
 * too).
 * @typedef {{ left: number, lines: number, dropped: number }} LogBudget
 */

/**
 * A fresh budget of `chars` characters in at most `lines` lines.
 * @param {number} chars
 * @param {number} lines
 * @returns {LogBudget}
 */
export function logBudget(chars, lines) {
  return { left: chars, lines, dropped: 0 };
}

/** Splits a stream of text into capped, redacted lines. */
export class LineCapture {
  /** @type {string} */ #pending = "";
  /** @type {boolean} */ #discarding = false;
  /** @type {LogBudget} */ #budget;
  /** @type {readonly string[]} */ #list;
  /** @type {number} */ #lineCap;
  /** @type {number} */ #hold;
  /** @type {(line: string) => void} */ #emit;

  /**
   * @param {{ lineChars: number, budget: LogBudget, list: readonly string[], emit: (line: string) => void }} o
   *   `list` from {@link redactionList}
   */
  constructor(o) {
    this.#list = o.list;
    this.#lineCap = o.lineChars;
    this.#budget = o.budget;
    this.#emit = o.emit;
    // A line is cut once it holds the cap plus the longest Secret: enough to see any Secret
    // that starts before the cap whole.
    this.#hold = o.lineChars + (this.#list[0]?.length ?? 0);
  }

  /**
   * Redacts with a new list from now on (an unconfined process is handed more Secrets as its
   * calls arrive); text not yet emitted is redacted with it.
   * @param {readonly string[]} list from {@link redactionList}
   */
  setList(list) {
    this.#list = list;
    this.#hold = this.#lineCap + (list[0]?.length ?? 0);
  }

  /** @param {string} text */
  write(text) {
    let rest = text;
    while (rest.length > 0) {
      const nl = rest.indexOf("\n");
      const piece = nl < 0 ? rest : rest.slice(0, nl);
      rest = nl < 0 ? "" : rest.slice(nl + 1);
      if (!this.#discarding) {
        // Nothing past the hold window is ever emitted, so nothing past it is kept.
        this.#pending += piece.slice(0, Math.max(0, this.#hold - this.#pending.length));
        if (this.#pending.length >= this.#hold) {
          this.#line(true);
          this.#discarding = true;
        }
      }
      if (nl >= 0) {
        if (!this.#discarding) this.#line(false);
        this.#discarding = false;
        this.#pending = "";
      }
    }
  }

  /** Emits what is left of an unterminated line. */
  end() {
    if (!this.#discarding && this.#pending !== "") this.#line(false);
    this.#pending = "";
    this.#discarding = false;
  }

  /** @param {boolean} long */
  #line(long) {
    let text = this.#pending.endsWith("\r") ? this.#pending.slice(0, -1) : this.#pending;
    this.#pending = "";
    let cut = false;
    if (long || text.length > this.#lineCap) {
      text = text.slice(0, safeCut(text, this.#lineCap, this.#list));
      cut = true;
    }
    let line = redact(text, this.#list);
    if (cut) line += " [line cut]";
    const b = this.#budget;
    if (b.left <= 0 || b.lines <= 0) {
      b.dropped += line.length;
      return;
    }
    if (line.length > b.left) {
      const kept = line.slice(0, safeCut(line, b.left, [REDACTED]));
      b.dropped += line.length - kept.length;
      line = kept;
    }
    b.left -= line.length;
    b.lines--;
    this.#emit(line);
  }
}
