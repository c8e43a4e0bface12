/**
 * The engine's claim phase: due deliveries leased to this dispatcher, with the endpoints they go to,
 * and the way to give leases back. A claim is one statement (`storage/deliveries.ts` `claimDue`); its rows carry one
 * fresh lease token, so the leases of one claim are given back together.
 */
import { randomUUID } from "node:crypto";
import { releaseLeases } from "../../background/leased-dispatcher.ts";
import type { Clock } from "../../clock.ts";
import type { DeliveryStore } from "../storage/deliveries.ts";
import type { ClaimedRow } from "../storage/schema.ts";
import type { Endpoint } from "./attempt.ts";

/** A delivery this dispatcher holds the lease of. */
export interface Claimed extends ClaimedRow {
  leaseToken: string;
  /** When the lease ends (ms, on the injected clock). */
  leaseEndsAt: number;
  /** Its endpoint; undefined when the endpoint was deleted. */
  endpoint: Endpoint | undefined;
}

export interface ClaimOptions {
  queries: Pick<DeliveryStore, "claimDue">;
  clock: Clock;
  leaseMs: number;
  /** The endpoints of a batch of deliveries; a missing one means deleted. */
  resolveEndpoints(ids: string[]): Promise<Map<string, Endpoint>>;
}

/** Claims up to `limit` due deliveries (due by the injected clock) under one new lease, with their endpoints. */
export function deliveryClaimer(options: ClaimOptions): (limit: number) => Promise<Claimed[]> {
  const { queries, clock, leaseMs } = options;
  return async (limit) => {
    const leaseToken = randomUUID();
    const now = clock.now().getTime();
    const leaseEndsAt = now + leaseMs;
    const rows = await queries.claimDue(new Date(now).toISOString(), new Date(leaseEndsAt).toISOString(), leaseToken, limit);
    if (!rows.length) return [];
    const endpoints = await options.resolveEndpoints([...new Set(rows.map((r) => r.endpoint_id))]);
    // The fresh rows become the claims (no copies: a batch is hundreds of rows).
    return rows.map((r) =>
      Object.assign(r, { attempts_made: Number(r.attempts_made), leaseToken, leaseEndsAt, endpoint: endpoints.get(r.endpoint_id) }),
    );
  };
}

/** Gives the leases of `claimed` back (if still theirs): due at once for another dispatcher. */
export const releaseClaims = (queries: Pick<DeliveryStore, "releaseLeases">, claimed: Claimed[]): Promise<void> =>
  releaseLeases(claimed, (ids, token) => queries.releaseLeases(ids, token));
