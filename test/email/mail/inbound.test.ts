/** inbound.ts + reports.ts: real DSN and ARF messages over SMTP, and what must be refused or dropped. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTransport, type Transporter } from "nodemailer";
import { pino } from "pino";
import { createInboundListener, type InboundListener, type InboundReport } from "../../../handlers/email/mail/inbound.ts";
import { parseFieldGroups } from "../../../handlers/email/mail/reports.ts";
import { rawSmtp } from "./helpers.ts";

const BOUNCE_DOMAIN = "bounces.acme.test";
const TOKEN = "k3v5n7p2q4r6s8t2u4w6y2z3ab";

/** A Postfix-style bounce: two recipients, one failed hard, one delayed; folded Diagnostic-Code. */
function postfixDsn(): string {
  return [
    "Return-Path: <>",
    "From: MAILER-DAEMON@mx.example.net (Mail Delivery System)",
    `To: bounces+${TOKEN}@${BOUNCE_DOMAIN}`,
    "Subject: Undelivered Mail Returned to Sender",
    "Auto-Submitted: auto-replied",
    "MIME-Version: 1.0",
    "Content-Type: multipart/report; report-type=delivery-status;",
    '\tboundary="4F1A2B3C.1700000000/mx.example.net"',
    "",
    "This is a MIME-encapsulated message.",
    "",
    "--4F1A2B3C.1700000000/mx.example.net",
    "Content-Description: Notification",
    "Content-Type: text/plain; charset=us-ascii",
    "",
    "I'm sorry to have to inform you that your message could not be delivered.",
    "",
    "--4F1A2B3C.1700000000/mx.example.net",
    "Content-Description: Delivery report",
    "Content-Type: message/delivery-status",
    "",
    "Reporting-MTA: dns; mx.example.net",
    "X-Postfix-Queue-ID: 4F1A2B3C",
    "Arrival-Date: Mon, 23 Nov 2026 10:00:00 +0000 (UTC)",
    "",
    "Final-Recipient: rfc822; ada@example.net",
    "Original-Recipient: rfc822;ada@example.net",
    "Action: failed",
    "Status: 5.1.1 (bad destination mailbox)",
    "Remote-MTA: dns; mail.example.net",
    "Diagnostic-Code: smtp; 550 5.1.1 <ada@example.net>: Recipient address rejected:",
    "    User unknown in local recipient table",
    "",
    "Final-Recipient: RFC822; <bob@example.net>",
    "Action: Delayed",
    "Status: 4.4.1",
    "Diagnostic-Code: X-Postfix; connect to mail.example.net[192.0.2.1]:25: Connection timed out",
    "",
    "--4F1A2B3C.1700000000/mx.example.net",
    "Content-Description: Undelivered Message Headers",
    "Content-Type: text/rfc822-headers",
    "",
    "From: Acme <receipts@acme.test>",
    "To: ada@example.net",
    "Message-ID: <0190a1b2-0000-7000-8000-000000000001@acme.test>",
    "Subject: Your receipt",
    "",
    "--4F1A2B3C.1700000000/mx.example.net--",
    "",
  ].join("\r\n");
}

