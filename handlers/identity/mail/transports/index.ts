/** The transport IDENTITY_MAIL_TRANSPORT chose (X-ID-MAIL-4), built from its settings; none while they are missing. */
import type { MailTransport } from "../../domain/mail/messages.ts";
import { emailServiceTransport } from "./email-service.ts";
import { smtpTransport } from "./smtp.ts";

/** What config.ts derives from the variables: the sender, and the transport with its settings. */
export interface MailTransportSettings {
  from: string;
  fromName: string;
  transport:
    | { kind: "email-service"; url: string; apiKey: string }
    | { kind: "smtp"; url: string }
    /** The chosen transport lacks its settings: messages wait in the outbox. */
    | { kind: "unconfigured"; missing: string };
}

export function createMailTransport(settings: MailTransportSettings): MailTransport | undefined {
  const { from, fromName, transport } = settings;
  switch (transport.kind) {
    case "email-service":
      return emailServiceTransport({ url: transport.url, apiKey: transport.apiKey, from, fromName });
    case "smtp":
      return smtpTransport({ url: transport.url, from, fromName });
    case "unconfigured":
      return undefined;
  }
}
