/**
 * The options `rb` knows: what each takes and how its value is checked. A value is checked when the
 * command line is read, before the command runs, so a bad one is a usage error (exit 2) and no request
 * is ever made with it (X-CLI-1). Commands read the checked values from `Context.options`.
 */
import { DEFAULT_SERVER } from "./context.ts";
import { UsageError } from "./errors.ts";

/** A checked option value: the text given, a number for numeric options, `true` for a flag. */
export type OptionValue = string | number | boolean;

export interface OptionSpec {
  name: string;
  short?: string;
  /** How usage shows the value (`--page N`); absent for a flag, which takes none. */
  value?: string;
  description: string;
  /** Turns the given text into the value commands read, or throws a UsageError. */
  parse?: (raw: string) => OptionValue;
}

/** A whole number from 1 to `max`, as the API's 1-based paging takes it. */
const wholeNumber =
  (name: string, max: number) =>
  (raw: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1 || n > max)
      throw new UsageError(`--${name} must be a whole number from 1 to ${max}, not "${raw}".`);
    return n;
  };

/** The API's page numbers and page sizes (`PageQuery` in the contract). */
export const MAX_PAGE = 1_000_000;
export const MAX_PAGE_SIZE = 100;

export const OPTIONS: readonly OptionSpec[] = [
  {
    name: "server",
    value: "URL",
    description: `The service (default: $RB_SERVER, else the server of the last login, else ${DEFAULT_SERVER}).`,
  },
  { name: "json", description: "Machine-readable output on stdout (tokens are never printed)." },
  { name: "help", short: "h", description: "Show help for the command." },
  { name: "version", description: "Show the version of rb." },
  { name: "email", value: "E", description: "The account's email; asked for on a terminal when absent." },
  { name: "device", description: "Sign in in a browser with an identity service's device code (OAuth 2.0 device grant)." },
  { name: "issuer", value: "URL", description: "The identity service for --device (default: $RB_ISSUER)." },
  { name: "client-id", value: "ID", description: "The identity application's client id for --device (default: $RB_CLIENT_ID)." },
  {
    name: "scope",
    value: "S",
    description: "The scopes --device asks for (default: openid offline_access, plus repository with a resource).",
  },
  { name: "resource", value: "URI", description: "The API the tokens of --device are for, RFC 8707 (default: $RB_RESOURCE, else none)." },
  { name: "description", value: "D", description: "The repository's description." },
  { name: "default-branch", value: "B", description: "The repository's default branch (the service's default: main)." },
  { name: "ref", value: "R", description: "The branch, tag or commit to build (default: the repository's default branch)." },
  { name: "page", value: "N", description: `The page to show, from 1 (at most ${MAX_PAGE}).`, parse: wholeNumber("page", MAX_PAGE) },
  {
    name: "page-size",
    value: "N",
    description: `Items per page, 1 to ${MAX_PAGE_SIZE} (the service's default: 20).`,
    parse: wholeNumber("page-size", MAX_PAGE_SIZE),
  },
];

/** Options every command takes. */
export const GLOBAL_OPTIONS: readonly string[] = ["server", "json", "help", "version"];

export function optionSpec(name: string): OptionSpec {
  const spec = OPTIONS.find((o) => o.name === name);
  if (!spec) throw new Error(`rb has no option --${name}`);
  return spec;
}

/** `--page N` or `--json`, as usage lines show an option. */
export const optionUsage = (spec: OptionSpec) => (spec.value ? `--${spec.name} ${spec.value}` : `--${spec.name}`);
