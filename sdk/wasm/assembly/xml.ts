// A bounded, non-validating reader of a strict subset of XML 1.0, enough for the documents
// connectors fetch (the ECB's reference rates, IBKR's Flex statements) and nothing more: UTF-8
// only, no DTD at all (a DOCTYPE is refused, so no entity can expand), only the five predefined
// entities and character references, ASCII names, namespaces resolved. It streams start tags,
// text and end tags to a visitor and keeps only the open elements, so memory grows with depth,
// never with the document; depth, attributes per element, elements and one text run are capped.
// One pass over the bytes: time is linear in the document (a duplicate attribute is found
// through a set; an attribute value or text run is copied as UTF-8 into one buffer, references
// resolved, and decoded once, however many references it holds).
import { ByteWriter, invalidUtf8At } from "./bytes";

/** The caps of one parse. */
export class XmlLimits {
  constructor(
    public maxDepth: i32 = 16,
    public maxAttributes: i32 = 256,
    public maxElements: i32 = 1_000_000,
    public maxText: i32 = 64 * 1024,
  ) {}
}

/** One attribute, its value with references resolved and whitespace normalised. */
export class XmlAttribute {
  constructor(
    public prefix: string,
    public local: string,
    public value: string,
  ) {}
}

/** A start tag: its namespace URI and local name, unprefixed attributes, and its line. */
export class XmlStart {
  constructor(
    public uri: string,
    public local: string,
    public attributes: XmlAttribute[],
    public line: i32,
  ) {}

  /** The value of the unprefixed attribute `name`, or null. */
  attribute(name: string): string | null {
    for (let i = 0; i < this.attributes.length; i++) {
      const a = this.attributes[i];
      if (a.prefix.length == 0 && a.local == name) return a.value;
    }
    return null;
  }
}

/** What a parse reports to. Returning false from start or end stops the parse. */
export class XmlVisitor {
  start(_el: XmlStart, _depth: i32): bool {
    return true;
  }

  end(_depth: i32): bool {
    return true;
  }

  /** Character data inside an element (references resolved; CDATA as it is), in runs. */
  text(_text: string, _depth: i32): bool {
    return true;
  }
}

/** Why a document could not be read, and where. */
export class XmlError {
  constructor(
    public message: string,
    public line: i32,
  ) {}
}

const XML_NS = "http://www.w3.org/XML/1998/namespace";
const XMLNS_NS = "http://www.w3.org/2000/xmlns/";

class OpenElement {
  constructor(
    public name: string,
    /** Namespace declarations this element made: prefix, URI, prefix, URI, … */
    public declared: string[],
  ) {}
}

class Reader {
  pos: i32 = 0;
  line: i32 = 1;
  error: XmlError | null = null;
  elements: i32 = 0;
  open: OpenElement[] = [];
  /** Namespace bindings in scope, innermost last: prefix, URI, prefix, URI, … ("" is the default). */
  scope: string[] = ["xml", XML_NS];
  stopped: bool = false;

  constructor(
    public ptr: usize,
    public len: i32,
    public visitor: XmlVisitor,
    public limits: XmlLimits,
  ) {}

  fail(message: string): bool {
    if (this.error === null) this.error = new XmlError(message, this.line);
    return false;
  }

  at(i: i32): i32 {
    return i < this.len ? <i32>load<u8>(this.ptr + <usize>i) : -1;
  }

  peek(): i32 {
    return this.at(this.pos);
  }

  startsWith(s: string): bool {
    for (let i = 0; i < s.length; i++) if (this.at(this.pos + i) != s.charCodeAt(i)) return false;
    return true;
  }

  advance(n: i32): void {
    for (let i = 0; i < n && this.pos < this.len; i++) {
      if (load<u8>(this.ptr + <usize>this.pos) == 0x0a) this.line++;
      this.pos++;
    }
  }

  isSpace(c: i32): bool {
    return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
  }

  skipSpace(): i32 {
    const start = this.pos;
    while (this.isSpace(this.peek())) this.advance(1);
    return this.pos - start;
  }

  nameStart(c: i32): bool {
    return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x5f || c == 0x3a;
  }

  nameChar(c: i32): bool {
    return this.nameStart(c) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x2e;
  }

