/**
 * Reading an SMTP session's message a chunk per turn of the event loop. libuv hands a socket all the
 * bytes it holds in one go (up to 2 MiB a wake-up), and smtp-server scans them for the end of the
 * data there and then: thirty senders of large messages at once held the loop for the sum of their
 * bytes. Pausing the data stream after each chunk and resuming it at the next turn lets the
 * backpressure reach the socket through smtp-server's streams, so each session is read a piece per
 * turn, between timers, other sockets and requests.
 */
import type { Readable } from "node:stream";

/** Paces `stream` (in flowing mode: attach its `data` listener too) to one chunk per turn. */
export function paceReading(stream: Readable): void {
  stream.on("data", () => {
    stream.pause();
    setImmediate(() => stream.resume());
  });
}
