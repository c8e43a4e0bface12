/**
 * API keys, messages and their per-recipient copies (the outbox of outbound mail), the message
 * timeline, tracked links, the suppression list. Times are ISO 8601 UTC strings of one fixed width
 * (24 characters, millisecond precision), so they compare as text on both databases.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const messages: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("api_keys", (t) => {
      t.string("id", 36).primary();
      t.string("name", 128).notNullable();
      t.string("prefix", 16).notNullable();
      t.string("key_hash", 64).notNullable().unique(); // SHA-256 hex of the whole key
      t.string("permission", 16).notNullable(); // full_access | sending_access
      t.string("mode", 8).notNullable(); // live | test
      t.string("created_at", 24).notNullable();
      t.string("last_used_at", 24);
      t.string("revoked_at", 24);
    });

    await db.schema.createTable("emails", (t) => {
      t.string("id", 36).primary();
      t.string("api_key_id", 36).notNullable();
      t.string("from_address", 254).notNullable();
      t.string("from_name", 256);
      t.text("subject").notNullable();
      t.text("text");
      t.text("html");
      t.text("reply_to").notNullable(); // JSON string[]
      t.text("headers").notNullable(); // JSON object
      t.text("tags").notNullable(); // JSON string[]
      t.text("metadata").notNullable(); // JSON object
      t.boolean("track_opens").notNullable();
      t.boolean("track_clicks").notNullable();
      t.boolean("test_mode").notNullable();
      t.string("status", 16).notNullable(); // derived from the copies (X-EM-6), kept for filtering
      t.string("created_at", 24).notNullable();
      t.string("updated_at", 24).notNullable();
      // listEmails: newest first, optionally by status.
      t.index(["created_at", "id"], "emails_recent");
      t.index(["status", "created_at", "id"], "emails_by_status");
    });

    // Idempotency-Key (X-EM-4), shared by the deployment's keys, remembered 24 hours. The primary
    // key makes two concurrent first uses race to one row, in the transaction that stores the message.
    await db.schema.createTable("idempotency_keys", (t) => {
      t.string("key", 255).primary();
      t.string("request_hash", 64).notNullable();
      t.string("email_id", 36).notNullable().references("id").inTable("emails").onDelete("CASCADE");
      t.string("created_at", 24).notNullable();
    });

    await db.schema.createTable("email_attachments", (t) => {
      t.string("email_id", 36).notNullable().references("id").inTable("emails").onDelete("CASCADE");
      t.integer("position").notNullable();
      t.integer("size").notNullable(); // decoded bytes
      t.string("filename", 255).notNullable();
      t.string("content_type", 255).notNullable();
      t.string("content_id", 255);
      t.text("content").notNullable(); // base64, as received
      t.primary(["email_id", "position"]);
    });

    await db.schema.createTable("email_recipients", (t) => {
      t.string("id", 36).primary(); // the copy
      t.string("email_id", 36).notNullable().references("id").inTable("emails").onDelete("CASCADE");
      t.integer("position").notNullable();
      t.string("address", 254).notNullable(); // as given, sent as given
      t.string("address_key", 254).notNullable(); // normalised (lowercase) for suppression
      t.string("status", 16).notNullable();
      t.string("transport", 16).notNullable(); // simulator | smtp | sink
      t.string("message_id", 300).notNullable().unique(); // RFC 5322 Message-ID of the copy, <...>
      t.string("return_token", 40).notNullable().unique(); // VERP token: bounces+<token>@<bounce domain>
      t.string("open_token", 40).notNullable().unique();
      t.string("bounce_type", 8);
      t.text("error_message");
      t.text("smtp_response");
      t.string("smtp_status", 16);
      t.integer("attempts").notNullable().defaultTo(0);
      // The outbox: due copies have next_attempt_at set; final ones have it null.
      t.string("next_attempt_at", 24);
      t.string("lease_token", 36);
      t.string("lease_expires_at", 24);
      t.string("opened_at", 24);
      t.string("clicked_at", 24);
      t.string("updated_at", 24).notNullable();
      t.unique(["email_id", "position"], { indexName: "email_recipients_order" });
      t.index(["next_attempt_at"], "email_recipients_due");
    });

    await db.schema.createTable("email_links", (t) => {
      t.string("token", 40).primary();
      t.string("recipient_id", 36).notNullable().references("id").inTable("email_recipients").onDelete("CASCADE");
      t.integer("position").notNullable();
      t.text("url").notNullable();
      t.string("clicked_at", 24); // first click (one email.clicked per link and copy)
      t.index(["recipient_id"], "email_links_recipient");
    });

    await db.schema.createTable("email_events", (t) => {
      t.string("id", 36).primary();
      t.string("email_id", 36).notNullable().references("id").inTable("emails").onDelete("CASCADE");
      t.string("recipient_id", 36).notNullable();
      t.string("type", 32).notNullable();
      t.text("data").notNullable(); // JSON: errorMessage, bounceType, smtpStatus, url
      t.string("created_at", 24).notNullable();
      t.index(["email_id", "created_at"], "email_events_timeline");
    });

    await db.schema.createTable("suppressions", (t) => {
      t.string("address_key", 254).primary();
      t.string("address", 254).notNullable();
      t.string("reason", 16).notNullable(); // hard_bounce | complaint | manual
      t.string("email_id", 36);
      t.text("detail");
      t.string("created_at", 24).notNullable();
      t.index(["created_at", "address_key"], "suppressions_recent");
    });
  },
  async down(db: Knex) {
    for (const table of [
      "suppressions",
      "email_events",
      "email_links",
      "email_recipients",
      "email_attachments",
      "idempotency_keys",
      "emails",
      "api_keys",
    ]) {
      await db.schema.dropTableIfExists(table);
    }
  },
};
