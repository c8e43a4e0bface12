/**
 * Linking an upstream identity to an existing account by the account's password (X-ID-SOC-1).
 *
 * When a social sign-in arrives with the email of an account it may not enter on the upstream's
 * word alone, what to link travels to the password form and back in a cookie sealed by this
 * server (AES-256-GCM: it can be neither read nor made elsewhere), bound to the browser that did
 * the upstream sign-in and to its pending authorization request, and valid 10 minutes. Nothing is
 * stored until the password is right; the request is consumed then, so a link is used once.
 */
import type { Clock } from "../../../../server/clock.ts";
import type { UserRow } from "../../storage/schema.ts";
import type { AccountsArea } from "../accounts/accounts-area.ts";
import type { Secrets } from "./secrets.ts";

export const SOCIAL_LINK_TTL_SECONDS = 600;

/** An upstream identity waiting for the proof of the account `userId`. */
export interface PendingLink {
  requestId: string;
  provider: string;
  subject: string;
  emailVerified: boolean;
  userId: string;
  email: string;
  /** Unix milliseconds. */
  expiresAt: number;
}

export type LinkOutcome = { kind: "linked"; user: UserRow } | { kind: "wrong-password" } | { kind: "gone" };

const PURPOSE = "social-link:v1";

export function createSocialLinks(deps: { accounts: AccountsArea; secrets: Secrets; clock: Clock }) {
  const { accounts, secrets, clock } = deps;

  /** The cookie value for a link to `user` of the upstream identity, within `requestId`. */
  function seal(o: { requestId: string; provider: string; subject: string; emailVerified: boolean; user: UserRow }): string {
    const link: PendingLink = {
      requestId: o.requestId,
      provider: o.provider,
      subject: o.subject,
      emailVerified: o.emailVerified,
      userId: o.user.id,
      email: o.user.email,
      expiresAt: clock.now().getTime() + SOCIAL_LINK_TTL_SECONDS * 1000,
    };
    return secrets.seal(JSON.stringify({ purpose: PURPOSE, ...link }));
  }

  /** The pending link of a cookie value: undefined unless this server sealed it for this purpose and it has not expired. */
  function open(cookie: string | undefined): PendingLink | undefined {
    if (!cookie) return undefined;
    const text = secrets.open(cookie);
    if (!text) return undefined;
    let value: Partial<PendingLink> & { purpose?: unknown };
    try {
      value = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (value.purpose !== PURPOSE || typeof value.expiresAt !== "number" || value.expiresAt <= clock.now().getTime()) return undefined;
    const { purpose: _purpose, ...link } = value;
    return link as PendingLink;
  }

  /**
   * Checks the account's password (constant time, as sign-in does) and links on success. `gone`:
   * the account was deleted, or the identity got linked to another account, in the meantime.
   */
  async function prove(link: PendingLink, password: string): Promise<LinkOutcome> {
    const user = await accounts.findUserById(link.userId);
    if (!(await accounts.verifyPassword(user, password))) return user ? { kind: "wrong-password" } : { kind: "gone" };
    const linked = await accounts.linkProvenSocialIdentity(link, link.userId);
    return linked ? { kind: "linked", user: linked } : { kind: "gone" };
  }

  return { seal, open, prove };
}

export type SocialLinks = ReturnType<typeof createSocialLinks>;