/** A Yahoo/AOL-style ARF: the whole original message enclosed inline as message/rfc822, base64 text part. */
function yahooArf(messageId = "<0190a1b2-0000-7000-8000-000000000002@acme.test>"): string {
  return [
    "From: Yahoo! Mail AntiSpam Feedback <feedback@arf.mail.yahoo.test>",
    `To: fbl@${BOUNCE_DOMAIN}`,
    "Subject: FW: Your receipt",
    "MIME-Version: 1.0",
    'Content-Type: multipart/report; report-type="feedback-report"; boundary="----=_Part_1"',
    "",
    "------=_Part_1",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: base64",
    "",
    Buffer.from("This is an email abuse report for an email message received from IP 192.0.2.25.").toString("base64"),
    "",
    "------=_Part_1",
    "Content-Type: message/feedback-report",
    "",
    "Feedback-Type: Abuse",
    "User-Agent: Yahoo!-Mail-Feedback/2.0",
    "Version: 1",
    "Original-Mail-From: <bounces+zzzzzzzzzzzzzzzzzzzzzzzzzz@bounces.acme.test>",
    "Original-Rcpt-To: <carol@yahoo.test>",
    "Received-Date: Mon, 23 Nov 2026 10:00:00 +0000",
    "Source-IP: 192.0.2.25",
    "Reported-Domain: acme.test",
    "Reported-Domain: Bounces.Acme.test",
    "",
    "------=_Part_1",
    "Content-Type: message/rfc822",
    "Content-Disposition: inline",
    "",
    "From: Acme <receipts@acme.test>",
    "To: carol@yahoo.test",
    `Message-ID:`,
    ` ${messageId}`,
    "Subject: Your receipt",
    "Content-Type: text/plain",
    "",
    "Thanks for your order.",
    "",
    "------=_Part_1--",
    "",
  ].join("\r\n");
}

