/** The worker-thread JWT signer (server/security/jwt-signer.ts): jose's tokens, made off the event loop. */
import { describe, expect, it } from "vitest";
import { decodeProtectedHeader, generateKeyPair, jwtVerify } from "jose";
import { createWorkerSigner } from "../../server/security/jwt-signer.ts";

describe("worker JWT signer", () => {
  it("signs many tokens at once, each with its own header and claims, verifiable with the public key; signs again after close()", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const key = { kid: "k1", privateKey };
    const signer = createWorkerSigner();
    try {
      const tokens = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          signer.sign(key, { alg: "ES256", kid: "k1", typ: i % 2 ? "JWT" : "at+jwt" }, { sub: `user-${i}`, iat: 1_700_000_000 + i }),
        ),
      );
      for (const [i, token] of tokens.entries()) {
        const { payload, protectedHeader } = await jwtVerify(token, publicKey, {
          algorithms: ["ES256"],
          currentDate: new Date(1_700_000_000_000),
        });
        expect(payload).toEqual({ sub: `user-${i}`, iat: 1_700_000_000 + i });
        expect(protectedHeader).toEqual({ alg: "ES256", kid: "k1", typ: i % 2 ? "JWT" : "at+jwt" });
      }
      await signer.close();
      // A new worker: the key travels to it again.
      const again = await signer.sign(key, { alg: "ES256" }, { sub: "after-close" });
      expect(decodeProtectedHeader(again).alg).toBe("ES256");
      expect((await jwtVerify(again, publicKey)).payload.sub).toBe("after-close");
    } finally {
      await signer.close();
    }
  });

  it("signs with the key each request names: two keys in one batch, and a key first used later (a rotation)", async () => {
    const first = await generateKeyPair("ES256");
    const second = await generateKeyPair("ES256");
    const signer = createWorkerSigner();
    try {
      const [a, b] = await Promise.all([
        signer.sign({ kid: "a", privateKey: first.privateKey }, { alg: "ES256", kid: "a" }, { sub: "a" }),
        signer.sign({ kid: "b", privateKey: second.privateKey }, { alg: "ES256", kid: "b" }, { sub: "b" }),
      ]);
      expect((await jwtVerify(a!, first.publicKey)).payload.sub).toBe("a");
      expect((await jwtVerify(b!, second.publicKey)).payload.sub).toBe("b");
      await expect(jwtVerify(a!, second.publicKey)).rejects.toThrow();
      const third = await generateKeyPair("ES256");
      const c = await signer.sign({ kid: "c", privateKey: third.privateKey }, { alg: "ES256", kid: "c" }, { sub: "c" });
      expect((await jwtVerify(c, third.publicKey)).payload.sub).toBe("c");
    } finally {
      await signer.close();
    }
  });

  it("a header the key cannot sign fails that token alone", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const key = { kid: "k1", privateKey };
    const signer = createWorkerSigner();
    try {
      const [bad, good] = await Promise.allSettled([
        signer.sign(key, { alg: "RS256" }, { sub: "x" }),
        signer.sign(key, { alg: "ES256" }, { sub: "y" }),
      ]);
      expect(bad.status).toBe("rejected");
      expect(good.status).toBe("fulfilled");
    } finally {
      await signer.close();
    }
  });
});
