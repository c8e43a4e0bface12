/**
 * Open and click tracking in a copy's HTML (design: Tracking, EM-10, X-EM-28): a copy is written
 * from its message's plan (html-plan.ts) by splicing the ORIGINAL text at the plan's offsets: only
 * the tracked `href` attributes and the pixel change, byte for byte the rest is what the sender wrote
 * (no re-serialisation that would reorder attributes or fix markup). The plan is made once per
 * message; this runs once per copy and costs a pass over the links, no parsing.
 */
import { planHtml, type HtmlPlan } from "./html-plan.ts";

export type { HtmlPlan } from "./html-plan.ts";
export { planHtml } from "./html-plan.ts";

export interface TrackingOptions {
  /** When set, a 1×1 image with this URL goes before `</body>` (or at the end). */
  openPixelUrl?: string | undefined;
  /**
   * When set, the click URL of the plan's destination number `index` (`url`) in this copy; a link
   * whose destination gets undefined stays as written.
   */
  clickUrl?: ((index: number, url: string) => string | undefined) | undefined;
}

export interface TrackedCopy {
  html: string;
  /** The destinations rewritten in this copy, distinct, in document order, with their click URL. */
  links: Array<{ url: string; trackingUrl: string }>;
}

/** Write one copy's HTML from its message's plan: tracked links and/or the open pixel. */
export function applyTracking(html: string, plan: HtmlPlan, options: TrackingOptions): TrackedCopy {
  const { clickUrl, openPixelUrl } = options;
  const parts: string[] = [];
  const links: TrackedCopy["links"] = [];
  /** Per destination index: its attribute as written in this copy, or null when it stays untracked. */
  const attributes: Array<string | null | undefined> = [];
  let at = 0;
  const { spans } = plan;
  if (clickUrl) {
    for (let i = 0; i < spans.length; i += 3) {
      const start = spans[i]!;
      const end = spans[i + 1]!;
      const index = spans[i + 2]!;
      if (start >= plan.pixelAt && openPixelUrl !== undefined && at <= plan.pixelAt) {
        parts.push(html.slice(at, plan.pixelAt), pixel(openPixelUrl));
        at = plan.pixelAt;
      }
      let attribute = attributes[index];
      if (attribute === undefined) {
        const url = plan.urls[index]!;
        const trackingUrl = clickUrl(index, url);
        attribute = trackingUrl === undefined ? null : `href="${escapeAttribute(trackingUrl)}"`;
        attributes[index] = attribute;
        if (trackingUrl !== undefined) links.push({ url, trackingUrl });
      }
      if (attribute === null) continue;
      parts.push(html.slice(at, start), attribute);
      at = end;
    }
  }
  if (openPixelUrl !== undefined && at <= plan.pixelAt) {
    parts.push(html.slice(at, plan.pixelAt), pixel(openPixelUrl));
    at = plan.pixelAt;
  }
  parts.push(html.slice(at));
  return { html: parts.join(""), links };
}

/** Plan and apply in one go (tests, and a body seen once). */
export function rewriteHtml(html: string, options: TrackingOptions, maxLinks?: number): TrackedCopy {
  return applyTracking(html, planHtml(html, maxLinks), options);
}

function pixel(url: string): string {
  return `<img src="${escapeAttribute(url)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;">`;
}

/** HTML attribute escaping for a double-quoted value (HTML §13.1.2.3). */
function escapeAttribute(value: string): string {
  return value.replace(/[&"<>]/g, (c) => (c === "&" ? "&amp;" : c === '"' ? "&quot;" : c === "<" ? "&lt;" : "&gt;"));
}