describe("inbound listener", () => {
  const reports: InboundReport[] = [];
  const logLines: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void logLines.push(line) });
  let failNext = false;
  let listener: InboundListener;
  let client: Transporter;

  const send = (to: string | string[], raw: string | Buffer, from = "") =>
    client.sendMail({ envelope: { from, to: Array.isArray(to) ? to : [to] }, raw });

  beforeAll(async () => {
    listener = await createInboundListener({
      host: "127.0.0.1",
      port: 0,
      bounceDomain: [BOUNCE_DOMAIN, "bounces.simulator.test"],
      logger,
      onReport(report) {
        if (failNext) {
          failNext = false;
          throw new Error("database is down");
        }
        reports.push(report);
      },
    });
    client = createTransport({ host: "127.0.0.1", port: listener.port, ignoreTLS: true, pool: true, maxConnections: 1 });
  });
  afterAll(async () => {
    client.close();
    await listener.close();
  });

  it("reads an RFC 3464 DSN at a VERP address: per recipient action, status, diagnostic", async () => {
    reports.length = 0;
    const info = await send(`bounces+${TOKEN}@${BOUNCE_DOMAIN}`, postfixDsn());
    expect(info.response).toMatch(/^250 /);
    expect(reports).toEqual([
      {
        kind: "dsn",
        token: TOKEN,
        reportingMta: "mx.example.net",
        recipients: [
          {
            recipient: "ada@example.net",
            originalRecipient: "ada@example.net",
            action: "failed",
            status: "5.1.1",
            diagnostic: "550 5.1.1 <ada@example.net>: Recipient address rejected: User unknown in local recipient table",
          },
          {
            recipient: "bob@example.net",
            originalRecipient: null,
            action: "delayed",
            status: "4.4.1",
            diagnostic: "connect to mail.example.net[192.0.2.1]:25: Connection timed out",
          },
        ],
      },
    ]);
  });

  it("reads an RFC 5965 ARF at fbl@: feedback type and the enclosed Message-ID", async () => {
    reports.length = 0;
    await send(`FBL@${BOUNCE_DOMAIN.toUpperCase()}`, yahooArf(), "feedback@arf.mail.yahoo.test");
    expect(reports).toEqual([
      {
        kind: "arf",
        token: null,
        feedbackType: "abuse",
        userAgent: "Yahoo!-Mail-Feedback/2.0",
        version: "1",
        originalMessageId: "<0190a1b2-0000-7000-8000-000000000002@acme.test>",
        originalMailFrom: "bounces+zzzzzzzzzzzzzzzzzzzzzzzzzz@bounces.acme.test",
        originalRcptTo: ["carol@yahoo.test"],
        arrivalDate: "Mon, 23 Nov 2026 10:00:00 +0000",
        sourceIp: "192.0.2.25",
        reportedDomains: ["acme.test", "bounces.acme.test"],
      },
    ]);
  });

  it("an ARF sent to a return path carries that token", async () => {
    reports.length = 0;
    await send(`bounces+${TOKEN}@${BOUNCE_DOMAIN}`, yahooArf());
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ kind: "arf", token: TOKEN });
  });

  it("takes return paths at every configured bounce domain (the deployment's and the simulator's)", async () => {
    reports.length = 0;
    await send(`bounces+${TOKEN}@bounces.simulator.test`, postfixDsn());
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ kind: "dsn", token: TOKEN });
  });

  it("is not an open relay: 550 5.7.1 for any other address, at RCPT", async () => {
    for (const to of [
      "ada@example.com",
      `postmaster@${BOUNCE_DOMAIN}`,
      `bounces+${TOKEN}@acme.test`,
      `bounces+short@${BOUNCE_DOMAIN}`,
      `fbl@sub.${BOUNCE_DOMAIN}`,
    ]) {
      const err = await send(to, postfixDsn()).then(
        () => null,
        (e: { responseCode?: number; response?: string }) => e,
      );
      expect(err?.responseCode, to).toBe(550);
      expect(err?.response).toMatch(/^550 5\.7\.1 /);
    }
  });

  it("drops what is not a report with 250 and a log line, never crashing", async () => {
    reports.length = 0;
    const qmailStyle = [
      "From: MAILER-DAEMON@old.example.net",
      `To: bounces+${TOKEN}@${BOUNCE_DOMAIN}`,
      "Subject: failure notice",
      "",
      "Hi. This is the qmail-send program at old.example.net.",
      "<ada@example.net>:",
      "Sorry, no mailbox here by that name. (#5.1.1)",
      "",
    ].join("\r\n");
    const oddities = [
      qmailStyle,
      "garbage without headers",
      "Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\n--x\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n\r\n--x--\r\n",
      "Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\n--x\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n\r\nFinal-Recipient: rfc822; a@b\r\nAction: exploded\r\n\r\n--x--\r\n",
      "Content-Type: multipart/report; report-type=feedback-report; boundary=x\r\n\r\n--x\r\nContent-Type: message/feedback-report\r\n\r\nVersion: 1\r\n\r\n--x--\r\n",
      'Content-Type: multipart/mixed; boundary="unterminated\r\n\r\n--unterminated\r\nContent-Type: message/delivery-status\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!!not base64\u0000\u00ff',
      Buffer.from([0xff, 0xfe, 0x00, 0x0d, 0x0a, 0x0d, 0x0a, 0x80, 0x81]),
    ];
    for (const raw of oddities) {
      const info = await send(`bounces+${TOKEN}@${BOUNCE_DOMAIN}`, raw);
      expect(info.response).toMatch(/^250 /);
    }
    expect(reports).toEqual([]);
    const dropped = logLines.filter((l) => l.includes("dropped"));
    expect(dropped.length).toBeGreaterThanOrEqual(oddities.length);
    // token and reason only: no addresses or bodies in the log
    expect(logLines.join("\n")).not.toMatch(/ada@example\.net|qmail-send|carol@yahoo/);
  });

  it("a DSN at fbl@ has no token to tie it to: dropped", async () => {
    reports.length = 0;
    await send(`fbl@${BOUNCE_DOMAIN}`, postfixDsn());
    expect(reports).toEqual([]);
  });

  it("refuses a message over 1 MiB with 552 (and reads nothing of it)", async () => {
    reports.length = 0;
    const big = Buffer.from(`${postfixDsn()}${`${"x".repeat(998)}\r\n`.repeat(1100)}\r\n.\r\n`);
    const replies = await rawSmtp(listener.port, [
      "EHLO test\r\n",
      "MAIL FROM:<>\r\n",
      `RCPT TO:<bounces+${TOKEN}@${BOUNCE_DOMAIN}>\r\n`,
      "DATA\r\n",
      big,
      "QUIT\r\n",
    ]);
    expect(replies[0]).toMatch(/^220 /);
    expect(replies.slice(-2)[0]).toMatch(/^552 5\.3\.4 /);
    expect(reports).toEqual([]);
  });

  it("answers 451 when the report cannot be stored, so the reporting MTA retries", async () => {
    reports.length = 0;
    failNext = true;
    const err = await send(`bounces+${TOKEN}@${BOUNCE_DOMAIN}`, postfixDsn()).then(
      () => null,
      (e: { responseCode?: number }) => e,
    );
    expect(err?.responseCode).toBe(451);
    await send(`bounces+${TOKEN}@${BOUNCE_DOMAIN}`, postfixDsn());
    expect(reports).toHaveLength(1);
  });
});

