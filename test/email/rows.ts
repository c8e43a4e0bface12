/** Message and copy rows as the email service stores them, for tests that write the tables directly. */

/** An accepted message with a text body, one per `id`; `trackClicks` as its sender asked. */
export const messageRow = (o: { id: string; status: string; at: string; trackClicks?: boolean }) => ({
  id: o.id,
  api_key_id: "k",
  from_address: "from@example.com",
  subject: "Hello",
  text: "Hi",
  reply_to: "[]",
  headers: "{}",
  tags: "[]",
  metadata: "{}",
  track_opens: false,
  track_clicks: o.trackClicks ?? false,
  test_mode: false,
  status: o.status,
  created_at: o.at,
  updated_at: o.at,
});

/** The message's first (and only) copy, to to@example.com over SMTP, with its tokens as given. */
export const copyRow = (o: {
  id: string;
  emailId: string;
  status: string;
  at: string;
  messageId: string;
  returnToken: string;
  openToken: string;
  nextAttemptAt?: string;
}) => ({
  id: o.id,
  email_id: o.emailId,
  position: 0,
  address: "to@example.com",
  address_key: "to@example.com",
  status: o.status,
  transport: "smtp",
  message_id: o.messageId,
  return_token: o.returnToken,
  open_token: o.openToken,
  ...(o.nextAttemptAt ? { next_attempt_at: o.nextAttemptAt } : {}),
  updated_at: o.at,
});
