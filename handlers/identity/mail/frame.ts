/**
 * The HTML frame of every message identity sends: the application's logo and name above the body,
 * its primary colour on buttons (`<a class="button">`, inlined since mail clients drop `<style>`
 * of the head often). Only a strict `#RRGGBB` colour and an http(s) logo URL are ever used, and
 * every value is escaped.
 */
import type { MailBranding } from "../domain/mail/messages.ts";

export const escapeHtml = (value: string): string =>
  value.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

const HEX = /^#[0-9A-Fa-f]{6}$/;
const DEFAULT_PRIMARY = "#1f5fbf";

export function framed(o: { title: string; body: string; applicationName: string; branding: MailBranding; locale: string }): string {
  const primary = o.branding.primaryColor && HEX.test(o.branding.primaryColor) ? o.branding.primaryColor : DEFAULT_PRIMARY;
  const logo =
    o.branding.logoUrl && /^https?:\/\//.test(o.branding.logoUrl)
      ? `<img src="${escapeHtml(o.branding.logoUrl)}" alt="${escapeHtml(o.applicationName)}" width="48" height="48" style="display:block;margin:0 auto 8px">`
      : "";
  const body = o.body.replace(
    /<a class="button"/g,
    `<a class="button" style="display:inline-block;padding:10px 18px;border-radius:6px;background:${primary};color:#ffffff;text-decoration:none;font-weight:600"`,
  );
  return `<!doctype html>
<html lang="${escapeHtml(o.locale)}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(o.title)}</title></head>
<body style="margin:0;padding:24px;background:#f4f6fa;font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1b1f24">
<div style="max-width:32rem;margin:0 auto;background:#ffffff;border-radius:12px;padding:24px;border-top:4px solid ${primary}">
${logo}<p style="text-align:center;font-weight:600;margin:0 0 16px">${escapeHtml(o.applicationName)}</p>
${body}
</div>
</body>
</html>
`;
}
