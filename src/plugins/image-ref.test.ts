import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { CAPS } from "./caps.js";
import { ErrorCode } from "./errors.js";
import { parseImageRef } from "./image-ref.js";
import type { ImageRef } from "./image-ref.js";

const HEX = "a".repeat(32) + "0123456789abcdef".repeat(2);
const D = `sha256:${HEX}`;

describe("parseImageRef accepts digest-pinned references", () => {
  it.each([
    { ref: `nginx@${D}`, registry: undefined, repository: "nginx" },
    { ref: `library/nginx@${D}`, registry: undefined, repository: "library/nginx" },
    { ref: `ghcr.io/openfief/ibkr-flex@${D}`, registry: "ghcr.io", repository: "openfief/ibkr-flex" },
    { ref: `localhost/plugin@${D}`, registry: "localhost", repository: "plugin" },
    { ref: `localhost:5000/plugin@${D}`, registry: "localhost:5000", repository: "plugin" },
    { ref: `127.0.0.1:5000/a/b/c@${D}`, registry: "127.0.0.1:5000", repository: "a/b/c" },
    { ref: `[::1]:5000/plugin@${D}`, registry: "[::1]:5000", repository: "plugin" },
    { ref: `[fd00::1]/plugin@${D}`, registry: "[fd00::1]", repository: "plugin" },
    { ref: `registry.example.com:65535/x@${D}`, registry: "registry.example.com:65535", repository: "x" },
    { ref: `Registry.Example.COM/x@${D}`, registry: "Registry.Example.COM", repository: "x" },
    { ref: `my-registry.io/a.b_c__d---e/f@${D}`, registry: "my-registry.io", repository: "a.b_c__d---e/f" },
    { ref: `my.repo@${D}`, registry: undefined, repository: "my.repo" },
    { ref: `docker.io/library/alpine@${D}`, registry: "docker.io", repository: "library/alpine" },
    { ref: `a0/b1/c2@${D}`, registry: undefined, repository: "a0/b1/c2" },
  ])("accepts $ref", ({ ref, registry, repository }) => {
    const r = parseImageRef(ref);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.registry).toBe(registry);
    expect(r.value.repository).toBe(repository);
    expect(r.value.digest).toBe(D);
    expect(r.value.hex).toBe(HEX);
    expect(r.value.toString()).toBe(ref);
    expect(JSON.stringify({ image: r.value })).toBe(JSON.stringify({ image: ref }));
  });
});

describe("parseImageRef refuses everything else", () => {
  it.each([
    { ref: `repo:1.4@${D}`, code: ErrorCode.TagNotAllowed },
    { ref: `ghcr.io/o/repo:latest@${D}`, code: ErrorCode.TagNotAllowed },
    { ref: `localhost:5000/repo:v1@${D}`, code: ErrorCode.TagNotAllowed },
    { ref: "repo:1.4", code: ErrorCode.TagNotAllowed },
    { ref: "ghcr.io/o/repo:latest", code: ErrorCode.TagNotAllowed },
    { ref: "repo", code: ErrorCode.InvalidImageRef },
    { ref: "ghcr.io/o/repo", code: ErrorCode.InvalidImageRef },
    { ref: "", code: ErrorCode.InvalidImageRef },
    { ref: `repo@sha256:${HEX.toUpperCase()}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo@sha256:${HEX.slice(1)}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo@sha256:${HEX}0`, code: ErrorCode.InvalidImageRef },
    { ref: `repo@sha512:${HEX}${HEX}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo@${HEX}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo@sha256:${"g".repeat(64)}`, code: ErrorCode.InvalidImageRef },
    { ref: "repo@", code: ErrorCode.InvalidImageRef },
    { ref: `repo@${D}@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: ` repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo@${D} `, code: ErrorCode.InvalidImageRef },
    { ref: `re po@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo@${D}\n`, code: ErrorCode.InvalidImageRef },
    { ref: `Repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `ghcr.io/Openfief/x@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `-repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo-@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `re...po@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `re___po@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `a//b@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo/@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `ghcr.io/@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `-bad.io/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `bad-.io/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `bad..io/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `bad_host.io/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `localhost:0/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `localhost:65536/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `localhost:/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `localhost:abc/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `[::1/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `[zz::1]/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `[fe80::1%eth0]/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `[::1]x/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `[::1]@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `::1/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `https://ghcr.io/repo@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `r${"/a".repeat(128)}@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `ghcr.io/${"a".repeat(248)}@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo:@${D}`, code: ErrorCode.InvalidImageRef },
    { ref: `repo:.bad@${D}`, code: ErrorCode.InvalidImageRef },
  ])("refuses $ref with $code", ({ ref, code }) => {
    const r = parseImageRef(ref, "spec.image");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors[0]?.code).toBe(code);
    expect(r.errors.every((e) => e.path === "spec.image")).toBe(true);
  });

  it("accepts a name of exactly 255 characters and refuses 256", () => {
    const at255 = `ghcr.io/${"a".repeat(247)}`;
    expect(at255).toHaveLength(255);
    expect(parseImageRef(`${at255}@${D}`).ok).toBe(true);
    expect(parseImageRef(`${at255}a@${D}`).ok).toBe(false);
  });

  it.each([
    { value: undefined, code: ErrorCode.Required },
    { value: null, code: ErrorCode.InvalidType },
    { value: 42, code: ErrorCode.InvalidType },
    { value: { image: `repo@${D}` }, code: ErrorCode.InvalidType },
  ])("refuses a non-string $value with $code at the default path", ({ value, code }) => {
    const r = parseImageRef(value);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors).toEqual([expect.objectContaining({ code, path: "image" })]);
  });
});

