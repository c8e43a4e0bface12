/**
 * Open and click tracking in a copy's HTML (design: Tracking, EM-10).
 *
 * The HTML is parsed once with parse5 (the WHATWG parsing algorithm, as browsers and mail clients
 * see it) with source locations, and the copy is then written by splicing the ORIGINAL text at
 * those locations: only the rewritten `href` attributes and the pixel change, byte for byte the
 * rest is what the sender wrote (no re-serialisation that would reorder attributes or fix markup).
 *
 * Rewritten: `href` of HTML `<a>`/`<area>` whose value is an absolute http(s) URL. Left alone:
 * `mailto:`, `tel:`, fragments, relative and unparsable URLs, links carrying `data-no-track`, and
 * anything inside `<template>`, SVG or MathML. Destinations are normalised with the WHATWG URL
 * parser before they are returned for storage, so the redirect goes exactly where a browser would
 * have gone.
 */
import { parse, type DefaultTreeAdapterTypes } from "parse5";
import { newTrackingToken } from "./compose.ts";

export interface TrackedLink {
  /** The destination, normalised (`new URL(href).href`): what the click redirect may send to. */
  url: string;
  /** The click token the rewritten link carries; the caller stores (token → url) for this copy. */
  token: string;
}

export interface RewriteOptions {
  /** When set, a 1×1 image with this URL goes before `</body>` (or at the end). */
  openPixelUrl?: string | undefined;
  /** When set, links are rewritten to the URL this returns for a fresh token. */
  clickUrlFor?: ((token: string, url: string) => string) | undefined;
  /** Token source (tests); default 16 random bytes as base64url. */
  newToken?: (() => string) | undefined;
}

export interface RewriteResult {
  html: string;
  /** One entry per distinct destination (the same URL twice in a copy shares its token). */
  links: TrackedLink[];
}

/** Where the edits go in one HTML body; made once per message, applied once per recipient. */
export interface TrackingPlan {
  readonly html: string;
  readonly links: ReadonlyArray<{ start: number; end: number; url: string }>;
  /** Offset the pixel is inserted at. */
  readonly pixelAt: number;
}

const HTML_NS = "http://www.w3.org/1999/xhtml";

/** Find the trackable links and the pixel position of an HTML body. */
export function planTracking(html: string): TrackingPlan {
  const document = parse(html, { sourceCodeLocationInfo: true });
  const links: Array<{ start: number; end: number; url: string }> = [];
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
        if (link) links.push(link);
      }
      stack.push(child);
    }
  }
  links.sort((a, b) => a.start - b.start);
  return { html, links, pixelAt: bodyEnd ?? htmlEnd ?? html.length };
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

/** Write one copy's HTML from a plan: tracked links and/or the open pixel. */
export function applyTracking(plan: TrackingPlan, options: RewriteOptions): RewriteResult {
  const { clickUrlFor, openPixelUrl } = options;
  const newToken = options.newToken ?? newTrackingToken;
  const source = plan.html;
  const parts: string[] = [];
  const links: TrackedLink[] = [];
  const tokens = new Map<string, string>();
  let at = 0;
  if (clickUrlFor) {
    for (const link of plan.links) {
      if (link.start >= plan.pixelAt && openPixelUrl !== undefined && at <= plan.pixelAt) {
        parts.push(source.slice(at, plan.pixelAt), pixel(openPixelUrl));
        at = plan.pixelAt;
      }
      let token = tokens.get(link.url);
      if (token === undefined) {
        token = newToken();
        tokens.set(link.url, token);
        links.push({ url: link.url, token });
      }
      parts.push(source.slice(at, link.start), `href="${escapeAttribute(clickUrlFor(token, link.url))}"`);
      at = link.end;
    }
  }
  if (openPixelUrl !== undefined && at <= plan.pixelAt) {
    parts.push(source.slice(at, plan.pixelAt), pixel(openPixelUrl));
    at = plan.pixelAt;
  }
  parts.push(source.slice(at));
  return { html: parts.join(""), links };
}

/** Plan and apply in one go (a single-recipient message). */
export function rewriteHtml(html: string, options: RewriteOptions): RewriteResult {
  return applyTracking(planTracking(html), options);
}

function pixel(url: string): string {
  return `<img src="${escapeAttribute(url)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;">`;
}

/** HTML attribute escaping for a double-quoted value (HTML §13.1.2.3). */
function escapeAttribute(value: string): string {
  return value.replace(/[&"<>]/g, (c) => (c === "&" ? "&amp;" : c === '"' ? "&quot;" : c === "<" ? "&lt;" : "&gt;"));
}
