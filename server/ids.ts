/**
 * UUIDv7 (RFC 9562 §5.7): the time-ordered row ids of every service (webhook deliveries and
 * attempts, identity's grants, codes and refresh tokens, email's messages, copies and events).
 * Time-ordered ids are appended at the end of their primary-key B-trees instead of at random
 * places, which keeps each commit's pages few and lets the retention purge delete the oldest from
 * whole pages.
 */
import { randomUUID } from "node:crypto";

/**
 * A UUIDv7 generator with its own ordering state: every id it makes sorts after the ones it made
 * before, whatever time it is given. The process uses one (`uuidv7`), so all its services' ids are
 * ordered among themselves; a test makes its own, whose state no other code of the process touches.
 */
export function uuidv7Generator(): (now?: number) => string {
  let lastMs = 0;
  let seq = 0;
  /** The timestamp's two groups, formatted once per millisecond (several ids share one). */
  let prefix = "";
  return (now = Date.now()) => {
    // A time that is not a number (a malformed date parsed) must not stick in `lastMs` for every later id.
    if (!Number.isFinite(now)) now = Date.now();
    // A 12-bit counter in rand_a keeps ids of one millisecond ordered (RFC 9562 §6.2, method 1).
    if (now <= lastMs) {
      seq = (seq + 1) & 0xfff;
      if (seq === 0) lastMs++;
      now = lastMs;
    } else {
      lastMs = now;
      seq = 0;
    }
    if (seq === 0) {
      const ts = now.toString(16).padStart(12, "0");
      prefix = `${ts.slice(0, 8)}-${ts.slice(8, 12)}-7`;
    }
    // randomUUID draws from a cached entropy pool: its variant and 62 random bits are reused as is.
    return `${prefix}${seq.toString(16).padStart(3, "0")}-${randomUUID().slice(19)}`;
  };
}

/** The process's generator. */
export const uuidv7 = uuidv7Generator();

/**
 * The smallest UUIDv7 of millisecond `ms`: every id made before `ms` sorts below it as text (the
 * timestamp leads, in fixed-width lower-case hex), so `id < uuidv7Floor(t)` is a primary-key range.
 */
export function uuidv7Floor(ms: number): string {
  const ts = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
  return `${ts.slice(0, 8)}-${ts.slice(8, 12)}-7000-8000-000000000000`;
}
