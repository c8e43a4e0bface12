/**
 * The client's network address, as every handler sees it (`ip`): what per-address limits count
 * (sign-in throttling, registrations). One function, so the rule for proxies is decided in one
 * place: today the services trust no proxy (Koa `proxy: false`), and the address is the peer of
 * the TCP connection.
 */
import type Koa from "koa";

export function clientAddress(ctx: Koa.Context): string {
  return ctx.ip;
}