describe("inbound listener: what one client may hold (X-EM-17)", () => {
  const MAX_PER_PEER = 3;
  const IDLE_MS = 300;
  const listeners: InboundListener[] = [];
  const open: SmtpClient[] = [];
  /** A listener on every loopback address with these limits; the ordinary idle timeout far beyond any test. */
  const listen = async (limits: { maxClientsPerPeer?: number; idleBeforeMailMs?: number; transactionMs?: number }) => {
    const listener = await createInboundListener({
      host: "0.0.0.0",
      port: 0,
      bounceDomain: BOUNCE_DOMAIN,
      logger: pino({ level: "silent" }),
      onReport() {},
      socketTimeoutMs: 120_000,
      ...limits,
    });
    listeners.push(listener);
    return listener;
  };
  /** A client session from `localAddress` (a loopback alias: another peer), closed after the test. */
  const connect = async (listener: InboundListener, localAddress = "127.0.0.1") => {
    const session = await smtpClient(listener.port, localAddress);
    open.push(session);
    return session;
  };

  afterEach(async () => {
    for (const session of open.splice(0)) session.destroy();
    await Promise.all(listeners.splice(0).map((l) => l.close()));
  });

  it("X-EM-17 one peer holds at most its share of sessions: the next is 421 4.7.0 and closed; another peer is still served, and a freed place is taken again", async () => {
    // Idle sessions are not closed during this test: only the per-peer count decides.
    const listener = await listen({ maxClientsPerPeer: MAX_PER_PEER, idleBeforeMailMs: 120_000 });
    const held = await Promise.all(Array.from({ length: MAX_PER_PEER }, () => connect(listener)));
    for (const session of held) expect(session.greeting).toMatch(/^220 /);
    const refused = await connect(listener);
    expect(refused.greeting).toMatch(/^421 4\.7\.0 /);
    await refused.closed;
    // Another address: another peer, served while the first holds its share.
    const other = await connect(listener, "127.0.0.2");
    expect(other.greeting).toMatch(/^220 /);
    // The first peer lets one go: its next session is served (once the listener has seen the close).
    held[0]!.write("QUIT\r\n");
    await held[0]!.closed;
    await expect.poll(async () => (await connect(listener)).greeting).toMatch(/^220 /);
  });

  it("X-EM-17 a session that sends no MAIL FROM is closed with 421 4.4.2, also after EHLO and after a message; inside a transaction it stays", async () => {
    const listener = await listen({ idleBeforeMailMs: IDLE_MS });
    const silent = await connect(listener);
    expect(silent.greeting).toMatch(/^220 /);
    expect(await silent.reply()).toMatch(/^421 4\.4\.2 /);
    await silent.closed;

    const greeted = await connect(listener);
    expect(await greeted.command("EHLO reporter.example\r\n")).toMatch(/^250 /);
    expect(await greeted.reply()).toMatch(/^421 4\.4\.2 /);
    await greeted.closed;

    // A transaction opened in time is not cut off: RCPT still answers after the idle time has passed.
    const busy = await connect(listener);
    expect(await busy.command("EHLO reporter.example\r\n")).toMatch(/^250 /);
    expect(await busy.command("MAIL FROM:<>\r\n")).toMatch(/^250 /);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS * 2));
    expect(await busy.command(`RCPT TO:<bounces+${TOKEN}@${BOUNCE_DOMAIN}>\r\n`)).toMatch(/^250 /);
    expect(await busy.command("DATA\r\n")).toMatch(/^354 /);
    expect(await busy.command("Subject: not a report\r\n\r\nhello\r\n.\r\n")).toMatch(/^250 /);
    // The message is answered: without a new MAIL FROM the session is closed again.
    expect(await busy.reply()).toMatch(/^421 4\.4\.2 /);
    await busy.closed;
  });

  it("X-EM-17 a transaction reset with RSET stands idle again: the session is closed with 421 4.4.2 though it keeps sending NOOP", async () => {
    const listener = await listen({ idleBeforeMailMs: IDLE_MS });
    const reset = await connect(listener);
    expect(await reset.command("EHLO reporter.example\r\n")).toMatch(/^250 /);
    expect(await reset.command("MAIL FROM:<>\r\n")).toMatch(/^250 /);
    expect(await reset.command("RSET\r\n")).toMatch(/^250 /);
    // NOOPs keep the ordinary timeout away, not the guard: within two periods of the reset it closes the session.
    const noops = setInterval(() => reset.write("NOOP\r\n"), IDLE_MS / 4);
    try {
      let line = await reset.reply();
      while (/^250 /.test(line)) line = await reset.reply();
      expect(line).toMatch(/^421 4\.4\.2 /);
      await reset.closed;
    } finally {
      clearInterval(noops);
    }
  });

  it("X-EM-17 a transaction may not outlast its deadline however often the client sends NOOP", async () => {
    const listener = await listen({ idleBeforeMailMs: IDLE_MS, transactionMs: IDLE_MS * 3 });
    const pinned = await connect(listener);
    expect(await pinned.command("EHLO reporter.example\r\n")).toMatch(/^250 /);
    expect(await pinned.command("MAIL FROM:<>\r\n")).toMatch(/^250 /);
    const noops = setInterval(() => pinned.write("NOOP\r\n"), IDLE_MS / 4);
    try {
      let line = await pinned.reply();
      while (/^250 /.test(line)) line = await pinned.reply();
      expect(line).toMatch(/^421 4\.4\.2 /);
      await pinned.closed;
    } finally {
      clearInterval(noops);
    }
  });
});

