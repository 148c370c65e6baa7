import { describe, expect, it } from "vitest";
import { isLabelKey, labelsMatch, parseFieldSelector, parseLabelSelector, requiresExactMatch } from "./selectors.js";

describe("parseLabelSelector", () => {
  // apimachinery's TestSelectorParse good strings, and the grammar's own example.
  it.each([
    "x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5",
    "x in (foo,,baz),y,z notin ()", "app.kubernetes.io/name in (a, b)", "x in (in)", "in in (notin)", "x == y", "  x  ", "x,y",
    "x \u0000!!!garbage",
  ])("accepts %j", (s) => {
    expect(parseLabelSelector(s)).not.toBeNull();
  });

  // apimachinery's bad strings, and more.
  it.each([
    "x=a||y=b", "x==a==b", "!x=a", "x<a", "x>1.5", "x in a", "x in (a", "x,", ",x", "x=a,", "=a", "x===a", "X/y=a", "-x=a", "x=-a",
    `${"k".repeat(64)}=a`, `x=${"v".repeat(64)}`, "x in (a b)", "x notin", "!", "x!", "x>9223372036854775808", "x>-5", "x\u0000!!!garbage",
  ])("refuses %j", (s) => {
    expect(parseLabelSelector(s)).toBeNull();
  });

  it("reads operators and values", () => {
    expect(parseLabelSelector("z notin (), x in (b,a), !y, w")).toEqual([
      { key: "w", op: "exists", values: [] },
      { key: "x", op: "in", values: ["b", "a"] },
      { key: "y", op: "!", values: [] },
      { key: "z", op: "notin", values: [""] },
    ]);
  });

  it.each([
    { sel: "app=web", labels: { app: "web" }, want: true },
    { sel: "app=web", labels: {}, want: false },
    { sel: "app!=web", labels: {}, want: true },
    { sel: "app notin (web)", labels: { app: "db" }, want: true },
    { sel: "!app", labels: { app: "" }, want: false },
    { sel: "tier>1", labels: { tier: "2" }, want: true },
    { sel: "tier>1", labels: { tier: "x" }, want: false },
    { sel: "", labels: { a: "b" }, want: true },
  ])("matches $sel against $labels: $want", ({ sel, labels, want }) => {
    const reqs = parseLabelSelector(sel);
    if (reqs === null) throw new Error("parse");
    expect(labelsMatch(reqs, labels)).toBe(want);
  });

  it.each([["a", true], ["example.com/a", true], ["a/b/c", false], ["/a", false], ["Example.com/a", false], ["a_b.c-d", true], ["_a", false]])("says %j is a label key: %s", (k, want) => {
    expect(isLabelKey(k)).toBe(want);
  });
});

describe("parseFieldSelector", () => {
  it.each([
    { sel: "metadata.name=a", name: "a" },
    { sel: "metadata.name==a", name: "a" },
    { sel: "metadata.name!=a", name: undefined },
    { sel: "a=b,metadata.name=c", name: "c" },
    { sel: "metadata.name=b,metadata.name=a", name: "a" },
    { sel: "metadata.name=a\\,b", name: "a,b" },
    { sel: "metadata.name=a\\=b\\\\c", name: "a=b\\c" },
    { sel: "", name: undefined },
    { sel: ",,", name: undefined },
  ])("names $name in $sel", ({ sel, name }) => {
    const terms = parseFieldSelector(sel);
    if (terms === null) throw new Error("parse");
    expect(requiresExactMatch(terms, "metadata.name")).toBe(name);
  });

  it.each(["metadata.name", "metadata.name=a,foo", "metadata.name=a=b", "metadata.name=a\\b", "metadata.name=a\\"])("refuses %j", (sel) => {
    expect(parseFieldSelector(sel)).toBeNull();
  });
});
