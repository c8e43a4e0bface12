/** The contract's SMTP outcome table (X-EM-16, spec/email/emails.tsp, "Outcomes"), one row per case. */
import { describe, expect, it } from "vitest";
import {
  bounceTypeForStatus,
  classifySendError,
  classifySendInfo,
  classifySmtpReply,
  normaliseReply,
  parseEnhancedStatus,
  type SmtpOutcomeKind,
} from "../../../handlers/email/mail/reply.ts";

describe("parseEnhancedStatus (RFC 2034 / RFC 3463)", () => {
  it.each([
    ["550 5.1.1 The email account that you tried to reach does not exist.", "5.1.1"],
    ["550-5.1.1 first line", "5.1.1"],
    ["452 4.2.2 Mailbox full", "4.2.2"],
    ["250 2.0.0 OK queued as ABC", "2.0.0"],
    ["550 5.7.26 Unauthenticated email", "5.7.26"],
    ["550 5.007.026 zero-padded", "5.7.26"],
    ["550 No such user", null],
    ["550 4.1.1 class disagrees with the reply code", null],
    ["550 5.1 incomplete", null],
    ["5.1.1 no reply code", null],
    ["550 5.1.1x glued text", null],
    ["", null],
  ])("%j → %j", (reply, status) => {
    expect(parseEnhancedStatus(reply)).toBe(status);
  });
});

describe("normaliseReply", () => {
  it("joins a multi-line reply into one line with one code and one enhanced status", () => {
    const gmail =
      "550-5.1.1 The email account that you tried to reach does not exist. Please try\r\n" +
      "550-5.1.1 double-checking the recipient's email address for typos or\r\n" +
      "550 5.1.1 unnecessary spaces. https://support.google.com/mail/?p=NoSuchUser a1si - gsmtp";
    expect(normaliseReply(gmail)).toBe(
      "550 5.1.1 The email account that you tried to reach does not exist. Please try double-checking the recipient's " +
        "email address for typos or unnecessary spaces. https://support.google.com/mail/?p=NoSuchUser a1si - gsmtp",
    );
  });
  it("keeps a reply without an enhanced code as it is", () => {
    expect(normaliseReply("550 User unknown")).toBe("550 User unknown");
  });
  it("strips control characters and caps the length", () => {
    expect(normaliseReply("550 5.1.1 a\u0000b\u001bc")).toBe("550 5.1.1 a b c");
    const long = normaliseReply(`550 5.1.1 ${"x".repeat(5000)}`);
    expect(long.length).toBe(512);
    expect(long.endsWith("…")).toBe(true);
  });
});

describe("bounceTypeForStatus", () => {
  it.each([
    ["5.1.1", "hard"],
    ["5.1.2", "hard"],
    ["5.1.10", "hard"],
    ["5.1.6", "hard"],
    ["5.2.1", "hard"],
    ["5.1.7", "soft"],
    ["5.1.8", "soft"], // sender's address, not the recipient's
    ["5.2.2", "soft"],
    ["5.2.3", "soft"],
    ["5.3.4", "soft"],
    ["5.4.4", "soft"],
    ["5.6.0", "soft"],
    ["5.7.1", "soft"],
    ["5.7.26", "soft"],
    ["5.0.0", "soft"],
    ["4.1.1", "soft"],
    ["garbage", "soft"],
  ])("%s → %s", (status, type) => {
    expect(bounceTypeForStatus(status)).toBe(type);
  });
});

