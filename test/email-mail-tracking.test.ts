/** tracking.ts: open pixel and click links, rewritten by splicing the sender's own HTML. */
import { describe, expect, it } from "vitest";
import { applyTracking, planTracking, rewriteHtml } from "../handlers/email/mail/tracking.ts";

function counter() {
  let n = 0;
  return () => `tok${++n}`;
}
const clickUrlFor = (token: string) => `https://t.acme.test/c/${token}`;
const openPixelUrl = "https://t.acme.test/o/OPEN?x=1&y=2";

describe("rewriteHtml", () => {
  it("rewrites http(s) links, keeps every other byte, and stores normalised destinations", () => {
    const html =
      "<!doctype html><html><head><title>R</title></head><body>\r\n" +
      '<p class=a>Hi <a id=x href="HTTPS://Example.COM:443/a/../b?q=1&amp;r=2#f" title="t">one</a>\r\n' +
      "<a href='http://example.com/two'>two</a> <A HREF=https://example.com/three>three</A></p>\r\n" +
      "</body></html>";
    const result = rewriteHtml(html, { clickUrlFor, newToken: counter() });
    expect(result.links).toEqual([
      { url: "https://example.com/b?q=1&r=2#f", token: "tok1" },
      { url: "http://example.com/two", token: "tok2" },
      { url: "https://example.com/three", token: "tok3" },
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
    const result = rewriteHtml(html, { clickUrlFor, newToken: counter() });
    expect(result.links).toEqual([]);
    expect(result.html).toBe(html);
  });

  it("the same destination twice in a copy shares one token", () => {
    const html = '<a href="https://acme.test/x">1</a><a href="https://acme.test/x">2</a><area href="https://acme.test/y">';
    const result = rewriteHtml(html, { clickUrlFor, newToken: counter() });
    expect(result.links).toEqual([
      { url: "https://acme.test/x", token: "tok1" },
      { url: "https://acme.test/y", token: "tok2" },
    ]);
    expect(result.html.match(/tok1/g)).toHaveLength(2);
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
    const result = rewriteHtml(html, { openPixelUrl, clickUrlFor, newToken: counter() });
    expect(result.html).toMatch(
      /^<body><a href="https:\/\/t.acme.test\/c\/tok1">a<\/a><img [^>]+><\/body><a href="https:\/\/t.acme.test\/c\/tok2">b<\/a>$/,
    );
  });

  it("a tracked destination that contains quotes cannot break out of the attribute", () => {
    const html = `<a href='https://acme.test/?q="><script>x</script>'>x</a>`;
    const result = rewriteHtml(html, { clickUrlFor: (_t, url) => url, newToken: counter() });
    expect(result.links[0]!.url).toBe("https://acme.test/?q=%22%3E%3Cscript%3Ex%3C/script%3E");
    expect(result.html).not.toContain("<script>");
  });

  it("nothing asked, nothing changed", () => {
    const html = '<a href="https://acme.test/">x</a>';
    expect(rewriteHtml(html, {})).toEqual({ html, links: [] });
  });

  it("one plan, many recipients: each copy gets its own tokens", () => {
    const plan = planTracking('<body><a href="https://acme.test/">x</a></body>');
    const a = applyTracking(plan, { clickUrlFor });
    const b = applyTracking(plan, { clickUrlFor });
    expect(a.links[0]!.token).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(a.links[0]!.token).not.toBe(b.links[0]!.token);
    expect(a.links[0]!.url).toBe(b.links[0]!.url);
  });

  it("survives hostile markup: deep nesting, unclosed tags, garbage", () => {
    const deep = `${"<div>".repeat(20000)}<a href="https://acme.test/deep">d</a>`;
    expect(rewriteHtml(deep, { clickUrlFor, newToken: counter() }).links).toHaveLength(1);
    const garbage = '<a href="https://acme.test/1"<<<>>><a href=https://acme.test/2 <b></i>\u0000<a\nhref\n=\n"https://acme.test/3">';
    const result = rewriteHtml(garbage, { clickUrlFor, openPixelUrl, newToken: counter() });
    expect(result.links.length).toBeGreaterThan(0);
  });
});
