/** The webhook area: the delivery engine wired to identity's webhooks, and the event sink it provides. */
import type { IdentityContext } from "../context.ts";
import type { EventSink } from "../events.ts";

export function createWebhooksArea(ctx: Omit<IdentityContext, "events">) {
  void ctx;
  const sink: EventSink = {
    async publish() {
      // Filled in by the webhook delivery engine (outbox write in the caller's transaction).
    },
  };
  return { sink, start: async () => {}, stop: async () => {} };
}

export type WebhooksArea = ReturnType<typeof createWebhooksArea>;
