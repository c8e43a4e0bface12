/** What identity handlers are given (the domain's three areas), and the typed handler map every operation must fill. */
import type { HandlerMap } from "../../server/http/handler-types.ts";
import { admitted } from "../../server/http/handler-inputs.ts";
import type { operations } from "../../generated/types/identity.ts";
import type { AdminPrincipal, UserPrincipal } from "./domain/access-tokens.ts";
import type { AccountsArea } from "./domain/accounts/accounts-area.ts";
import type { Audit } from "./domain/audit.ts";
import type { OAuthArea } from "./domain/oauth/oauth-area.ts";
import type { WebhooksArea } from "./domain/webhooks/webhooks-area.ts";
import type { MailArea } from "./domain/mail/mail-area.ts";
import type { FactorsArea } from "./domain/factors/factors-area.ts";
import type { PasskeysArea } from "./domain/passkeys/passkeys-area.ts";

export interface IdentityDeps {
  accounts: AccountsArea;
  oauth: OAuthArea;
  webhooks: WebhooksArea;
  /** Identity's mail: its outbox, delivery and the local mailbox (X-ID-MAIL-1..6). */
  mail: MailArea;
  /** Second factors: enrolment, the sign-in's second step, the policy (X-ID-MFA-*). */
  factors: FactorsArea;
  /** The audit log (domain/audit.ts): the admin's list of it. */
  audit: Audit;
  /** Users' passkeys: registration, passwordless sign-in, the account page's list (X-ID-PK-1..8). */
  passkeys: PasskeysArea;
}

/** A session principal (SessionCookie) is defined by the OAuth area. */
export type SessionPrincipal = Awaited<ReturnType<OAuthArea["authenticateSession"]>>;
export type IdentityPrincipal = UserPrincipal | AdminPrincipal | NonNullable<SessionPrincipal> | undefined;

export type IdentityHandlers = HandlerMap<operations, IdentityPrincipal, IdentityDeps>;
export type { operations };

/** The admin principal of an AdminAuth operation (openapi-backend has refused anything else). */
export const adminOf = (auth: IdentityPrincipal): AdminPrincipal => admitted(auth, "admin");

/** The user principal of a UserAuth operation. */
export const userOf = (auth: IdentityPrincipal): UserPrincipal => admitted(auth, "user");