describe("ImageRef", () => {
  it("compares equal only when registry, repository and digest are equal", () => {
    const p = (s: string): ImageRef => {
      const r = parseImageRef(s);
      if (!r.ok) throw new Error(s);
      return r.value;
    };
    const a = p(`ghcr.io/o/x@${D}`);
    expect(a.equals(p(`ghcr.io/o/x@${D}`))).toBe(true);
    expect(a.equals(p(`ghcr.io/o/y@${D}`))).toBe(false);
    expect(a.equals(p(`quay.io/o/x@${D}`))).toBe(false);
    expect(a.equals(p(`o/x@${D}`))).toBe(false);
    expect(a.equals(p(`ghcr.io/o/x@sha256:${"b".repeat(64)}`))).toBe(false);
    expect(a.name).toBe("ghcr.io/o/x");
  });

  it("has no public constructor and no writable fields", () => {
    const r = parseImageRef(`o/x@${D}`);
    if (!r.ok) throw new Error("parse");
    expect(Object.keys(r.value)).toEqual([]);
    expect(() => {
      (r.value as unknown as { repository: string }).repository = "evil";
    }).toThrow(TypeError);
    expect(r.value.repository).toBe("o/x");
  });

  it("round-trips: parsing toString() gives an equal reference", () => {
    // No '.' in generated components: a first component with one would name a registry.
    const component = fc.stringMatching(/^[a-z0-9]{1,5}(?:(?:_|__|-+)[a-z0-9]{1,5}){0,2}$/);
    const registry = fc.option(
      fc.oneof(
        fc.constant("localhost"),
        fc.tuple(fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/), fc.integer({ min: 1, max: 65535 })).map(([h, p]) => `${h}.io:${p}`),
        fc.stringMatching(/^[a-z][a-z0-9]{0,6}\.(?:com|io)$/),
      ),
      { nil: undefined },
    );
    const hex = fc.stringMatching(/^[0-9a-f]{64}$/);
    fc.assert(
      fc.property(registry, fc.array(component, { minLength: 1, maxLength: 4 }), hex, (reg, parts, h) => {
        const text = `${reg === undefined ? "" : `${reg}/`}${parts.join("/")}@sha256:${h}`;
        const r = parseImageRef(text);
        if (!r.ok) return false;
        const again = parseImageRef(r.value.toString());
        return again.ok && again.value.equals(r.value) && r.value.toString() === text;
      }),
      { numRuns: 200 },
    );
  });

  it("never throws, whatever the input", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.anything()), (v) => {
        const r = parseImageRef(v);
        return r.ok || r.errors.length > 0;
      }),
      { numRuns: 200 },
    );
  });
});

describe("parseImageRef on references of any size", () => {
  it.each([
    ["five megabytes of letters", `${"a".repeat(5_000_000)}@${D}`],
    ["five megabytes of dashed components, which overflowed the pattern's stack", `${"a-".repeat(2_500_000)}a@${D}`],
    ["a reference one character over the cap", `${"a".repeat(CAPS.imageRef - D.length)}@${D}`],
  ])("refuses %s with too_large, without throwing", (_what, ref) => {
    expect(parseImageRef(ref, "image")).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "image" })] });
  });
});
