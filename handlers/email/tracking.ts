/** Tracking endpoints (EM-10): public, reached from mail clients; the token is the credential. */
import { HttpResponseError } from "../../server/http/problem.ts";
import type { EmailHandlers } from "./email-handlers.ts";

/** A transparent 1×1 GIF. */
const PIXEL = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");
const NO_STORE = "no-store, max-age=0";

const UNKNOWN_LINK_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Link not found</title></head><body><h1>Link not found</h1><p>This link is not valid. Please use the original link in the email.</p></body></html>`;

export const trackingHandlers: Pick<EmailHandlers, "trackOpen" | "trackClick"> = {
  async trackOpen({ params }, { tracking }) {
    // Always the pixel: an unknown token tells a mail client nothing, and an image error would show.
    await tracking.open(params.token);
    return { status: 200, headers: { "Cache-Control": NO_STORE }, body: PIXEL as unknown as string, contentType: "image/gif" };
  },
  async trackClick({ params }, { tracking }) {
    const url = await tracking.click(params.token);
    // A browser lands here: an HTML page, not problem+json (S7e).
    if (!url)
      throw new HttpResponseError(404, UNKNOWN_LINK_PAGE, {
        contentType: "text/html; charset=utf-8",
        headers: { "Cache-Control": NO_STORE },
      });
    return { status: 302, headers: { Location: url, "Cache-Control": NO_STORE } };
  },
};