describe("classifySmtpReply: the design table", () => {
  /** A reply as nodemailer reports one: its code is the first three digits of the response. */
  const reply = (command: string, response: string) => ({ code: Number(response.slice(0, 3)), response, command });
  /** No reply to classify: nodemailer's error code and message, at the command it failed in. */
  const failed = (command: string, errorCode: string, message: string) => ({ errorCode, message, command });
  const rows: Array<[string, Parameters<typeof classifySmtpReply>[0], SmtpOutcomeKind, string | null]> = [
    ["250 after DATA", reply("DATA", "250 2.0.0 Ok: queued as 4B1"), "delivered", "2.0.0"],
    ["250 without text", { code: 250, command: "DATA" }, "delivered", null],
    ["bad mailbox 5.1.1 at RCPT", reply("RCPT TO", "550 5.1.1 <x@y>: Recipient address rejected: User unknown"), "hard_bounce", "5.1.1"],
    ["bad domain 5.1.2", reply("RCPT TO", "550 5.1.2 Host unknown"), "hard_bounce", "5.1.2"],
    ["disabled 5.2.1", reply("RCPT TO", "550 5.2.1 The email account that you tried to reach is disabled."), "hard_bounce", "5.2.1"],
    ["bare 550", reply("RCPT TO", "550 User unknown"), "hard_bounce", null],
    ["bare 551", reply("RCPT TO", "551 User not local"), "hard_bounce", null],
    ["bare 553", reply("RCPT TO", "553 Mailbox name not allowed"), "hard_bounce", null],
    ["bare 554", reply("DATA", "554 Transaction failed"), "soft_bounce", null],
    ["bare 552", reply("DATA", "552 Message too big"), "soft_bounce", null],
    ["over quota 5.2.2", reply("RCPT TO", "552 5.2.2 The email account that you tried to reach is over quota."), "soft_bounce", "5.2.2"],
    [
      "policy 5.7.26 at DATA is NOT hard",
      reply("DATA", "550 5.7.26 Unauthenticated email is not accepted from this domain."),
      "soft_bounce",
      "5.7.26",
    ],
    ["policy 5.7.1 at RCPT", reply("RCPT TO", "550 5.7.1 Relaying denied"), "soft_bounce", "5.7.1"],
    ["spam 5.7.350", reply("DATA", "550 5.7.350 Remote server returned message detected as spam"), "soft_bounce", "5.7.350"],
    ["size 5.3.4", reply("DATA", "552 5.3.4 Message size exceeds fixed limit"), "soft_bounce", "5.3.4"],
    ["media 5.6.1", reply("DATA", "554 5.6.1 Media not supported"), "soft_bounce", "5.6.1"],
    ["sender 5.1.8 at RCPT is about us", reply("RCPT TO", "553 5.1.8 Sender address domain does not exist"), "soft_bounce", "5.1.8"],
    ["5xx at MAIL FROM never hard", reply("MAIL FROM", "550 5.1.1 sender unknown"), "soft_bounce", "5.1.1"],
    ["530 at MAIL FROM: relay wants auth", reply("MAIL FROM", "530 5.7.0 Must issue a STARTTLS command first"), "relay_failure", "5.7.0"],
    ["deferred 451 4.3.0", reply("RCPT TO", "451 4.3.0 Temporary failure, try again later."), "retry", "4.3.0"],
    ["greylisted 450", reply("RCPT TO", "450 4.2.0 Greylisted, see http://postgrey.schweikert.ch/"), "retry", "4.2.0"],
    ["4xx at DATA", reply("DATA", "452 4.3.1 Insufficient system storage"), "retry", "4.3.1"],
    ["421 at greeting", reply("CONN", "421 4.7.0 Too many connections"), "retry", "4.7.0"],
    ["4xx at MAIL FROM", reply("MAIL FROM", "451 4.7.1 Try later"), "retry", "4.7.1"],
    [
      "AUTH refused",
      { code: 535, response: "535 5.7.8 Authentication credentials invalid", command: "AUTH PLAIN", errorCode: "EAUTH" },
      "relay_failure",
      "5.7.8",
    ],
    ["554 at greeting", reply("CONN", "554 No SMTP service here"), "relay_failure", null],
    ["code in the text only", { response: "550 5.1.1 user unknown", command: "RCPT TO" }, "hard_bounce", "5.1.1"],
    ["connection refused", failed("CONN", "ECONNECTION", "connect ECONNREFUSED 127.0.0.1:25"), "relay_failure", null],
    ["time-out", failed("CONN", "ETIMEDOUT", "Greeting never received"), "relay_failure", null],
    ["TLS failure", failed("CONN", "ETLS", "self-signed certificate"), "relay_failure", null],
    ["socket error", failed("CONN", "ESOCKET", "read ECONNRESET"), "relay_failure", null],
    ["DNS failure", failed("CONN", "EDNS", "getaddrinfo ENOTFOUND relay.invalid"), "relay_failure", null],
    ["AUTH without a reply", failed("API", "EAUTH", 'Missing credentials for "PLAIN"'), "relay_failure", null],
    ["unknown error", { message: "boom" }, "relay_failure", null],
    ["SIZE refused before sending", failed("MAIL FROM", "EMESSAGE", "Message size larger than allowed 1024"), "soft_bounce", "5.3.4"],
    ["bad envelope refused locally", failed("API", "EENVELOPE", 'Invalid recipient "a\\r\\n"'), "soft_bounce", null],
    ["pool limit", failed("API", "EMAXLIMIT", "Resource limit reached"), "retry", null],
    ["1xx is a protocol violation", reply("DATA", "199 odd"), "relay_failure", null],
  ];
  it.each(rows)("%s", (_name, reply, kind, status) => {
    const outcome = classifySmtpReply(reply);
    expect(outcome.kind).toBe(kind);
    expect(outcome.smtpStatus).toBe(status);
    expect(outcome.smtpResponse.length).toBeGreaterThan(0);
  });

  it("keeps the reply line as smtpResponse", () => {
    expect(
      classifySmtpReply({ code: 550, response: "550 5.1.1 The email account that you tried to reach does not exist.", command: "RCPT TO" })
        .smtpResponse,
    ).toBe("550 5.1.1 The email account that you tried to reach does not exist.");
  });

  it("names the error code and its first message line when there was no answer", () => {
    expect(
      classifySmtpReply({ errorCode: "ECONNECTION", message: "connect ECONNREFUSED 127.0.0.1:1\nstack…", command: "CONN" }).smtpResponse,
    ).toBe("ECONNECTION: connect ECONNREFUSED 127.0.0.1:1");
  });
});

describe("nodemailer adapters", () => {
  it("classifySendError reads responseCode, response and command", () => {
    const err = Object.assign(new Error("Can't send mail - all recipients were rejected: 550 5.1.1 nope"), {
      code: "EENVELOPE",
      responseCode: 550,
      response: "550 5.1.1 nope",
      command: "RCPT TO",
    });
    expect(classifySendError(err)).toEqual({ kind: "hard_bounce", smtpResponse: "550 5.1.1 nope", smtpStatus: "5.1.1" });
  });
  it("classifySendError without a reply is a relay failure", () => {
    const err = Object.assign(new Error("Connection timeout"), { code: "ETIMEDOUT", command: "CONN" });
    expect(classifySendError(err)).toEqual({ kind: "relay_failure", smtpResponse: "ETIMEDOUT: Connection timeout", smtpStatus: null });
  });
  it("classifySendError tolerates anything thrown", () => {
    expect(classifySendError(undefined).kind).toBe("relay_failure");
    expect(classifySendError("a string").kind).toBe("relay_failure");
  });
  it("classifySendInfo: the answer to DATA", () => {
    expect(classifySendInfo({ response: "250 2.0.0 OK id=1" })).toEqual({
      kind: "delivered",
      smtpResponse: "250 2.0.0 OK id=1",
      smtpStatus: "2.0.0",
    });
    expect(classifySendInfo({}).kind).toBe("delivered");
  });
});
