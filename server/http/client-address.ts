/**
 * The client's network address, as every handler sees it (`ip`): what per-address limits count
 * (sign-in throttling, registrations). One function, so the rule for proxies is decided in one
 * place: `ctx.ip` is set by forwardedClient (server/http/forwarded.ts), the peer of the TCP
 * connection unless that peer is one of our proxies (TRUST_PROXY), and then the first hop of
 * X-Forwarded-For (or `Forwarded`) from the right that is not one of ours.
 */
import type Koa from "koa";

export function clientAddress(ctx: Koa.Context): string {
  return ctx.ip;
}
