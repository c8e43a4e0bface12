/**
 * The timed operations of bench:scale, each through the store the service runs it with, among N
 * rows (see bench/scale.ts for the list). Each run builds the stores it uses anew, as every
 * recorded figure was measured: on SQLite a store prepares its statements on its first use, so the
 * token exchange, the message's reads and the email delivery history each include preparing their
 * store's statements (the service builds its stores once). The dispatcher's claim is the
 * exception: its outbox is made once per scale, since on SQLite it has a dispatch thread.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createEmailStorage } from "../../handlers/email/storage/index.ts";
import { createIdentityStorage } from "../../handlers/identity/storage/index.ts";
import { newOneTimeSecret, secretStorageKey } from "../../server/security/tokens.ts";
import { uuidv7 } from "../../server/webhooks/index.ts";
import { createAttemptHistory, createDeliveryRecords, createDeliveryStore } from "../../server/webhooks/storage/index.ts";
import type { Scale } from "./databases.ts";
import { APP, codeHash, EMAIL_ENDPOINT, emailId, userId, WEBHOOK } from "./keys.ts";
import { lastHistoryPageCursor } from "./seed-identity.ts";
import { DELETES, EXCHANGES, ON_POSTGRES, READS, ROUNDS, TOKEN_KEYS } from "./settings.ts";
import { type Figures, type Op, timePaired } from "./timing.ts";

/** The dispatcher's outbox per scale, made once (on SQLite each has its dispatch thread). */
const outboxOf = new Map<Scale, ReturnType<typeof createDeliveryStore>>();
function outbox(s: Scale) {
  let q = outboxOf.get(s);
  if (!q) {
    q = createDeliveryStore(s.identity);
    outboxOf.set(s, q);
  }
  return q;
}

