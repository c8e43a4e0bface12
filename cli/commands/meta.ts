/** `rb help`, `rb version`, `rb completion`: commands about rb itself, which need no server and no config file. */
import type { Command } from "../command.ts";
import { completionScript, type Shell } from "../completion.ts";
import type { LocalContext } from "../context.ts";
import { UsageError } from "../errors.ts";
import { globalHelp, topicHelp, topics } from "../help.ts";
import { json } from "../output.ts";
import { VERSION } from "../version.ts";

export async function help(ctx: LocalContext, commands: readonly Command[]): Promise<void> {
  if (ctx.args.length === 0) return ctx.io.out(globalHelp(commands));
  const text = topicHelp(ctx.args, commands);
  if (!text) {
    throw new UsageError(
      `No help topic "${ctx.args.join(" ")}". Topics: ${topics(commands).join(", ")}, and each command (\`rb help repo list\`).`,
    );
  }
  ctx.io.out(text);
}

export async function version(ctx: LocalContext): Promise<void> {
  ctx.io.out(ctx.json ? json({ version: VERSION }) : `rb ${VERSION}`);
}

/** The shell is one of `completion`'s listed words: the parser checked it. */
export async function completion(ctx: LocalContext, commands: readonly Command[]): Promise<void> {
  ctx.io.out(completionScript(ctx.args[0] as Shell, commands).trimEnd());
}
