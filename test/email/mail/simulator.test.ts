/**
 * simulator.ts: its behaviours, the DSN and ARF it mails (checked as raw MIME), and the whole path
 * nodemailer → simulator → inbound listener → onReport.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { simpleParser } from "mailparser";
import { newVerpToken } from "../../../handlers/email/mail/compose.ts";
import { createInboundListener, type InboundListener, type InboundReport } from "../../../handlers/email/mail/inbound.ts";
import { parseFieldGroups } from "../../../handlers/email/mail/reports.ts";
import { simulatorBehaviour, startSimulator, type Simulator } from "../../../handlers/email/mail/simulator.ts";
import { createTransports, type Transports } from "../../../handlers/email/mail/transport.ts";
import {
  receiptTo,
  headerOf,
  rawSmtp,
  startSimulatorTransports,
  type SimulatorTransports,
  simulatorReportingToCapture,
} from "./helpers.ts";

const logger = pino({ level: "silent" });
const BOUNCE_DOMAIN = "bounces.simulator.test";

const copyTo = (to: string, token?: string) =>
  receiptTo(to, { bounceDomain: BOUNCE_DOMAIN, ...(token ? { token } : {}), more: { headers: { "X-Entity-Ref-ID": "order-7" } } });

describe("simulatorBehaviour", () => {
  it.each([
    ["delivered@simulator.test", "delivered"],
    ["bounced@simulator.test", "bounced"],
    ["BOUNCED+label@Simulator.Test", "bounced"],
    ["soft-bounce+1@simulator.test", "soft-bounce"],
    ["policy-reject@simulator.test", "policy-reject"],
    ["deferred@simulator.test", "deferred"],
    ["async-bounce+a+b@simulator.test", "async-bounce"],
    ["complained@simulator.test", "complained"],
    ["someone-else@simulator.test", "delivered"],
    ["bounced@example.com", "delivered"],
    ["bounced@simulator.test.example.com", "delivered"],
    ["no-at-sign", "delivered"],
    ["", "delivered"],
  ])("%j → %s", (address, behaviour) => {
    expect(simulatorBehaviour(address)).toBe(behaviour);
  });
});

describe("the reports the simulator mails, as raw MIME", () => {
  const mail = simulatorReportingToCapture({ reportDelayMs: 1 });

  it("async-bounce: an RFC 3464 DSN from the null sender to the copy's return path", async () => {
    const token = newVerpToken();
    const copy = copyTo("async-bounce+r1@simulator.test", token);
    expect((await mail.transports.send("simulator", copy)).kind).toBe("delivered");
    const dsn = await mail.inbound.next();
    expect(dsn.mailFrom).toBe("");
    expect(dsn.rcptTo).toEqual([`bounces+${token}@${BOUNCE_DOMAIN}`]);
    expect(headerOf(dsn.raw, "Content-Type")).toMatch(/^multipart\/report; report-type=delivery-status; boundary="/);
    expect(headerOf(dsn.raw, "Auto-Submitted")).toBe("auto-replied");

    const parsed = await simpleParser(dsn.raw, { keepDeliveryStatus: true });
    const status = parsed.attachments.find((a) => a.contentType === "message/delivery-status")!;
    const [perMessage, perRecipient] = parseFieldGroups(status.content.toString());
    expect(perMessage!.get("reporting-mta")).toEqual(["dns; mx.simulator.test"]);
    expect(perMessage!.get("arrival-date")![0]).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);
    expect(Object.fromEntries([...perRecipient!].map(([k, v]) => [k, v[0]]))).toMatchObject({
      "final-recipient": "rfc822; async-bounce+r1@simulator.test",
      action: "failed",
      status: "5.1.1",
      "diagnostic-code": "smtp; 550 5.1.1 The email account that you tried to reach does not exist.",
    });
    const headers = parsed.attachments.find((a) => a.contentType === "text/rfc822-headers")!.content.toString();
    expect(headerOf(headers, "Message-ID")).toBe(copy.messageId);
  });

  it("complained: an RFC 5965 ARF to fbl@<bounce domain> enclosing the copy's headers", async () => {
    const copy = copyTo("complained@simulator.test");
    expect((await mail.transports.send("simulator", copy)).kind).toBe("delivered");
    const arf = await mail.inbound.next();
    expect(arf.mailFrom).toBe("");
    expect(arf.rcptTo).toEqual([`fbl@${BOUNCE_DOMAIN}`]);
    expect(headerOf(arf.raw, "Content-Type")).toMatch(/^multipart\/report; report-type=feedback-report; boundary="/);

    const parsed = await simpleParser(arf.raw);
    const report = parsed.attachments.find((a) => a.contentType === "message/feedback-report")!;
    const fields = Object.fromEntries([...parseFieldGroups(report.content.toString())[0]!].map(([k, v]) => [k, v[0]]));
    expect(fields).toMatchObject({
      "feedback-type": "abuse",
      "user-agent": "simulator.test-fbl/1.0",
      version: "1",
      "original-mail-from": `<${copy.envelope.from}>`,
      "original-rcpt-to": "<complained@simulator.test>",
      "reported-domain": "acme.test",
      "source-ip": "127.0.0.1",
    });
    const enclosed = parsed.attachments.find((a) => a.contentType === "text/rfc822-headers")!.content.toString();
    expect(headerOf(enclosed, "Message-ID")).toBe(copy.messageId);
    expect(headerOf(enclosed, "X-Entity-Ref-ID")).toBe("order-7");
    expect(headerOf(enclosed, "To")).toBe("complained@simulator.test");
  });

  it("no report without an envelope sender to send it to; odd input never crashes it", async () => {
    const before = mail.inbound.received.length;
    const replies = await rawSmtp(mail.simulator.port, [
      "EHLO odd\r\n",
      "MAIL FROM:<>\r\n",
      "RCPT TO:<async-bounce@simulator.test>\r\n",
      "DATA\r\n",
      "no headers at all, just \u0000 bytes \u00ff\r\n.\r\n",
      "MAIL FROM:<x@acme.test>\r\n",
      "RCPT TO:<bounced@simulator.test>\r\n",
      "RCPT TO:<not an address>\r\n",
      "RSET\r\n",
      "MAIL FROM:<bounces+abc@bounces.simulator.test>\r\n",
      "RCPT TO:<complained@simulator.test>\r\n",
      "DATA\r\n",
      "Subject: headers only, no body\r\n.\r\n",
      "DATA\r\n",
      "QUIT\r\n",
    ]);
    expect(replies[0]).toMatch(/^220 /);
    expect(replies).toContain("550 5.1.1 The email account that you tried to reach does not exist.");
    expect(replies.filter((r) => r.startsWith("250 2.0.0 Accepted by the simulator"))).toHaveLength(2);
    expect(replies.at(-1)).toMatch(/^221 /);
    await mail.simulator.settled();
    // The headers-only message to complained@ still yields an ARF; the null-sender one yields nothing.
    const reports = mail.inbound.received.slice(before);
    expect(reports).toHaveLength(1);
    expect(reports[0]!.rcptTo).toEqual(["fbl@bounces.simulator.test"]);
  });
});

describe("end to end: nodemailer → simulator → inbound listener → onReport", () => {
  const reports: InboundReport[] = [];
  let listener: InboundListener;
  let simulator: Simulator;
  let transports: Transports;
  let simulated: SimulatorTransports;
  beforeAll(async () => {
    listener = await createInboundListener({
      host: "127.0.0.1",
      port: 0,
      bounceDomain: BOUNCE_DOMAIN,
      logger,
      onReport: (r) => void reports.push(r),
    });
    ({ simulator, transports } = simulated = await startSimulatorTransports(listener.port, { reportDelayMs: 1 }));
  });
  afterAll(async () => {
    await simulated?.close();
    await listener?.close();
  });

  it("async-bounce arrives as a DSN tied to the copy's token and recipient; complained as an ARF naming its Message-ID", async () => {
    const token = newVerpToken();
    const bounced = copyTo("async-bounce@simulator.test", token);
    const complained = copyTo("complained+x@simulator.test");
    const plain = copyTo("delivered@simulator.test");
    const outcomes = await Promise.all([bounced, complained, plain].map((c) => transports.send("simulator", c)));
    expect(outcomes.map((o) => o.kind)).toEqual(["delivered", "delivered", "delivered"]);
    await simulator.settled();

    expect(reports).toHaveLength(2);
    const dsn = reports.find((r) => r.kind === "dsn");
    expect(dsn).toEqual({
      kind: "dsn",
      token,
      reportingMta: "mx.simulator.test",
      recipients: [
        {
          recipient: "async-bounce@simulator.test",
          originalRecipient: "async-bounce@simulator.test",
          action: "failed",
          status: "5.1.1",
          diagnostic: "550 5.1.1 The email account that you tried to reach does not exist.",
        },
      ],
    });
    const arf = reports.find((r) => r.kind === "arf");
    expect(arf).toMatchObject({
      kind: "arf",
      token: null,
      feedbackType: "abuse",
      originalMessageId: complained.messageId,
      originalRcptTo: ["complained+x@simulator.test"],
      originalMailFrom: complained.envelope.from,
    });
  });

  it("close() drops reports not yet sent and returns promptly", async () => {
    const slow = await startSimulator({ inbound: { host: "127.0.0.1", port: listener.port }, logger, reportDelayMs: 60_000 });
    const viaSlow = createTransports({ simulator: { host: slow.host, port: slow.port } });
    expect((await viaSlow.send("simulator", copyTo("async-bounce@simulator.test"))).kind).toBe("delivered");
    await viaSlow.close();
    const started = Date.now();
    await slow.close();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
