/**
 * A purpose's signing keys as one instance sees them: read from the database at start and again
 * every SIGNING_KEY_REFRESH_SECONDS (and at once for a token whose `kid` it does not know yet), so
 * a rotation made by `npm run admin -- <service> rotate-keys` reaches every instance without a
 * restart. Which key signs, which are published and which are retired follows from the rows and
 * the clock alone (server/keys/schedule.ts); retired keys are deleted here.
 */
import { importJWK, type CryptoKey, type JWK } from "jose";
import type { Knex } from "knex";
import type { Clock } from "../clock.ts";
import type { KeyEncryption } from "../security/key-encryption.ts";
import { keySchedule, type KeyState } from "./schedule.ts";
import { deleteKeyRows, insertKeyRow, newKeyRow, readKeyRows, updatePrivateJwk, type KeyAlg, type KeyRow } from "./store.ts";

export interface SigningKey {
  kid: string;
  alg: KeyAlg;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** The public JWK as the JWKS publishes it (kid, alg, use). */
  publicJwk: JWK;
}

/** What a purpose is for: its algorithm, and how long the longest token it signs lives (which decides when an old key retires). */
export interface KeyPurpose {
  purpose: string;
  alg: KeyAlg;
  maxTokenLifetimeSeconds: number;
}

export interface KeyRingOptions extends KeyPurpose {
  db: Knex;
  clock: Clock;
  encryption: KeyEncryption;
  refreshSeconds: number;
  /** Told when a refresh fails (the ring keeps what it had and tries again at the next use). */
  onRefreshError?: (err: unknown) => void;
}

export interface KeyRing {
  readonly purpose: string;
  readonly alg: KeyAlg;
  /** The key to sign with now. */
  signingKey(): Promise<SigningKey>;
  /** The published key `kid` names, if any: the only keys a token is verified with. */
  verificationKey(kid: string | undefined): Promise<SigningKey | undefined>;
  /** The keys the JWKS publishes now, oldest first. */
  publishedKeys(): Promise<SigningKey[]>;
  /** Whether `kid` is one of this ring's keys (published or not): tells our tokens from others without verifying. */
  knows(kid: string | undefined): boolean;
  /** Reads the rows again now. */
  refresh(): Promise<void>;
}

/** An unknown `kid` reads the rows again at most this often, so tokens with made-up ids cannot turn into a query each. */
const UNKNOWN_KID_REFRESH_MS = 5_000;

export async function openKeyRing(o: KeyRingOptions): Promise<KeyRing> {
  const lifetimeMs = o.maxTokenLifetimeSeconds * 1000;
  const now = () => o.clock.now().getTime();
  /** Imported keys by kid: a key is opened and imported once, however often the rows are read. */
  let keys = new Map<string, SigningKey>();
  let states: KeyState[] = [];
  let loadedAtMs = -Infinity;
  let loading: Promise<void> | undefined;

  async function importRow(row: KeyRow): Promise<SigningKey> {
    const known = keys.get(row.kid);
    if (known) return known;
    const publicJwk: JWK = { ...(JSON.parse(row.public_jwk) as JWK), kid: row.kid, alg: row.alg, use: "sig" };
    const privateJwk = JSON.parse(o.encryption.reveal(row.private_jwk, `signing key ${row.kid}`)) as JWK;
    return {
      kid: row.kid,
      alg: row.alg,
      privateKey: (await importJWK(privateJwk, row.alg)) as CryptoKey,
      publicKey: (await importJWK(publicJwk, row.alg)) as CryptoKey,
      publicJwk,
    };
  }

  async function load(): Promise<void> {
    const at = now();
    const rows = await readKeyRows(o.db, o.purpose);
    const schedule = keySchedule(
      rows.map((r) => ({ kid: r.kid, publishAtMs: Date.parse(r.publish_at), activateAtMs: Date.parse(r.activate_at) })),
      at,
      lifetimeMs,
    );
    const retired = schedule.filter((s) => s.state === "retired").map((s) => s.kid);
    // No token it signed can still be valid: its private half has nothing left to do.
    await deleteKeyRows(o.db, retired);
    const next = new Map<string, SigningKey>();
    for (const row of rows) if (!retired.includes(row.kid)) next.set(row.kid, await importRow(row));
    keys = next;
    states = schedule.filter((s) => s.state !== "retired");
    loadedAtMs = at;
  }

  function reload(): Promise<void> {
    loading ??= load().finally(() => (loading = undefined));
    return loading;
  }

  async function fresh(): Promise<void> {
    if (now() - loadedAtMs < o.refreshSeconds * 1000) return;
    try {
      await reload();
    } catch (err) {
      // The keys already read still sign and verify; the next use tries again.
      if (keys.size === 0) throw err;
      o.onRefreshError?.(err);
    }
  }

  /** The schedule as of now (rows as of the last read; times as of now). */
  const current = () => keySchedule(states, now(), lifetimeMs);

  await sealAtRest(o.db, o.purpose, o.encryption);
  await reload();
  if (!states.some((s) => s.activateAtMs <= now())) {
    // First start of this purpose: a key that signs from now on. Instances starting together may
    // each make one; the one activated last signs, and the others retire as after a rotation.
    const first = new Date(now());
    await insertKeyRow(o.db, await newKeyRow({ purpose: o.purpose, alg: o.alg, now: first, activateAt: first, encryption: o.encryption }));
    await reload();
  }
  let lastUnknownRefreshMs = -Infinity;

  return {
    purpose: o.purpose,
    alg: o.alg,
    async signingKey() {
      await fresh();
      const signing = current().find((s) => s.state === "signing");
      if (!signing) throw new Error(`no signing key of ${o.purpose} is active yet`);
      return keys.get(signing.kid)!;
    },
    async verificationKey(kid) {
      if (kid === undefined) return undefined;
      await fresh();
      if (!keys.has(kid) && now() - lastUnknownRefreshMs >= UNKNOWN_KID_REFRESH_MS) {
        // A key another instance has just made (its first start), before our next scheduled read.
        lastUnknownRefreshMs = now();
        await reload();
      }
      return current().find((s) => s.kid === kid && s.published) ? keys.get(kid) : undefined;
    },
    async publishedKeys() {
      await fresh();
      return current()
        .filter((s) => s.published)
        .map((s) => keys.get(s.kid)!);
    },
    knows: (kid) => kid !== undefined && keys.has(kid),
    refresh: reload,
  };
}

/**
 * With KEY_ENCRYPTION_KEY set, seals the keys still stored plain (or sealed under the previous
 * key), so that setting or changing the key protects existing keys from the next start on.
 */
export async function sealAtRest(db: Knex, purpose: string, encryption: KeyEncryption): Promise<number> {
  if (!encryption.enabled) return 0;
  let sealed = 0;
  for (const row of await readKeyRows(db, purpose)) {
    if (!encryption.needsResealing(row.private_jwk)) continue;
    await updatePrivateJwk(db, row.kid, encryption.protect(encryption.reveal(row.private_jwk, `signing key ${row.kid}`)));
    sealed++;
  }
  return sealed;
}
