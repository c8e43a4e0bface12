/**
 * Signing keys (server/keys/, X-ID-KEY-1, X-RB-11) below the HTTP level: the schedule's
 * arithmetic, encryption at rest under KEY_ENCRYPTION_KEY (setting it, changing it, losing it),
 * the migration from one key per purpose, and the operator's commands. The rotation itself, across
 * two instances and the injected clock, is in conformance/{identity,repository}/key-rotation.test.ts.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { exportJWK, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../server/clock.ts";
import { loadConfig } from "../../app/load-config.ts";
import { openKeyRing } from "../../server/keys/ring.ts";
import { CLOCK_SKEW_MS, keySchedule } from "../../server/keys/schedule.ts";
import { readKeyRows } from "../../server/keys/store.ts";
import { keyEncryption, KeyEncryptionError, parseEncryptionKey } from "../../server/security/key-encryption.ts";
import { openDatabase, type Database } from "../../server/storage/db.ts";
import { migrations } from "../../handlers/repository/storage/migrations.ts";
import { createIdentityService } from "../../handlers/identity/service.ts";
import { createEmailService } from "../../handlers/email/service.ts";
import { pino } from "pino";

const run = promisify(execFile);
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "signing-keys-"));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const KEK = Buffer.alloc(32, 7);
const OTHER_KEK = Buffer.alloc(32, 9);
const purpose = { purpose: "repository-user", alg: "EdDSA" as const, maxTokenLifetimeSeconds: 3600 };
const ring = (db: Database, clock: ManualClock, encryption = keyEncryption()) =>
  openKeyRing({ ...purpose, db, clock, encryption, refreshSeconds: 60 });
const repositoryDb = (dir: string) => openDatabase({ service: "repository", databaseUrl: undefined, dataDir: dir, migrations });

describe("the key schedule", () => {
  const H = 3600_000;
  it("X-RB-11 pending until activated, the newest active key signs, the one before it retires after the longest token lifetime plus the clock skew", () => {
    const keys = [
      { kid: "a", publishAtMs: 0, activateAtMs: 0 },
      { kid: "b", publishAtMs: 1 * H, activateAtMs: 2 * H },
    ];
    const at = (ms: number) => Object.fromEntries(keySchedule(keys, ms, H).map((k) => [k.kid, [k.state, k.published]]));
    expect(at(0)).toEqual({ a: ["signing", true], b: ["pending", false] });
    expect(at(1 * H)).toEqual({ a: ["signing", true], b: ["pending", true] });
    expect(at(2 * H)).toEqual({ a: ["retiring", true], b: ["signing", true] });
    expect(at(3 * H + CLOCK_SKEW_MS - 1)).toEqual({ a: ["retiring", true], b: ["signing", true] });
    expect(at(3 * H + CLOCK_SKEW_MS)).toEqual({ a: ["retired", false], b: ["signing", true] });
    expect(keySchedule(keys, 0, H)[0]!.retireAtMs).toBe(3 * H + CLOCK_SKEW_MS);
    expect(keySchedule(keys, 0, H)[1]!.retireAtMs).toBeUndefined();
  });
});

describe("KEY_ENCRYPTION_KEY", () => {
  it("X-RB-11 takes 32 bytes as base64, base64url or hex, and nothing else; its value is never echoed in a configuration error", () => {
    const key = Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7 + 250));
    for (const text of [key.toString("base64"), key.toString("base64url"), key.toString("hex")])
      expect(parseEncryptionKey(text)).toEqual(key);
    for (const text of ["", "short", Buffer.alloc(16).toString("base64"), Buffer.alloc(33).toString("base64")])
      expect(parseEncryptionKey(text)).toBeUndefined();
    const secret = "not-a-key-but-secret-looking-value";
    let message = "";
    try {
      loadConfig({ KEY_ENCRYPTION_KEY: secret });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain("KEY_ENCRYPTION_KEY");
    expect(message).not.toContain(secret);
  });

  it("X-RB-11 setting it seals the stored keys at the next start, and tokens signed before still verify; without it, or with another one, the start fails with one clear message; changing it with the old one as KEY_ENCRYPTION_KEY_PREVIOUS reseals", async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const db = await repositoryDb(dir);
    try {
      const plain = await ring(db, clock);
      const key = await plain.signingKey();
      const token = await new SignJWT({ sub: "u" }).setProtectedHeader({ alg: key.alg, kid: key.kid }).sign(key.privateKey);
      const plainRow = (await readKeyRows(db, purpose.purpose))[0]!.private_jwk;
      expect(plainRow.startsWith("{")).toBe(true);

      const sealed = await ring(db, clock, keyEncryption(KEK));
      const stored = (await readKeyRows(db, purpose.purpose))[0]!.private_jwk;
      expect(stored.startsWith("{")).toBe(false);
      expect(stored).not.toContain((JSON.parse(plainRow) as { d: string }).d);
      const reopened = await sealed.verificationKey(key.kid);
      expect((await jwtVerify(token, reopened!.publicKey)).payload.sub).toBe("u");

      await expect(ring(db, clock)).rejects.toThrow(/encrypted at rest: set KEY_ENCRYPTION_KEY/);
      await expect(ring(db, clock, keyEncryption(OTHER_KEK))).rejects.toBeInstanceOf(KeyEncryptionError);

      await ring(db, clock, keyEncryption(OTHER_KEK, KEK));
      await expect(ring(db, clock, keyEncryption(KEK))).rejects.toThrow(/sealed with another key/);
      const changed = await ring(db, clock, keyEncryption(OTHER_KEK));
      expect((await changed.signingKey()).kid).toBe(key.kid);
    } finally {
      await db.destroy();
    }
  });
});

describe("server secrets under KEY_ENCRYPTION_KEY", () => {
  it("X-RB-11 the webhook sealing key and the client-secret HMAC key are sealed too: a plain one at the next start, a new one at once; the value stays the same, and a start with another key fails with KeyEncryptionError", async () => {
    const dir = tempDir();
    const config = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: dir, ...env });
    const logger = pino({ level: "silent" });
    const plain = await createIdentityService(config(), new ManualClock(), logger);
    const before = { hmac: plain.ctx.clientSecretKey, sealing: plain.ctx.webhookSealingKey };
    const rows = async (db: Database) => (await db("server_secrets").select("name", "value")) as Array<{ name: string; value: string }>;
    expect((await rows(plain.db)).map((r) => r.value.startsWith("v1."))).toEqual([false, false]);
    await plain.close();

    const kek = { KEY_ENCRYPTION_KEY: KEK.toString("hex") };
    const sealed = await createIdentityService(config(kek), new ManualClock(), logger);
    try {
      expect(sealed.ctx.clientSecretKey).toEqual(before.hmac);
      expect(sealed.ctx.webhookSealingKey).toEqual(before.sealing);
      const stored = await rows(sealed.db);
      expect(stored.map((r) => r.name).sort()).toEqual(["client_secret_hmac", "webhook_secret_key"]);
      for (const r of stored) {
        expect(r.value).toMatch(/^v1\./);
        expect(r.value).not.toContain(before.hmac.toString("base64url"));
        expect(r.value).not.toContain(before.sealing.toString("base64url"));
      }
    } finally {
      await sealed.close();
    }
    await expect(
      createIdentityService(config({ KEY_ENCRYPTION_KEY: OTHER_KEK.toString("hex") }), new ManualClock(), logger),
    ).rejects.toBeInstanceOf(KeyEncryptionError);

    // The email service seals its webhook key and its click-token key from its first start.
    const email = await createEmailService(config(kek), new ManualClock(), logger);
    try {
      expect((await rows(email.db)).map((r) => [r.name, /^v1\./.test(r.value)]).sort()).toEqual([
        ["click_token_key", true],
        ["webhook_secret_key", true],
      ]);
    } finally {
      await email.close();
    }
    await expect(createEmailService(config(), new ManualClock(), logger)).rejects.toThrow(/encrypted at rest: set KEY_ENCRYPTION_KEY/);
  }, 120_000); // several service starts or admin processes: a loaded machine needs more than the default
});

describe("migration 0003_signing_key_ring", () => {
  it("X-RB-11 the key of the one-key table becomes the ring's signing key under the same kid, so tokens signed before the upgrade keep verifying, and the old table is gone", async () => {
    const dir = tempDir();
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0003"));
    const old = await openDatabase({ service: "repository", databaseUrl: undefined, dataDir: dir, migrations: before });
    const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
    await old("signing_keys").insert({
      purpose: "repository-user",
      kid: "repository-user-old",
      private_jwk: JSON.stringify(await exportJWK(privateKey)),
      public_jwk: JSON.stringify(await exportJWK(publicKey)),
      created_at: "2026-01-01T00:00:00.000Z",
    });
    const token = await new SignJWT({ sub: "u" }).setProtectedHeader({ alg: "EdDSA", kid: "repository-user-old" }).sign(privateKey);
    await old.destroy();

    const db = await repositoryDb(dir);
    try {
      expect(await db.schema.hasTable("signing_keys")).toBe(false);
      const keys = await ring(db, new ManualClock());
      expect((await keys.signingKey()).kid).toBe("repository-user-old");
      expect((await jwtVerify(token, (await keys.verificationKey("repository-user-old"))!.publicKey)).payload.sub).toBe("u");
    } finally {
      await db.destroy();
    }
  });
});

describe("npm run admin -- <service> rotate-keys | list-keys", () => {
  const admin = (dir: string, args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, ["--import", "tsx", "app/admin.ts", ...args], { env: { ...process.env, DATA_DIR: dir, ...env } }).then(
      (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }),
    );

  it("X-RB-11 rotates both repository keys with the configured delay, lists their states, refuses a second rotation while one waits and a delay under 10 minutes, and says whether keys are sealed", async () => {
    const dir = tempDir();
    const kek = { KEY_ENCRYPTION_KEY: KEK.toString("base64") };
    // A service that has run once: its keys exist and sign.
    const db = await repositoryDb(dir);
    await ring(db, new ManualClock());
    await openKeyRing({
      purpose: "repository-agent",
      alg: "EdDSA",
      maxTokenLifetimeSeconds: 60,
      db,
      clock: new ManualClock(),
      encryption: keyEncryption(),
      refreshSeconds: 60,
    });
    await db.destroy();

    const short = await admin(dir, ["repository", "rotate-keys", "--delay", "5m"]);
    expect(short.code).toBe(2);
    expect(short.err).toMatch(/--delay must be at least 600s/);

    const rotated = await admin(dir, ["repository", "rotate-keys", "--delay", "2h"], kek);
    expect(rotated.code).toBe(0);
    expect(rotated.out).toMatch(/repository-user: new key repository-user-\S+ is published now and signs from /);
    expect(rotated.out).toMatch(/repository-agent: new key repository-agent-\S+ is published now/);
    expect(rotated.out).toMatch(/retires at /);

    const again = await admin(dir, ["repository", "rotate-keys"], kek);
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/already waits to sign from/);

    const listed = await admin(dir, ["repository", "list-keys"], kek);
    expect(listed.code).toBe(0);
    expect(listed.out.match(/^ {2}signing /gm)).toHaveLength(2);
    expect(listed.out.match(/^ {2}pending /gm)).toHaveLength(2);
    expect(listed.out).toContain("sealed under KEY_ENCRYPTION_KEY");

    const withoutKey = await admin(dir, ["repository", "list-keys"]);
    expect(withoutKey.out).toContain("stored unencrypted");
    const unopenable = await admin(dir, ["repository", "rotate-keys"]);
    expect(unopenable.code).toBe(2);
  }, 120_000); // several service starts or admin processes: a loaded machine needs more than the default
});