  name(): string | null {
    const start = this.pos;
    if (!this.nameStart(this.peek())) {
      this.fail(this.peek() >= 0x80 ? "a name outside ASCII" : "expected a name");
      return null;
    }
    while (this.nameChar(this.peek())) this.pos++;
    return String.UTF8.decodeUnsafe(this.ptr + <usize>start, <usize>(this.pos - start));
  }

  text(start: i32, end: i32): string {
    return String.UTF8.decodeUnsafe(this.ptr + <usize>start, <usize>(end - start));
  }

  /** Skips to just past `close`; fails when the document ends first. */
  skipPast(close: string, what: string): bool {
    while (this.pos < this.len) {
      if (this.startsWith(close)) {
        this.advance(close.length);
        return true;
      }
      this.advance(1);
    }
    return this.fail("an unterminated " + what);
  }

  comment(): bool {
    this.advance(4);
    while (this.pos < this.len) {
      if (this.startsWith("--")) {
        if (this.at(this.pos + 2) != 0x3e) return this.fail("-- inside a comment");
        this.advance(3);
        return true;
      }
      this.advance(1);
    }
    return this.fail("an unterminated comment");
  }

  /** A processing instruction; the XML declaration only at the very start, and UTF-8 only. */
  pi(first: bool): bool {
    const start = this.pos;
    this.advance(2);
    const target = this.name();
    if (target === null) return false;
    const isDecl = target.toLowerCase() == "xml";
    if (isDecl && (target != "xml" || !first || start != this.bomLength())) return this.fail("a misplaced XML declaration");
    const bodyStart = this.pos;
    if (!this.skipPast("?>", "processing instruction")) return false;
    if (isDecl) {
      const body = this.text(bodyStart, this.pos - 2);
      const enc = body.indexOf("encoding");
      if (enc >= 0) {
        const rest = body.substring(enc + 8).trimStart();
        if (!rest.startsWith("=")) return this.fail("a malformed XML declaration");
        const v = rest.substring(1).trimStart();
        const q = v.charCodeAt(0);
        const close = v.indexOf(String.fromCharCode(q), 1);
        if ((q != 0x22 && q != 0x27) || close < 0) return this.fail("a malformed XML declaration");
        const name = v.substring(1, close).toUpperCase();
        if (name != "UTF-8" && name != "UTF8") return this.fail("an encoding other than UTF-8");
      }
    }
    return true;
  }

  bomLength(): i32 {
    return this.at(0) == 0xef && this.at(1) == 0xbb && this.at(2) == 0xbf ? 3 : 0;
  }

