import { describe, expect, it } from "vitest";
import { escapeHtml, html, Markup, trusted } from "./html.js";

describe("the console's one escaping helper", () => {
  it.each<[string, unknown, string]>([
    ["escapes markup in text", "<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"],
    ["escapes quotes so a value cannot leave its attribute", `" onmouseover="x`, "<p>&quot; onmouseover=&quot;x</p>"],
    ["escapes single quotes and ampersands", "Tom's & Jerry's", "<p>Tom&#39;s &amp; Jerry&#39;s</p>"],
    ["renders numbers as text", 42, "<p>42</p>"],
    ["renders null, undefined and false as nothing", null, "<p></p>"],
    ["escapes every item of a list", ["<a>", "<b>"], "<p>&lt;a&gt;&lt;b&gt;</p>"],
  ])("%s", (_what, value, expected) => {
    expect(html`<p>${value as string}</p>`.toString()).toBe(expected);
  });

  it("keeps markup built by html as it is, and escapes what is inside it", () => {
    const inner = html`<em>${"<i>"}</em>`;
    expect(html`<p>${inner}</p>`.toString()).toBe("<p><em>&lt;i&gt;</em></p>");
  });

  it("escapes an object that only pretends to be markup", () => {
    const fake = { toString: () => "<img src=x onerror=alert(1)>" };
    expect(html`<p>${fake as unknown as string}</p>`.toString()).toBe("<p>&lt;img src=x onerror=alert(1)&gt;</p>");
  });

  it("lets no one make markup but html and trusted", () => {
    expect(Object.getOwnPropertyNames(Markup).filter((k) => !["length", "name", "prototype"].includes(k))).toEqual([]);
    expect(trusted("<meta>").toString()).toBe("<meta>");
    expect(escapeHtml(`<>&"'`)).toBe("&lt;&gt;&amp;&quot;&#39;");
  });
});
