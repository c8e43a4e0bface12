/**
 * DKIM (RFC 6376): the signing key a deployment configures, turned into nodemailer's `dkim` option,
 * and the key generator behind `npm run admin -- email dkim-keygen` that prints the DNS record.
 *
 * Configured by EMAIL_DKIM_DOMAIN, EMAIL_DKIM_SELECTOR and EMAIL_DKIM_PRIVATE_KEY_FILE, all three or
 * none (handlers/email/config.ts describes them and reports `dkimVariableProblems` with every other
 * bad variable; the service reads the key file at start). The key is read from a file, not from an
 * environment variable, so it stays out of process listings, crash dumps of the environment and CI
 * logs. Nothing here ever logs the key.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import type { DKIMOptions } from "nodemailer/lib/dkim";

export interface DkimConfig {
  /** The signing domain (d=), lowercase. */
  domain: string;
  /** The selector (s=). */
  selector: string;
  /** PEM text of the RSA private key. */
  privateKey: string;
}

export const DKIM_ENV = {
  domain: "EMAIL_DKIM_DOMAIN",
  selector: "EMAIL_DKIM_SELECTOR",
  privateKeyFile: "EMAIL_DKIM_PRIVATE_KEY_FILE",
} as const;

// RFC 1035 labels; a selector is one or more labels too (RFC 6376 §3.1).
const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const DOMAIN = new RegExp(`^(?:${LABEL}\\.)+${LABEL}$`);
const SELECTOR = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/** The minimum accepted RSA modulus: RFC 8301 §3.2 (verifiers must reject keys under 1024 bits). */
export const MIN_RSA_BITS = 1024;

/** The three variables as the environment gives them. */
export type DkimVariables = Readonly<Partial<Record<(typeof DKIM_ENV)[keyof typeof DKIM_ENV], string | undefined>>>;

const settingsOf = (env: DkimVariables) => ({
  domain: env[DKIM_ENV.domain]?.trim().toLowerCase().replace(/\.$/, "") ?? "",
  selector: env[DKIM_ENV.selector]?.trim().toLowerCase() ?? "",
  file: env[DKIM_ENV.privateKeyFile]?.trim() ?? "",
});

/** What is wrong with the variables themselves (one missing, a malformed domain or selector), without reading the key. */
export function dkimVariableProblems(env: DkimVariables): Array<{ variable: string; problem: string }> {
  const { domain, selector, file } = settingsOf(env);
  if (!domain && !selector && !file) return [];
  const problems: Array<{ variable: string; problem: string }> = [];
  const required = "is required when DKIM is configured";
  if (!domain) problems.push({ variable: DKIM_ENV.domain, problem: required });
  else if (!DOMAIN.test(domain)) problems.push({ variable: DKIM_ENV.domain, problem: "must be a domain name such as acme.com" });
  if (!selector) problems.push({ variable: DKIM_ENV.selector, problem: required });
  else if (!SELECTOR.test(selector))
    problems.push({ variable: DKIM_ENV.selector, problem: "must be letters, digits and hyphens (dot-separated labels)" });
  if (!file) problems.push({ variable: DKIM_ENV.privateKeyFile, problem: required });
  return problems;
}

/**
 * Read the DKIM configuration: the variables, then the key file. `{ config: null, errors: [] }` when
 * DKIM is not configured; errors name the variable and never quote the key.
 */
export function loadDkimConfig(
  env: DkimVariables,
  readFile: (path: string) => string = (path) => readFileSync(path, "utf8"),
): { config: DkimConfig | null; errors: string[] } {
  const { domain, selector, file } = settingsOf(env);
  if (!domain && !selector && !file) return { config: null, errors: [] };

  const errors = dkimVariableProblems(env).map(({ variable, problem }) => `${variable} ${problem}`);
  let privateKey = "";
  if (file) {
    try {
      privateKey = readFile(file);
    } catch (err) {
      errors.push(`${DKIM_ENV.privateKeyFile}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
  }
  if (privateKey) {
    const problem = checkPrivateKey(privateKey);
    if (problem) errors.push(`${DKIM_ENV.privateKeyFile}: ${problem}`);
  }
  return errors.length > 0 ? { config: null, errors } : { config: { domain, selector, privateKey }, errors };
}

/** Why a PEM text is not a usable DKIM signing key, or null when it is. */
export function checkPrivateKey(pem: string): string | null {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    return "not a PEM private key";
  }
  if (key.asymmetricKeyType !== "rsa") return `an RSA key is required (got ${key.asymmetricKeyType ?? "unknown"})`;
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) return `the RSA key has ${bits} bits; at least ${MIN_RSA_BITS} are required (2048 advised)`;
  return null;
}

/** nodemailer's `dkim` option for a configuration: relaxed/relaxed, rsa-sha256 (its defaults). */
export function dkimOptions(config: DkimConfig): DKIMOptions {
  return { domainName: config.domain, keySelector: config.selector, privateKey: config.privateKey };
}

/** The DNS name that publishes the public key (RFC 6376 §3.6.2.1). */
export function dkimRecordName(config: Pick<DkimConfig, "domain" | "selector">): string {
  return `${config.selector}._domainkey.${config.domain}`;
}

/** The TXT record text for a key's public half: `v=DKIM1; k=rsa; p=<base64 SubjectPublicKeyInfo>`. */
export function dkimTxtRecord(key: string | KeyObject): string {
  const publicKey = createPublicKey(key);
  const der = publicKey.export({ type: "spki", format: "der" });
  return `v=DKIM1; k=rsa; p=${der.toString("base64")}`;
}

/**
 * The record as a zone-file line. A TXT character-string holds at most 255 octets (RFC 1035
 * §3.3.14) and a 2048-bit key's record is ~410: it is written as several quoted strings, which
 * resolvers concatenate (RFC 6376 §3.6.2.2).
 */
export function dkimZoneLine(config: Pick<DkimConfig, "domain" | "selector">, txt: string): string {
  const chunks: string[] = [];
  for (let i = 0; i < txt.length; i += 255) chunks.push(`"${txt.slice(i, i + 255)}"`);
  return `${dkimRecordName(config)}. IN TXT ( ${chunks.join(" ")} )`;
}

export interface GeneratedDkimKey {
  /** PKCS#8 PEM; store it with mode 0600 and point EMAIL_DKIM_PRIVATE_KEY_FILE at it. */
  privateKeyPem: string;
  /** `<selector>._domainkey.<domain>` */
  recordName: string;
  /** `v=DKIM1; k=rsa; p=…` */
  txtRecord: string;
  /** The same as a zone-file line with the value split into ≤ 255-octet strings. */
  zoneLine: string;
}

/** Make a new RSA key pair for DKIM and the DNS record that publishes it. */
export function generateDkimKey(options: { domain: string; selector: string; bits?: number }): GeneratedDkimKey {
  const domain = options.domain.trim().toLowerCase().replace(/\.$/, "");
  const selector = options.selector.trim().toLowerCase();
  if (!DOMAIN.test(domain)) throw new RangeError("domain must be a domain name such as acme.com");
  if (!SELECTOR.test(selector)) throw new RangeError("selector must be letters, digits and hyphens");
  const bits = options.bits ?? 2048;
  if (!Number.isInteger(bits) || bits < 2048) throw new RangeError("an RSA key for DKIM needs at least 2048 bits");
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: bits, publicExponent: 0x10001 });
  const privateKeyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const txtRecord = dkimTxtRecord(privateKey);
  const names = { domain, selector };
  return { privateKeyPem, recordName: dkimRecordName(names), txtRecord, zoneLine: dkimZoneLine(names, txtRecord) };
}