  /** A reference at pos (`&…;`), resolved into `out`; in attribute values and text alike. */
  reference(out: ByteWriter): bool {
    const start = this.pos + 1;
    let end = start;
    while (end < this.len && end - start < 12 && this.at(end) != 0x3b) end++;
    if (this.at(end) != 0x3b) return this.fail("an unterminated reference");
    const ref = this.text(start, end);
    let cp: i32 = -1;
    if (ref == "lt") cp = 0x3c;
    else if (ref == "gt") cp = 0x3e;
    else if (ref == "amp") cp = 0x26;
    else if (ref == "quot") cp = 0x22;
    else if (ref == "apos") cp = 0x27;
    else if (ref.startsWith("#")) {
      const hex = ref.startsWith("#x");
      const digits = ref.substring(hex ? 2 : 1);
      if (digits.length == 0 || digits.length > 6) return this.fail("a bad character reference");
      cp = 0;
      for (let i = 0; i < digits.length; i++) {
        const c = digits.charCodeAt(i);
        let d = -1;
        if (c >= 0x30 && c <= 0x39) d = c - 0x30;
        else if (hex && c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
        else if (hex && c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
        if (d < 0) return this.fail("a bad character reference");
        cp = cp * (hex ? 16 : 10) + d;
      }
      const allowed = cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
      if (!allowed) return this.fail("a character reference to a character XML does not allow");
    }
    if (cp < 0) return this.fail("an undefined entity &" + ref + "; (no DTD is read)");
    out.codePoint(<u32>cp);
    this.pos = end + 1;
    return true;
  }

  attributeValue(): string | null {
    const q = this.peek();
    if (q != 0x22 && q != 0x27) {
      this.fail("an attribute value without quotes");
      return null;
    }
    this.advance(1);
    let out: ByteWriter | null = null;
    let run = this.pos;
    while (true) {
      const c = this.peek();
      if (c < 0) {
        this.fail("an unterminated attribute value");
        return null;
      }
      if (c == q) break;
      if (c == 0x3c) {
        this.fail("< in an attribute value");
        return null;
      }
      if (c == 0x26 || (this.isSpace(c) && c != 0x20)) {
        if (out === null) out = new ByteWriter(this.pos - run + 64);
        out.raw(this.ptr + <usize>run, this.pos - run);
        if (c == 0x26) {
          if (!this.reference(out)) return null;
        } else {
          // Attribute-value normalisation: each whitespace character becomes a space.
          out.byte(0x20);
          this.advance(1);
        }
        run = this.pos;
        continue;
      }
      if (c < 0x20) {
        this.fail("a control character in an attribute value");
        return null;
      }
      this.pos++;
    }
    if (out === null) {
      const plain = this.text(run, this.pos);
      this.advance(1);
      return plain;
    }
    out.raw(this.ptr + <usize>run, this.pos - run);
    this.advance(1);
    return out.toString();
  }

  resolve(prefix: string): string | null {
    for (let i = this.scope.length - 2; i >= 0; i -= 2) if (this.scope[i] == prefix) return this.scope[i + 1];
    return prefix.length == 0 ? "" : null;
  }

  startTag(): bool {
    const line = this.line;
    this.pos++;
    const qname = this.name();
    if (qname === null) return false;
    if (++this.elements > this.limits.maxElements) return this.fail("more than " + this.limits.maxElements.toString() + " elements");
    if (this.open.length >= this.limits.maxDepth) return this.fail("elements nested deeper than " + this.limits.maxDepth.toString());
    const attributes: XmlAttribute[] = [];
    const seen = new Set<string>();
    const declared: string[] = [];
    let selfClosing = false;
    while (true) {
      const spaced = this.skipSpace() > 0;
      const c = this.peek();
      if (c == 0x3e) {
        this.pos++;
        break;
      }
      if (c == 0x2f) {
        if (this.at(this.pos + 1) != 0x3e) return this.fail("expected />");
        this.pos += 2;
        selfClosing = true;
        break;
      }
      if (c < 0) return this.fail("an unterminated start tag");
      if (!spaced) return this.fail("attributes without space between them");
      const an = this.name();
      if (an === null) return false;
      this.skipSpace();
      if (this.peek() != 0x3d) return this.fail("expected = after an attribute name");
      this.pos++;
      this.skipSpace();
      const value = this.attributeValue();
      if (value === null) return false;
      if (attributes.length >= this.limits.maxAttributes) return this.fail("more than " + this.limits.maxAttributes.toString() + " attributes");
      const colon = an.indexOf(":");
      const a = colon < 0 ? new XmlAttribute("", an, value) : new XmlAttribute(an.substring(0, colon), an.substring(colon + 1), value);
      if (seen.has(an)) return this.fail("a duplicate attribute " + an);
      seen.add(an);
      attributes.push(a);
      if (an == "xmlns") {
        declared.push("");
        declared.push(value);
      }
      else if (a.prefix == "xmlns") {
        if (value.length == 0 || a.local == "xmlns" || value == XMLNS_NS) return this.fail("a bad namespace declaration " + an);
        declared.push(a.local);
        declared.push(value);
      }
    }
    for (let i = 0; i < declared.length; i++) this.scope.push(declared[i]);
    const colon = qname.indexOf(":");
    const prefix = colon < 0 ? "" : qname.substring(0, colon);
    const local = colon < 0 ? qname : qname.substring(colon + 1);
    const uri = this.resolve(prefix);
    if (uri === null) return this.fail("an undeclared namespace prefix " + prefix);
    const plain: XmlAttribute[] = [];
    for (let i = 0; i < attributes.length; i++) {
      const a = attributes[i];
      if (a.prefix == "xmlns" || (a.prefix.length == 0 && a.local == "xmlns")) continue;
      if (a.prefix.length > 0 && this.resolve(a.prefix) === null) return this.fail("an undeclared namespace prefix " + a.prefix);
      plain.push(a);
    }
    const depth = this.open.length + 1;
    this.open.push(new OpenElement(qname, declared));
    if (!this.visitor.start(new XmlStart(uri, local, plain, line), depth)) {
      this.stopped = true;
      return false;
    }
    if (selfClosing) return this.close();
    return true;
  }

  close(): bool {
    const depth = this.open.length;
    const el = this.open.pop();
    for (let i = 0; i < el.declared.length; i++) this.scope.pop();
    if (!this.visitor.end(depth)) {
      this.stopped = true;
      return false;
    }
    return true;
  }

  endTag(): bool {
    this.pos += 2;
    const qname = this.name();
    if (qname === null) return false;
    this.skipSpace();
    if (this.peek() != 0x3e) return this.fail("expected > to end an end tag");
    this.pos++;
    if (this.open.length == 0) return this.fail("an end tag without a start tag");
    if (this.open[this.open.length - 1].name != qname) return this.fail("</" + qname + "> closes <" + this.open[this.open.length - 1].name + ">");
    return this.close();
  }

  /** Character data at pos: references checked, `]]>` refused; outside the root only whitespace. */
  charData(): bool {
    const out = new ByteWriter();
    let run = this.pos;
    while (true) {
      const c = this.peek();
      if (c < 0 || c == 0x3c) break;
      if (c == 0x26) {
        out.raw(this.ptr + <usize>run, this.pos - run);
        if (!this.reference(out)) return false;
        if (this.open.length == 0) return this.fail("text outside the root element");
        run = this.pos;
        continue;
      }
      if (this.startsWith("]]>")) return this.fail("]]> in text");
      if (!this.isSpace(c)) {
        if (this.open.length == 0) return this.fail("text outside the root element");
        if (c < 0x20) return this.fail("a control character in text");
      }
      if (out.length + this.pos - run > this.limits.maxText) return this.fail("a text run longer than " + this.limits.maxText.toString() + " bytes");
      this.advance(1);
    }
    if (this.open.length == 0) return true;
    out.raw(this.ptr + <usize>run, this.pos - run);
    return this.report(out.toString());
  }

  /** Hands a text run to the visitor. */
  report(text: string): bool {
    if (text.length == 0) return true;
    if (!this.visitor.text(text, this.open.length)) {
      this.stopped = true;
      return false;
    }
    return true;
  }

  document(): bool {
    this.pos = this.bomLength();
    let first = true;
    let sawRoot = false;
    while (this.pos < this.len) {
      if (this.startsWith("<?")) {
        if (!this.pi(first)) return false;
      } else if (this.startsWith("<!--")) {
        if (!this.comment()) return false;
      } else if (this.startsWith("<!DOCTYPE") || this.startsWith("<!doctype")) {
        return this.fail("a DOCTYPE (no DTD is read, so no entity can expand)");
      } else if (this.startsWith("<![CDATA[")) {
        if (this.open.length == 0) return this.fail("CDATA outside the root element");
        this.advance(9);
        const from = this.pos;
        if (!this.skipPast("]]>", "CDATA section")) return false;
        if (this.pos - 3 - from > this.limits.maxText) return this.fail("a CDATA section longer than " + this.limits.maxText.toString() + " bytes");
        if (!this.report(this.text(from, this.pos - 3))) return false;
      } else if (this.startsWith("<!")) {
        return this.fail("a markup declaration");
      } else if (this.startsWith("</")) {
        if (!this.endTag()) return false;
      } else if (this.peek() == 0x3c) {
        if (this.open.length == 0 && sawRoot) return this.fail("a second root element");
        sawRoot = true;
        if (!this.startTag()) return false;
      } else {
        if (!this.charData()) return false;
      }
      first = false;
    }
    if (!sawRoot) return this.fail("no root element");
    if (this.open.length > 0) return this.fail("the document ends inside <" + this.open[this.open.length - 1].name + ">");
    return true;
  }
}

/**
 * Reads `bytes` as XML, reporting each element to `visitor`; null when the whole document was
 * read (or the visitor stopped it), else why and where it is not well-formed.
 */
export function readXml(bytes: Uint8Array, visitor: XmlVisitor, limits: XmlLimits = new XmlLimits()): XmlError | null {
  const bad = invalidUtf8At(bytes.dataStart, bytes.length);
  if (bad >= 0) {
    let line = 1;
    for (let i = 0; i < bad; i++) if (bytes[i] == 0x0a) line++;
    return new XmlError("invalid UTF-8", line);
  }
  const r = new Reader(bytes.dataStart, bytes.length, visitor, limits);
  r.document();
  if (r.stopped) return null;
  return r.error;
}
