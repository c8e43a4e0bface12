/** Reading a secret: from a TTY without echo, or the first line of stdin when piped (for scripts). */
import { createInterface } from "node:readline";

export async function readSecret(prompt: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Promise<string> {
  if (!input.isTTY) {
    const rl = createInterface({ input, terminal: false });
    for await (const line of rl) {
      rl.close();
      return line.replace(/\r$/, "");
    }
    return "";
  }
  output.write(prompt);
  input.setRawMode(true);
  input.resume();
  input.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    let value = "";
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") {
          done();
          return resolve(value);
        }
        if (ch === "\u0003") {
          done();
          return reject(new Error("cancelled"));
        }
        if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
        else value += ch;
      }
    };
    const done = () => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      output.write("\n");
    };
    input.on("data", onData);
  });
}

/** Reading a visible answer (e.g. an email) from a TTY; added for `rb login`. */
export async function readLine(prompt: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Promise<string> {
  const rl = createInterface({ input, output, terminal: Boolean(input.isTTY) });
  try {
    return await new Promise<string>((resolve) => rl.question(prompt, resolve));
  } finally {
    rl.close();
  }
}
