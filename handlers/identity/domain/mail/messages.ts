/**
 * What identity's mail is made of, as the rest of the service sees it: the messages it knows
 * (one template each, per language), what queuing one takes, and the two ports the service wires
 * in (the renderer of handlers/identity/mail/templates.ts, and the transport the configuration
 * chose, handlers/identity/mail/transports/).
 */
import type { Tx } from "../../../../server/storage/transaction.ts";

/**
 * The messages identity sends; each is a template folder entry per language under
 * handlers/identity/mail/templates/<language>/ (`<name>.subject.txt`, `<name>.txt`, `<name>.html`).
 */
export type MailTemplate = "test-message" | "password-reset" | "email-verification" | "password-reset-social";

export interface QueueMail {
  /** The recipient's address. */
  to: string;
  template: MailTemplate;
  /** The recipient's language (BCP 47, e.g. `fr-CA`); the nearest language with this template is used, else English. */
  locale?: string;
  /** The application the message is about: its name and branding appear in the message. */
  applicationId?: string;
  /** What the template interpolates by name (`{{link}}`); escaped in HTML. */
  values: Record<string, string | number>;
}

/** The mail port of the identity context (ctx.mail). */
export interface MailQueue {
  /**
   * Renders the message and writes it to the outbox in `tx`, the transaction of the change that
   * causes it: it is sent only if that commits, and then at least once (X-ID-MAIL-1). Resolves
   * with the message's id.
   */
  queue(tx: Tx, mail: QueueMail): Promise<string>;
}

export interface MailBranding {
  logoUrl?: string;
  primaryColor?: string;
}

/** A message rendered in one language. */
export interface RenderedMail {
  locale: string;
  subject: string;
  text: string;
  html: string;
}

export interface RenderRequest {
  template: MailTemplate;
  locale: string | undefined;
  values: Record<string, string | number>;
  /** The application's name and branding, when the message is about one. */
  application?: { name: string; branding: MailBranding };
}

export type MailRenderer = (request: RenderRequest) => RenderedMail;

/** One message as a transport sends it. Its id is stable across attempts: receivers deduplicate on it. */
export interface OutgoingMail {
  id: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** What an attempt's answer means: delivered, try again later, or refused for good. */
export type DeliveryAnswer = { kind: "sent" } | { kind: "retry" | "failed"; error: string };

export interface MailTransport {
  /** `email-service` or `smtp`: what the operator chose (IDENTITY_MAIL_TRANSPORT). */
  name: string;
  /** One attempt; never throws for an answer of the receiver (a throw counts as `retry`). */
  send(mail: OutgoingMail): Promise<DeliveryAnswer>;
  close?(): Promise<void>;
}
