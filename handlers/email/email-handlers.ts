/** What the email handlers are given (the domain services), and the handler map typed from the generated contract. */
import type { HandlerMap } from "../../server/http/handler-types.ts";
import { admitted } from "../../server/http/handler-inputs.ts";
import { HttpProblem } from "../../server/http/problem.ts";
import type { operations } from "../../generated/types/email.ts";
import type { ApiKeys, EmailPrincipal } from "./domain/api-keys.ts";
import type { Messages } from "./domain/messages.ts";
import type { RateLimiter } from "./domain/rate-limit.ts";
import type { Renderer } from "./domain/rendering.ts";
import type { Suppressions } from "./domain/suppressions.ts";
import type { Tracking } from "./domain/tracking.ts";
import type { EmailWebhooks } from "./domain/webhooks.ts";

export interface EmailDeps {
  apiKeys: ApiKeys;
  messages: Messages;
  suppressions: Suppressions;
  tracking: Tracking;
  webhooks: EmailWebhooks;
  rateLimiter: RateLimiter;
  renderer: Renderer;
}

export type EmailHandlers = HandlerMap<operations, EmailPrincipal | undefined, EmailDeps>;

/** The caller, for operations behind ApiKeyAuth (the security handler has refused everyone else). */
export const principalOf = (auth: EmailPrincipal | undefined): EmailPrincipal => admitted(auth);

/** 403 for a sending-only key on an operation that needs full access (X-EM-2). */
export function fullAccess(auth: EmailPrincipal | undefined): EmailPrincipal {
  const p = principalOf(auth);
  if (p.permission !== "full_access")
    throw new HttpProblem(403, "forbidden", "This API key may only send and read emails (sending_access).");
  return p;
}
