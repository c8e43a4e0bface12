/** transport.ts: routing, and real sends through nodemailer pools to SMTP servers on 127.0.0.1. */
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { dkimVerify } from "mailauth/lib/dkim/verify.js";
import { generateDkimKey } from "../../../handlers/email/mail/dkim.ts";
import { createTransports, parseRelayUrl, transportFor, type Transports } from "../../../handlers/email/mail/transport.ts";
import { receiptTo, headerOf, startCaptureServer, type CaptureServer, simulatorReportingToCapture } from "./helpers.ts";

const logger = pino({ level: "silent" });

const copyTo = (to: string) => receiptTo(to, { bounceDomain: "bounces.acme.test", more: { html: "<p>Hello</p>" } });

/** A port nothing listens on (bound, then released). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe("transportFor (design M1)", () => {
  const none = { testKey: false, relayConfigured: false, sink: false };
  it.each([
    ["delivered@simulator.test", none, "simulator"],
    ["Bounced+x@SIMULATOR.test", { ...none, relayConfigured: true }, "simulator"],
    ["ada@example.com", { ...none, testKey: true, relayConfigured: true }, "simulator"],
    ["ada@example.com", { ...none, relayConfigured: true }, "smtp"],
    ["ada@example.com", { ...none, sink: true, relayConfigured: true }, "sink"],
    ["ada@example.com", none, "no_transport"],
    ["ada@simulator.test.evil.com", none, "no_transport"],
  ] as const)("%s with %o → %s", (recipient, context, expected) => {
    expect(transportFor(recipient, context)).toBe(expected);
  });
});

describe("parseRelayUrl", () => {
  it("reads host, port, TLS mode and credentials", () => {
    expect(parseRelayUrl("smtp://user%40acme:p%3Ass@relay.acme.test:2587?requireTLS=true")).toEqual({
      host: "relay.acme.test",
      port: 2587,
      secure: false,
      requireTLS: true,
      auth: { user: "user@acme", pass: "p:ss" },
    });
    expect(parseRelayUrl("smtps://relay.acme.test")).toEqual({ host: "relay.acme.test", port: 465, secure: true, requireTLS: false });
    expect(parseRelayUrl("smtp://[::1]")).toMatchObject({ host: "::1", port: 587 });
  });
  it("refuses bad URLs without quoting the password", () => {
    for (const bad of [
      "http://u:hunter2@relay",
      "smtp://u:hunter2@relay?requireTLS=yes",
      "smtp://u:hunter2@relay?pool=false",
      "not a url hunter2",
    ]) {
      let message = "";
      try {
        parseRelayUrl(bad);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, bad).toMatch(/EMAIL_SMTP_URL/);
      expect(message).not.toContain("hunter2");
    }
  });
});

describe("relay transport (smtp)", () => {
  let relay: CaptureServer;
  let transports: Transports;
  beforeAll(async () => {
    // A relay like a submission port: STARTTLS (smtp-server's built-in test certificate), AUTH required.
    relay = await startCaptureServer({
      disabledCommands: [],
      authOptional: false,
      onAuth(auth, _session, cb) {
        if (auth.username === "acme" && auth.password === "s3cret") return cb(null, { user: "acme" });
        cb(Object.assign(new Error("5.7.8 Authentication credentials invalid"), { responseCode: 535 }));
      },
      rcpt: (address) => {
        if (address.startsWith("unknown")) return { code: 550, message: "5.1.1 <x>: Recipient address rejected: User unknown" };
        if (address.startsWith("full")) return { code: 452, message: "4.2.2 Mailbox full" };
        if (address.startsWith("bare")) return { code: 550, message: "Mailbox unavailable" };
        return null;
      },
      data: (m) =>
        m.rcptTo[0]!.startsWith("dmarc") ? { code: 550, message: "5.7.26 Unauthenticated email is not accepted from this domain." } : null,
    });
    transports = createTransports({
      relayUrl: `smtp://acme:s3cret@127.0.0.1:${relay.port}?requireTLS=true`,
      simulator: { host: "127.0.0.1", port: await deadPort() },
      relayTls: { rejectUnauthorized: false }, // the built-in certificate is self-signed
      heloName: "mta.acme.test",
      logger,
    });
  });
  afterAll(async () => {
    await transports.close();
    await relay.close();
  });

  it("delivers over STARTTLS with AUTH, one RCPT per transaction, VERP envelope sender", async () => {
    const copy = copyTo("ada@example.com");
    expect(await transports.send("smtp", copy)).toMatchObject({ kind: "delivered", smtpResponse: expect.stringMatching(/^250 /) });
    const got = relay.received.at(-1)!;
    expect(got.secure).toBe(true);
    expect(got.user).toBe("acme");
    expect(got.rcptTo).toEqual(["ada@example.com"]);
    expect(got.mailFrom).toBe(copy.envelope.from);
    expect(headerOf(got.raw, "Message-ID")).toBe(copy.messageId);
    expect(await transports.verifyRelay()).toMatchObject({ kind: "delivered" });
  });

  it.each([
    ["unknown@example.com", "hard_bounce", "550 5.1.1 <x>: Recipient address rejected: User unknown", "5.1.1"],
    ["bare@example.com", "hard_bounce", "550 Mailbox unavailable", null],
    ["full@example.com", "retry", "452 4.2.2 Mailbox full", "4.2.2"],
    ["dmarc@example.com", "soft_bounce", "550 5.7.26 Unauthenticated email is not accepted from this domain.", "5.7.26"], // at DATA
  ])("maps the relay's answer for %s to %s", async (to, kind, smtpResponse, smtpStatus) => {
    expect(await transports.send("smtp", copyTo(to))).toEqual({ kind, smtpResponse, smtpStatus });
  });

  it("the same copy can be sent again (a retry after a 4xx)", async () => {
    const copy = copyTo("again@example.com");
    expect((await transports.send("smtp", copy)).kind).toBe("delivered");
    expect((await transports.send("smtp", copy)).kind).toBe("delivered");
    const both = relay.received.filter((m) => m.rcptTo[0] === "again@example.com");
    expect(both).toHaveLength(2);
    expect(headerOf(both[0]!.raw, "Message-ID")).toBe(headerOf(both[1]!.raw, "Message-ID"));
  });

  it("many copies at once share the pool; each is its own transaction", async () => {
    const copies = Array.from({ length: 60 }, (_, i) => copyTo(`bulk${i}@example.com`));
    const before = relay.received.length;
    const outcomes = await Promise.all(copies.map((c) => transports.send("smtp", c)));
    expect(outcomes.every((o) => o.kind === "delivered")).toBe(true);
    const got = relay.received.slice(before);
    expect(got).toHaveLength(60);
    expect(got.every((m) => m.rcptTo.length === 1)).toBe(true);
  });

  it("wrong credentials, refused TLS and a dead relay are relay failures", async () => {
    const badAuth = createTransports({
      relayUrl: `smtp://acme:wrong@127.0.0.1:${relay.port}`,
      simulator: { host: "127.0.0.1", port: 1 },
      relayTls: { rejectUnauthorized: false },
    });
    const auth = await badAuth.send("smtp", copyTo("ada@example.com"));
    await badAuth.close();
    expect(auth).toMatchObject({ kind: "relay_failure", smtpStatus: "5.7.8" });
    expect(auth.smtpResponse).not.toContain("wrong");

    const plain = await startCaptureServer(); // no STARTTLS offered
    const noTls = createTransports({
      relayUrl: `smtp://127.0.0.1:${plain.port}?requireTLS=true`,
      simulator: { host: "127.0.0.1", port: 1 },
    });
    const tls = await noTls.send("smtp", copyTo("ada@example.com"));
    await noTls.close();
    await plain.close();
    expect(tls.kind).toBe("relay_failure");
    expect(plain.received).toHaveLength(0);

    const dead = createTransports({
      relayUrl: `smtp://127.0.0.1:${await deadPort()}`,
      simulator: { host: "127.0.0.1", port: 1 },
      timeouts: { connectionMs: 2000 },
    });
    const conn = await dead.send("smtp", copyTo("ada@example.com"));
    await dead.close();
    expect(conn).toMatchObject({
      kind: "relay_failure",
      smtpStatus: null,
      smtpResponse: expect.stringMatching(/^E(SOCKET|CONNECTION): .*ECONNREFUSED/),
    });
  });

  it("signs with DKIM when configured; mailauth verifies what the relay received", async () => {
    const key = generateDkimKey({ domain: "acme.test", selector: "s1" });
    const signed = createTransports({
      relayUrl: `smtp://acme:s3cret@127.0.0.1:${relay.port}`,
      simulator: { host: "127.0.0.1", port: 1 },
      relayTls: { rejectUnauthorized: false },
      dkim: { domain: "acme.test", selector: "s1", privateKey: key.privateKeyPem },
    });
    expect((await signed.send("smtp", copyTo("signed@example.com"))).kind).toBe("delivered");
    await signed.close();
    const raw = relay.received.at(-1)!.raw;
    const result = await dkimVerify(raw, {
      resolver: async (name: string) => {
        if (name === key.recordName) return [[key.txtRecord]];
        throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      },
    });
    expect(result.results[0]!.status.result).toBe("pass");
  });
});

describe("simulator and sink transports", () => {
  const mail = simulatorReportingToCapture({ reportDelayMs: 5, sink: true });

  it.each([
    ["delivered@simulator.test", "delivered", "2.0.0"],
    ["anyone+tag@simulator.test", "delivered", "2.0.0"],
    ["ada@example.com", "delivered", "2.0.0"], // a test key's non-simulator recipient
    ["bounced@simulator.test", "hard_bounce", "5.1.1"],
    ["Bounced+x@Simulator.Test", "hard_bounce", "5.1.1"],
    ["soft-bounce@simulator.test", "soft_bounce", "5.2.2"],
    ["policy-reject@simulator.test", "soft_bounce", "5.7.26"],
    ["deferred@simulator.test", "retry", "4.3.0"],
    ["async-bounce@simulator.test", "delivered", "2.0.0"],
    ["complained@simulator.test", "delivered", "2.0.0"],
  ])("simulator: %s → %s %s", async (to, kind, status) => {
    const outcome = await mail.transports.send("simulator", copyTo(to));
    expect(outcome.kind).toBe(kind);
    expect(outcome.smtpStatus).toBe(status);
  });

  it("the sink answers 250 with no I/O, and only when enabled", async () => {
    expect(await mail.transports.send("sink", copyTo("ada@example.com"))).toEqual({
      kind: "delivered",
      smtpResponse: "250 2.0.0 Accepted by the sink (not delivered)",
      smtpStatus: "2.0.0",
    });
    const noSink = createTransports({ simulator: { host: "127.0.0.1", port: 1 } });
    expect((await noSink.send("sink", copyTo("ada@example.com"))).kind).toBe("relay_failure");
    expect(await noSink.send("smtp", copyTo("ada@example.com"))).toEqual({
      kind: "relay_failure",
      smtpResponse: "no relay configured (EMAIL_SMTP_URL)",
      smtpStatus: null,
    });
    expect(noSink.relayConfigured).toBe(false);
    await noSink.close();
  });
});
