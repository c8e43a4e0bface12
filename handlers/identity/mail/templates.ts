/**
 * Identity's mail templates (X-ID-MAIL-3): `templates/<language>/<name>.subject.txt`, `<name>.txt`
 * and `<name>.html`, read once when the service starts. A language is a folder: adding one is adding
 * files. A message is rendered in the recipient's language when a folder has its template (`fr-CA`,
 * then `fr`), else in English. `{{name}}` is replaced by a value, escaped in the HTML body and in a
 * subject stripped of line breaks; a name with no value is an error (a template and its caller
 * disagree). The HTML body is framed with the application's branding (frame.ts).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { MailRenderer, MailTemplate, RenderRequest } from "../domain/mail/messages.ts";
import { escapeHtml, framed } from "./frame.ts";

const TEMPLATES = fileURLToPath(new URL("./templates/", import.meta.url));
const FALLBACK_LANGUAGE = "en";
/** The product's name where a message is about no application. */
const DEFAULT_NAME = "Identity";

interface Template {
  subject: string;
  text: string;
  html: string;
}

/** Every language folder's templates, by language (lower case) and name. */
function loadTemplates(root: string): Map<string, Map<string, Template>> {
  const languages = new Map<string, Map<string, Template>>();
  for (const language of readdirSync(root, { withFileTypes: true })) {
    if (!language.isDirectory()) continue;
    const folder = join(root, language.name);
    const templates = new Map<string, Template>();
    for (const file of readdirSync(folder)) {
      const name = file.match(/^(.+)\.subject\.txt$/)?.[1];
      if (!name) continue;
      const read = (suffix: string) => readFileSync(join(folder, `${name}${suffix}`), "utf8");
      if (!existsSync(join(folder, `${name}.txt`)) || !existsSync(join(folder, `${name}.html`)))
        throw new Error(`mail template ${language.name}/${name}: needs .subject.txt, .txt and .html`);
      templates.set(name, { subject: read(".subject.txt").trim(), text: read(".txt"), html: read(".html") });
    }
    languages.set(language.name.toLowerCase(), templates);
  }
  return languages;
}

/** `fr-CA` → `fr-ca`, `fr`, then the fallback. */
function candidates(locale: string | undefined): string[] {
  const tags = [] as string[];
  const wanted = locale?.trim().toLowerCase();
  if (wanted && /^[a-z]{2,3}(-[a-z0-9]{1,8})*$/.test(wanted)) {
    const parts = wanted.split("-");
    for (let n = parts.length; n > 0; n--) tags.push(parts.slice(0, n).join("-"));
  }
  return [...tags, FALLBACK_LANGUAGE];
}

const PLACEHOLDER = /\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}/g;

function fill(template: string, values: Record<string, string>, encode: (v: string) => string, where: string): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`mail template ${where}: no value for {{${name}}}`);
    return encode(value);
  });
}

export function createMailRenderer(root: string = TEMPLATES): MailRenderer {
  const languages = loadTemplates(root);
  return (request: RenderRequest) => {
    const locale = candidates(request.locale).find((l) => languages.get(l)?.has(request.template));
    if (!locale) throw new Error(`no mail template "${request.template}" in ${FALLBACK_LANGUAGE}`);
    const template = languages.get(locale)!.get(request.template as MailTemplate)!;
    const applicationName = request.application?.name ?? DEFAULT_NAME;
    const values: Record<string, string> = { applicationName };
    for (const [k, v] of Object.entries(request.values)) values[k] = String(v);
    const where = `${locale}/${request.template}`;
    const subject = fill(template.subject, values, (v) => v.replace(/[\r\n\u0000-\u001f\u007f]+/g, " "), where);
    const text = fill(template.text, values, (v) => v, where);
    const body = fill(template.html, values, escapeHtml, where);
    const html = framed({ title: subject, body, applicationName, branding: request.application?.branding ?? {}, locale });
    return { locale, subject, text, html };
  };
}
