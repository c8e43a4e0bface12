/**
 * Reads the command line into words and options, reporting every mistake in rb's own words (exit 2)
 * rather than `parseArgs`' (which names internals and quotes unevenly). Node's `parseArgs` only
 * splits the arguments into tokens here (`--name=value`, `-h`, `--`); which options exist, which take
 * a value and what a value may be is decided by `options.ts`.
 */
import { parseArgs } from "node:util";
import { UsageError } from "./errors.ts";
import { OPTIONS, type OptionSpec } from "./options.ts";

export interface CommandLine {
  /** The words that are not options: the command's words, then its arguments. */
  words: string[];
  /** Each option given, by name, with its text (`true` for a flag); the last one wins if repeated. */
  given: Map<string, { spec: OptionSpec; raw: string | true; as: string }>;
  /** Options rb does not know, as written (`--bogus`); the caller reports them with the command's usage. */
  unknown: string[];
}

export function readCommandLine(argv: string[]): CommandLine {
  // No option is declared to parseArgs, so it only splits: a flag written `--json=yes` arrives with its
  // value and is reported, and the value of `--page 2` arrives as the next token, which the loop takes.
  const { tokens } = parseArgs({ args: argv, options: {}, allowPositionals: true, strict: false, tokens: true });
  const words: string[] = [];
  const given: CommandLine["given"] = new Map();
  const unknown: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.kind === "positional") words.push(token.value);
    if (token.kind !== "option") continue;
    const spec = OPTIONS.find((o) => (token.rawName.startsWith("--") ? o.name === token.name : o.short === token.name));
    if (!spec) {
      unknown.push(token.rawName);
      continue;
    }
    if (!spec.value) {
      if (token.value !== undefined) throw new UsageError(`${token.rawName} takes no value (given "${token.value}").`);
      given.set(spec.name, { spec, raw: true, as: token.rawName });
      continue;
    }
    let raw = token.value;
    // Without `=`, the value is the next argument: one that is not an option itself.
    if (raw === undefined) {
      const next = tokens[i + 1];
      const text = next && "index" in next ? argv[next.index] : undefined;
      if (text === undefined || next?.kind === "option-terminator" || (text.startsWith("-") && text !== "-"))
        throw new UsageError(
          `${token.rawName} needs a value: ${token.rawName} ${spec.value}` +
            (text?.startsWith("-") ? ` (a value that starts with "-" is written ${token.rawName}=${text}).` : "."),
        );
      raw = text;
      i++;
    }
    given.set(spec.name, { spec, raw, as: token.rawName });
  }
  return { words, given, unknown };
}

/** "Unknown option --bogus.", with the nearest option rb has when the name looks mistyped. */
export function unknownOptionMessage(rawName: string): string {
  const near = OPTIONS.find((o) => editDistance(`--${o.name}`, rawName) <= 2);
  return `Unknown option ${rawName}.${near ? ` Did you mean --${near.name}?` : ""}`;
}

/** Levenshtein distance, for "did you mean" on a mistyped option (`--page_size`, `--jsno`). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}