/** One raw SMTP session: its greeting, then each reply line in order. */
interface SmtpClient {
  greeting: string;
  /** The next reply line (waits for it). */
  reply(): Promise<string>;
  /** Sends `line` and resolves with its reply. */
  command(line: string): Promise<string>;
  write(data: string): void;
  /** Resolves when the server has closed the connection. */
  closed: Promise<void>;
  destroy(): void;
}

async function smtpClient(port: number, localAddress: string): Promise<SmtpClient> {
  const { connect } = await import("node:net");
  const socket = connect({ port, host: "127.0.0.1", localAddress });
  const lines: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  let buffer = "";
  socket.on("data", (chunk) => {
    buffer += chunk.toString("latin1");
    for (let i = buffer.indexOf("\r\n"); i >= 0; i = buffer.indexOf("\r\n")) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      if (!/^\d{3} /.test(line)) continue; // continuation lines of a multi-line reply
      const next = waiting.shift();
      if (next) next(line);
      else lines.push(line);
    }
  });
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  const reply = () => {
    const line = lines.shift();
    return line !== undefined ? Promise.resolve(line) : new Promise<string>((resolve) => waiting.push(resolve));
  };
  const greeting = await reply();
  return {
    greeting,
    reply,
    command: (line) => {
      socket.write(line);
      return reply();
    },
    write: (data) => socket.write(data),
    closed,
    destroy: () => socket.destroy(),
  };
}

describe("parseFieldGroups", () => {
  it("splits on blank lines, unfolds, lowercases names, keeps repeats, skips junk lines", () => {
    const groups = parseFieldGroups("A: 1\r\n  more\r\nnot a field\r\nB: 2\r\nB: 3\r\n\r\n\r\nC:4\n");
    expect(groups.map((g) => Object.fromEntries(g))).toEqual([{ a: ["1 more"], b: ["2", "3"] }, { c: ["4"] }]);
  });
});