/** One round: every operation on both scales, taking turns; the median of each figure per scale. */
export async function measure(small: Scale, large: Scale): Promise<{ small: Figures; large: Figures }> {
  const cursors = new Map([
    [small, await lastHistoryPageCursor(small.identity)],
    [large, await lastHistoryPageCursor(large.identity)],
  ]);
  const random = (s: Scale, k: number) => userId(1 + ((k * 104729 + 17) % s.n));
  const ops: Array<[string, number, Op]> = [
    [
      "history: first page",
      READS,
      (s) =>
        Promise.all([
          createAttemptHistory(s.identity).page(WEBHOOK, { page: 1 }, 20),
          createAttemptHistory(s.identity).count(WEBHOOK),
        ]).then(() => {}),
    ],
    [
      "history: deepest page (cursor)",
      READS,
      async (s) => {
        const history = createAttemptHistory(s.identity);
        const [page, total] = await Promise.all([history.page(WEBHOOK, { after: cursors.get(s)! }, 20), history.count(WEBHOOK)]);
        if (page.items.length !== 20 || page.next !== null || total !== s.n)
          throw new Error(`deepest page wrong: ${page.items.length} items, total ${total}`);
      },
    ],
    // The deepest `page` allowed (rows 9981-10000), or the last page of a smaller history.
    [
      "history: `page` at its bound (page 500 of 20)",
      READS,
      (s) =>
        Promise.all([
          createAttemptHistory(s.identity).page(WEBHOOK, { page: Math.min(500, Math.floor(s.n / 20)) }, 20),
          createAttemptHistory(s.identity).count(WEBHOOK),
        ]).then(() => {}),
    ],
    [
      "token exchange: code read, consumed, grant and refresh token stored (COMMIT)",
      EXCHANGES,
      async (s) => {
        // The next live code (one in ten seeded codes is expired), each exchanged once.
        // (A code whose user the deletions below removed is skipped.)
        const { grants } = createIdentityStorage(s.identity);
        let found: Awaited<ReturnType<typeof grants.findCodeForExchange>>;
        do {
          const i = ++s.exchanged;
          if (i > s.n) throw new Error("out of codes");
          found = i % 10 === 0 ? undefined : await grants.findCodeForExchange(codeHash(ON_POSTGRES, TOKEN_KEYS, i));
        } while (!found?.user);
        const nowMs = Date.now();
        const now = new Date(nowMs).toISOString();
        // Keys made as the service makes them (grants/issue.ts): ids time-ordered, the token's key per IDENTITY_TOKEN_KEYS.
        const grantId = uuidv7(nowMs);
        const won = await grants.redeemCode({
          codeHash: found.code.code_hash,
          now,
          grant: {
            id: grantId,
            application_id: APP,
            user_id: found.user.id,
            scopes: "[]",
            auth_time: now,
            created_at: now,
            revoked_at: null,
            ends_at: "2099-01-01T00:00:00.000Z",
          },
          refresh: {
            id: uuidv7(nowMs),
            token_hash: secretStorageKey(newOneTimeSecret(TOKEN_KEYS, "rt_", nowMs), "rt_"),
            grant_id: grantId,
            parent_id: null,
            created_at: now,
            expires_at: "2099-01-01T00:00:00.000Z",
            used_at: null,
            child_id: null,
            rotation_answer: null,
          },
        });
        if (!won) throw new Error(`code ${found.code.code_hash} not redeemed`);
      },
    ],
    [
      "sign-in: the user by email, the session stored",
      READS,
      async (s, i) => {
        // Among the users no deletion run removes.
        const k = 1 + ((i * 104729 + 17) % (s.n - DELETES * ROUNDS));
        const user = await createIdentityStorage(s.identity).users.findByEmail(`user${k}@example.com`);
        if (!user) throw new Error(`user${k} not found`);
        const now = new Date().toISOString();
        await createIdentityStorage(s.identity).sessions.insert({
          id_hash: randomBytes(32).toString("hex"),
          user_id: user.id,
          auth_time: now,
          created_at: now,
          expires_at: "2099-01-01T00:00:00.000Z",
        });
      },
    ],
    [
      "dispatcher's claim: 50 due deliveries (and their release)",
      READS,
      async (s) => {
        const queries = outbox(s);
        const token = randomUUID();
        const now = new Date().toISOString();
        const rows = await queries.claimDue(now, new Date(Date.now() + 60_000).toISOString(), token, 50);
        if (rows.length !== Math.min(50, s.n / 10)) throw new Error(`claimed ${rows.length}`);
        // Given back, so that every run finds the same due rows (timed too: the figure is claim + release).
        await queries.releaseLeases(
          rows.map((r) => r.id),
          token,
        );
      },
    ],
    [
      "email: GET /v1/emails/{id} (message, copies, timeline, attachments)",
      READS,
      async (s, i) => {
        const q = createEmailStorage(s.email).messages;
        const id = emailId(1 + ((i * 7919 + 11) % s.n));
        const email = await q.findEmail(id);
        if (!email) throw new Error(`email ${id} not found`);
        const [copies, timeline] = await Promise.all([q.recipientsOf(id), q.timelineOf(id), q.attachmentsOf(id)]);
        if (copies.length !== 1 || timeline.length !== 1) throw new Error("email incomplete");
      },
    ],
    [
      "email: delivery history, first page + total",
      READS,
      async (s) => {
        const page = await createDeliveryRecords(s.email).list(EMAIL_ENDPOINT, { limit: 20, offset: 0 });
        if (page.items.length !== 20 || page.totalCount !== s.n) throw new Error(`history: ${page.items.length} items, ${page.totalCount}`);
      },
    ],
    [
      "admin request: the admin's organizations",
      READS,
      (s, i) =>
        createIdentityStorage(s.identity)
          .organizations.administeredBy(random(s, i))
          .then(() => {}),
    ],
    [
      "user deletion (cascade)",
      DELETES,
      async (s) => {
        s.deleted++;
        const trx = await s.identity.transaction();
        const t0 = performance.now();
        const gone = await createIdentityStorage(s.identity).users.remove(userId(s.n + 1 - s.deleted), trx);
        const t1 = performance.now();
        await trx.commit();
        if (!gone) throw new Error("user not deleted");
        return { "  of which the DELETE": t1 - t0, "  of which the COMMIT": performance.now() - t1 };
      },
    ],
  ];
  const out = { small: {} as Figures, large: {} as Figures };
  for (const [name, runs, op] of ops) {
    const r = await timePaired(name, runs, small, large, op);
    Object.assign(out.small, r.small);
    Object.assign(out.large, r.large);
  }
  return out;
}
