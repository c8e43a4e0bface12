/**
 * Which attachment names are refused (X-EM-3): a complete block-list of the types a mail client or
 * the operating system behind it runs, opens as code, or mounts, checked on the name as a person
 * and Windows would read it, not on the bytes as sent.
 *
 * Why a block-list, not an allow-list: transactional mail carries invoices, tickets, exports and
 * images of every kind, and an allow-list refuses every type it did not foresee; Gmail and
 * Microsoft Defender for Office 365 both block by list. The list is theirs together
 * (Gmail's "file types blocked in Gmail"; Defender's common attachments filter), plus the
 * types the phishing kits of recent years moved to once those were blocked: disk images (their
 * contents escape the mark of the web), OneNote notebooks, Office documents with macros,
 * Internet shortcuts, and HTML and SVG files (HTML smuggling: a page that builds a download
 * or a sign-in form in the browser). A sender who needs one of these sends a link instead.
 *
 * The name is judged as it will be shown and saved, so the tricks do not get past it:
 * - the last extension decides (`invoice.pdf.exe` is an exe; `setup.exe.pdf` is a pdf);
 * - case-insensitively, after Unicode compatibility folding (NFKC: full-width `ｅｘｅ` is `exe`),
 *   with zero-width characters taken out (`e\u200Bxe` is `exe`);
 * - trailing dots and spaces dropped, as Windows drops them when it saves a file (`evil.exe.`);
 * - a bidirectional control character (U+202E RIGHT-TO-LEFT OVERRIDE and the others Unicode lists
 *   in UAX #9) anywhere refuses the name: `invoice\u202Egpj.exe` is shown as `invoiceexe.jpg`.
 *   No filename needs one: right-to-left scripts are laid out by the bidi algorithm without them.
 * The name is stored and sent exactly as given; the folding is for the check only.
 */

/** Lower-case extensions, by what they are. */
const BLOCKED = {
  windowsPrograms: ["exe", "ex", "ex_", "com", "scr", "pif", "cpl", "msc", "dll", "sys", "drv", "ocx", "vxd", "lib", "xll"],
  scripts: [
    ...["bat", "cmd", "nsh", "ps1", "ps1xml", "ps2", "ps2xml", "psc1", "psc2", "psd1", "psm1"],
    ...["vb", "vbe", "vbs", "js", "jse", "mjs", "wsf", "wsh", "wsc", "sct", "hta"],
  ],
  installers: [
    ...["msi", "msp", "mst", "msix", "msixbundle", "appx", "appxbundle", "appinstaller", "application", "gadget"],
    ...["jar", "jnlp", "apk", "app", "pkg", "cab", "diagcab", "diagcfg", "diagpack", "inf", "ins", "isp", "reg"],
  ],
  shortcuts: ["lnk", "shb", "url", "website", "scf", "settingcontent-ms", "library-ms", "search-ms", "searchconnector-ms"],
  diskImages: ["iso", "img", "vhd", "vhdx", "dmg"],
  helpAndDatabases: ["chm", "hlp", "ade", "adp", "mde", "accde"],
  officeMacros: ["docm", "dotm", "xlsm", "xltm", "xlam", "pptm", "potm", "ppam", "ppsm", "sldm", "one", "onepkg"],
  webPages: ["htm", "html", "xhtml", "shtml", "mht", "mhtml", "svg", "svgz"],
  // The rest of Defender's common attachments filter: other systems' programs, and the archives and
  // cursors it names.
  otherSystemsAndArchives: [
    "elf",
    "macho",
    "kext",
    "deb",
    "dex",
    "uif",
    "ace",
    "arj",
    "lha",
    "lzh",
    "xz",
    "z",
    "ani",
    "ppa",
    "rev",
    "library",
  ],
} as const;

export const BLOCKED_EXTENSIONS: ReadonlySet<string> = new Set(Object.values(BLOCKED).flat());

/** Bidirectional formatting characters (UAX #9 §2): ALM, LRM, RLM, the embeddings and overrides, the isolates. */
const BIDI_CONTROL = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/** Characters a name shows as nothing: zero-width space and joiners, word joiner, BOM, soft hyphen. */
const INVISIBLE = /[\u00AD\u200B-\u200D\u2060\uFEFF]/gu;

/** The last extension of `filename` as it will be read: folded, invisible characters out, trailing dots and spaces dropped. */
export function effectiveExtension(filename: string): string {
  const shown = filename
    .normalize("NFKC")
    .replace(INVISIBLE, "")
    .replace(/[.\s]+$/u, "")
    .toLowerCase();
  const dot = shown.lastIndexOf(".");
  return dot < 0 ? "" : shown.slice(dot + 1);
}

/** Why an attachment named `filename` is refused, or undefined when it may be sent. */
export function attachmentNameProblem(filename: string): { extension?: string; message: string } | undefined {
  if (BIDI_CONTROL.test(filename)) {
    return { message: "must not contain a Unicode bidirectional control character (U+202E and the like): it disguises the extension" };
  }
  const extension = effectiveExtension(filename);
  if (BLOCKED_EXTENSIONS.has(extension)) return { extension, message: `the .${extension} type is blocked` };
  return undefined;
}
