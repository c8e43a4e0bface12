/**
 * A receiving SMTP server for benchmarks, in a process of its own as a real relay would be: accepts
 * every message (250), counts them, and prints the count on each line read from stdin. Prints its
 * port first. Not part of the test run.
 */
import { createInterface } from "node:readline";
import { SMTPServer } from "smtp-server";

let received = 0;
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS"],
  disableReverseLookup: true, // no DNS on loopback
  logger: false,
  size: 20 * 1024 * 1024,
  onData(stream, _session, callback) {
    stream.on("data", () => {});
    stream.on("end", () => {
      received++;
      callback();
    });
  },
});
server.listen(0, "127.0.0.1", () => {
  const address = server.server.address();
  console.log(typeof address === "object" && address ? address.port : 0);
});
createInterface({ input: process.stdin }).on("line", () => console.log(received));
