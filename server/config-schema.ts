/**
 * What the configuration is made of. The services read environment variables only; each variable
 * belongs to one section: the platform's (server/config.ts) or a service's
 * (`handlers/<service>/config.ts`). A section is a table of variables, each a zod schema documented
 * once with `variable()`: what it does, its default as an operator reads it, whether its value is a
 * secret, where `.env.example` lists it. `readConfig` (server/config.ts) parses sections together
 * and reports every bad variable at once; `npm run docs:config` writes docs/configuration.md and
 * `.env.example` from the same tables, so the reference says what the code does.
 */
import { z } from "zod";
import type { PlatformValues } from "./config.ts";

/**
 * Where `.env.example` lists a variable: what every production deployment sets, what hardens it,
 * what real email needs; any other variable is listed, commented out, under "optional".
 */
export type EnvGroup = "production" | "security" | "email";

export interface VariableDoc {
  /** What the variable does, in sentences: docs/configuration.md's cell and `.env.example`'s comment. */
  description: string;
  /** The default as an operator reads it, where the schema's own default does not say it (derived, or unset). */
  defaultText?: string;
  /** The value is or holds a secret: never echoed in an error, never given a sample value. */
  secret?: boolean;
  envGroup?: EnvGroup;
  /** The value `.env.example` shows (else the default). */
  example?: string;
}

const variableDocs = z.registry<VariableDoc>();

/** One environment variable: its schema (the parse, the checks, the default) and its documentation. */
export function variable<T extends z.ZodType>(schema: T, doc: VariableDoc): T {
  const described = schema.describe(doc.description);
  variableDocs.add(described, doc);
  return described;
}

/** The documentation `variable()` gave a schema. */
export function docOf(schema: z.core.$ZodType): VariableDoc | undefined {
  return variableDocs.get(schema);
}

// --- Kinds of value, shared by the sections. ---

export const port = z.coerce.number().int().min(0).max(65535);
export const seconds = z.coerce.number().int().min(1);
/** A retention period: 0 (delete as soon as a row stops mattering) up to ten years. */
export const retentionSeconds = z.coerce
  .number()
  .int()
  .min(0)
  .max(10 * 365 * 24 * 3600);
/** `true` or `false`, read as a boolean. */
export const flag = (fallback: "true" | "false") =>
  z
    .enum(["true", "false"])
    .default(fallback)
    .transform((v) => v === "true");

// --- Sections. ---

/** What a section's variables parse to. */
export type Parsed<Shape extends z.ZodRawShape> = z.output<z.ZodObject<Shape>>;

/** Names the variable at fault and why; every report is listed with every other bad variable. */
export type Report = (variable: string, message: string) => void;

/**
 * A rule between variables (the section's own, and the platform's). It is checked when each of
 * the variables it names is valid on its own, so a start reports every bad variable and every
 * broken rule at once, and a rule never reads a value that did not parse.
 */
export interface ConfigRule<Values> {
  readonly variables: ReadonlyArray<keyof Values & string>;
  check(values: Values, report: Report): void;
}

/** What a rule of the section whose variables are `Shape` reads: the section's values and the platform's. */
export type RuleValues<Shape extends z.ZodRawShape> = Parsed<Shape> & PlatformValues;

/**
 * The common rule: one variable at fault, the first of `variables` (the one an operator changes to
 * keep the rule), reported with the message `problem` gives; a rule that holds gives none (false).
 * `Values` is given, `rule<RuleValues<typeof emailVariables>>(…)`: inside `defineSection`'s
 * argument the compiler cannot infer it yet.
 */
export function rule<Values>(
  variables: readonly [keyof Values & string, ...Array<keyof Values & string>],
  problem: (values: Values) => string | false | undefined,
): ConfigRule<Values> {
  return {
    variables,
    check(values, report) {
      const message = problem(values);
      if (message) report(variables[0], message);
    },
  };
}

export interface ConfigSection<Shape extends z.ZodRawShape = z.ZodRawShape, Values = Parsed<Shape>> {
  /** docs/configuration.md's heading for the section, and the sentence under it. */
  readonly title: string;
  readonly summary: string;
  readonly variables: Shape;
  /** As kept: defineSection checked the names and the values' type; readConfig gives the values. */
  readonly rules?: ReadonlyArray<{ readonly variables: readonly string[]; check(values: never, report: Report): void }>;
  /** Values derived once every variable and rule passed (a default that depends on another variable). */
  finish?(values: Parsed<Shape>): Values;
}

export function defineSection<Shape extends z.ZodRawShape, Values = Parsed<Shape>>(
  section: Omit<ConfigSection<Shape, Values>, "rules"> & { rules?: ReadonlyArray<ConfigRule<RuleValues<Shape>>> },
): ConfigSection<Shape, Values> {
  return section;
}

/** What a section gives the code: its variables, parsed, and what `finish` derived. */
export type SectionValues<S> = S extends ConfigSection<z.ZodRawShape, infer Values> ? Values : never;
