/** tracking.ts and html-plan.ts: open pixel and click links, rewritten by splicing the sender's own HTML. */
import { describe, expect, it } from "vitest";
import { applyTracking, planHtml, rewriteHtml } from "../../../handlers/email/mail/tracking.ts";

/** Destination n's click URL: `…/c/tok<n + 1>`. */
const clickUrl = (index: number) => `https://t.acme.test/c/tok${index + 1}`;
const link = (url: string, n: number) => ({ url, trackingUrl: `https://t.acme.test/c/tok${n}` });
const openPixelUrl = "https://t.acme.test/o/OPEN?x=1&y=2";

describe("rewriteHtml", () => {
  it("rewrites http(s) links, keeps every other byte, and stores normalised destinations", () => {
    const html =
      "<!doctype html><html><head><title>R</title></head><body>\r\n" +
      '<p class=a>Hi <a id=x href="HTTPS://Example.COM:443/a/../b?q=1&amp;r=2#f" title="t">one</a>\r\n' +
      "<a href='http://example.com/two'>two</a> <A HREF=https://example.com/three>three</A></p>\r\n" +
      "</body></html>";
    const result = rewriteHtml(html, { clickUrl });
    expect(result.links).toEqual([
      link("https://example.com/b?q=1&r=2#f", 1),
      link("http://example.com/two", 2),
      link("https://example.com/three", 3),
    ]);
    expect(result.html).toBe(
      "<!doctype html><html><head><title>R</title></head><body>\r\n" +
        '<p class=a>Hi <a id=x href="https://t.acme.test/c/tok1" title="t">one</a>\r\n' +
        '<a href="https://t.acme.test/c/tok2">two</a> <A href="https://t.acme.test/c/tok3">three</A></p>\r\n' +
        "</body></html>",
    );
  });

  it("leaves mailto:, tel:, fragments, relative, unparsable, data-no-track, SVG and template links alone", () => {
    const html =
      "<body>" +
      '<a href="mailto:support@acme.test">m</a>' +
      '<a href="tel:+15551234">t</a>' +
      '<a href="#top">f</a>' +
      '<a href="/relative">r</a>' +
      '<a href="http://[bad">u</a>' +
      '<a href="javascript:alert(1)">j</a>' +
      '<a data-no-track href="https://acme.test/keep">k</a>' +
      '<a href="https://acme.test/keep2" data-no-track="true">k2</a>' +
      '<svg><a href="https://acme.test/svg"><text>s</text></a></svg>' +
      '<template><a href="https://acme.test/tpl">x</a></template>' +
      "</body>";
    const result = rewriteHtml(html, { clickUrl });
    expect(result.links).toEqual([]);
    expect(result.html).toBe(html);
  });

  it("the same destination twice in a copy shares one click URL", () => {
    const html = '<a href="https://acme.test/x">1</a><a href="https://acme.test/x">2</a><area href="https://acme.test/y">';
    const result = rewriteHtml(html, { clickUrl });
    expect(result.links).toEqual([link("https://acme.test/x", 1), link("https://acme.test/y", 2)]);
    expect(result.html.match(/tok1/g)).toHaveLength(2);
  });

  it("X-EM-28 tracks the first maxLinks distinct destinations: later ones, and a destination given no click URL, stay as written", () => {
    const html =
      '<a href="https://a.test/">a</a><a href="https://b.test/">b</a><a href="https://a.test/">a2</a><a href="https://c.test/">c</a>';
    const plan = planHtml(html, 2);
    expect(plan.urls).toEqual(["https://a.test/", "https://b.test/"]);
    expect(Array.from(plan.spans).filter((_, i) => i % 3 === 2)).toEqual([0, 1, 0]);
    const result = applyTracking(html, plan, { clickUrl: (index) => (index === 1 ? undefined : clickUrl(index)) });
    expect(result.links).toEqual([link("https://a.test/", 1)]);
    expect(result.html).toBe(
      '<a href="https://t.acme.test/c/tok1">a</a><a href="https://b.test/">b</a><a href="https://t.acme.test/c/tok1">a2</a><a href="https://c.test/">c</a>',
    );
  });

  it("puts the pixel before </body>, escaped as an attribute", () => {
    const result = rewriteHtml("<html><body><p>Hi</p></body></html>", { openPixelUrl });
    expect(result.html).toBe(
      '<html><body><p>Hi</p><img src="https://t.acme.test/o/OPEN?x=1&amp;y=2" width="1" height="1" alt="" ' +
        'style="display:block;width:1px;height:1px;border:0;"></body></html>',
    );
    expect(result.links).toEqual([]);
  });

  it("puts the pixel before </html> without </body>, and at the end of a fragment", () => {
    expect(rewriteHtml("<html><p>Hi</html>", { openPixelUrl }).html).toMatch(/^<html><p>Hi<img [^>]+><\/html>$/);
    expect(rewriteHtml("<p>Hi</p>", { openPixelUrl }).html).toMatch(/^<p>Hi<\/p><img [^>]+>$/);
  });

  it("does both, with links after </body> handled in order", () => {
    const html = '<body><a href="https://a.test/">a</a></body><a href="https://b.test/">b</a>';
    const result = rewriteHtml(html, { openPixelUrl, clickUrl });
    expect(result.html).toMatch(
      /^<body><a href="https:\/\/t.acme.test\/c\/tok1">a<\/a><img [^>]+><\/body><a href="https:\/\/t.acme.test\/c\/tok2">b<\/a>$/,
    );
  });

  it("a tracked destination that contains quotes cannot break out of the attribute", () => {
    const html = `<a href='https://acme.test/?q="><script>x</script>'>x</a>`;
    const result = rewriteHtml(html, { clickUrl: (_index, url) => url });
    expect(result.links[0]!.url).toBe("https://acme.test/?q=%22%3E%3Cscript%3Ex%3C/script%3E");
    expect(result.html).not.toContain("<script>");
  });

  it("nothing asked, nothing changed", () => {
    const html = '<a href="https://acme.test/">x</a>';
    expect(rewriteHtml(html, {})).toEqual({ html, links: [] });
  });

  it("one plan, many recipients: each copy gets the click URLs it is given", () => {
    const html = '<body><a href="https://acme.test/">x</a></body>';
    const plan = planHtml(html);
    const a = applyTracking(html, plan, { clickUrl: () => "https://t.acme.test/c/a" });
    const b = applyTracking(html, plan, { clickUrl: () => "https://t.acme.test/c/b" });
    expect(a.html).toBe('<body><a href="https://t.acme.test/c/a">x</a></body>');
    expect(b.html).toBe('<body><a href="https://t.acme.test/c/b">x</a></body>');
    expect(a.links[0]!.url).toBe(b.links[0]!.url);
  });

  it("survives hostile markup: deep nesting, unclosed tags, garbage", () => {
    const deep = `${"<div>".repeat(20000)}<a href="https://acme.test/deep">d</a>`;
    expect(rewriteHtml(deep, { clickUrl }).links).toHaveLength(1);
    const garbage = '<a href="https://acme.test/1"<<<>>><a href=https://acme.test/2 <b></i>\u0000<a\nhref\n=\n"https://acme.test/3">';
    const result = rewriteHtml(garbage, { clickUrl, openPixelUrl });
    expect(result.links.length).toBeGreaterThan(0);
  });
});
