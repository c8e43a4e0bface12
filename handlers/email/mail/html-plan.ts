/**
 * Where open and click tracking edit one HTML body (design: Tracking, EM-10, X-EM-28): made once per
 * message, applied to each copy by `applyTracking` (tracking.ts).
 *
 * The HTML is parsed with parse5 (the WHATWG parsing algorithm, as browsers and mail clients see it)
 * with source locations; the plan holds offsets into the ORIGINAL text, so a copy is written by
 * splicing it (only the tracked `href` attributes and the pixel change).
 *
 * Tracked: `href` of HTML `<a>`/`<area>` whose value is an absolute http(s) URL, for the first
 * `maxLinks` distinct destinations in document order (a later destination's links stay as written).
 * Left alone: `mailto:`, `tel:`, fragments, relative and unparsable URLs, links carrying
 * `data-no-track`, and anything inside `<template>`, SVG or MathML. Destinations are normalised with
 * the WHATWG URL parser, so the redirect goes exactly where a browser would have gone.
 *
 * Its cost grows with the body, so the service never runs it on the event loop but on a worker
 * thread (parse-thread.ts); it imports nothing but parse5, and its syntax is erasable TypeScript
 * only, so that Node loads it there as it is.
 */
import { parse, type DefaultTreeAdapterTypes } from "parse5";

export interface HtmlPlan {
  /** Offset the open pixel goes at: before `</body>`, else before `</html>`, else the end. */
  pixelAt: number;
  /** The tracked destinations, distinct, in the order of their first link; normalised (`new URL(href).href`). */
  urls: string[];
  /**
   * The tracked `href` attributes in document order, three numbers each: the attribute's start and
   * end offsets, and its destination's index in `urls`. A typed array, so a worker hands it over
   * without copying.
   */
  spans: Uint32Array;
}

const HTML_NS = "http://www.w3.org/1999/xhtml";

/** The plan of one HTML body, tracking at most `maxLinks` distinct destinations. */
export function planHtml(html: string, maxLinks = Number.POSITIVE_INFINITY): HtmlPlan {
  const document = parse(html, { sourceCodeLocationInfo: true });
  const found: Array<{ start: number; end: number; url: string }> = [];
  let bodyEnd: number | undefined;
  let htmlEnd: number | undefined;
  // Iterative walk: hostile HTML can nest deeply enough to overflow a recursive one.
  const stack: DefaultTreeAdapterTypes.ParentNode[] = [document];
  while (stack.length > 0) {
    const node = stack.pop()!;
    for (let i = node.childNodes.length - 1; i >= 0; i--) {
      const child = node.childNodes[i]!;
      if (!("tagName" in child)) continue;
      if (child.namespaceURI !== HTML_NS) continue; // SVG/MathML links are not ours to touch
      const location = child.sourceCodeLocation;
      if (child.tagName === "body" && location?.endTag) bodyEnd = location.endTag.startOffset;
      if (child.tagName === "html" && location?.endTag) htmlEnd = location.endTag.startOffset;
      if (child.tagName === "a" || child.tagName === "area") {
        const link = trackableLink(child);
        if (link) found.push(link);
      }
      stack.push(child);
    }
  }
  found.sort((a, b) => a.start - b.start);

  const urls: string[] = [];
  const indexOf = new Map<string, number>();
  const spans: number[] = [];
  for (const link of found) {
    let index = indexOf.get(link.url);
    if (index === undefined) {
      if (urls.length >= maxLinks) continue; // over the cap: this destination's links stay as written
      index = urls.push(link.url) - 1;
      indexOf.set(link.url, index);
    }
    spans.push(link.start, link.end, index);
  }
  return { pixelAt: bodyEnd ?? htmlEnd ?? html.length, urls, spans: Uint32Array.from(spans) };
}

function trackableLink(el: DefaultTreeAdapterTypes.Element): { start: number; end: number; url: string } | null {
  let href: string | undefined;
  for (const attr of el.attrs) {
    if (attr.name === "data-no-track") return null;
    if (attr.name === "href" && href === undefined) href = attr.value;
  }
  const location = el.sourceCodeLocation?.attrs?.href;
  if (href === undefined || !location) return null;
  const url = URL.parse(href);
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) return null;
  return { start: location.startOffset, end: location.endOffset, url: url.href };
}
