/**
 * Commit subjects of at most 72 characters (docs/contributing.md, "Commits"): a subject says what
 * changed in one line that `git log --oneline` shows whole; figures, measurements and reasons belong
 * in the body. Two uses:
 *
 *   node --import tsx scripts/check-commit-subjects.ts [--repo <dir>] [--baseline <rev>]
 *       every commit after the baseline (a step of `npm test`); exits 1 naming each long subject
 *   node --import tsx scripts/check-commit-subjects.ts --message-file <file>
 *       one commit message before it is made (`.githooks/commit-msg`); exits 1 when its subject is long
 *
 * The history up to BASELINE has longer subjects and stays as it is. A clone may not hold the whole
 * history: when the baseline is beyond a shallow clone's history, every commit `git log` can see is
 * newer than it, so those are checked, with a note; when the baseline is not in a full history at
 * all (another repository), or there is no git work tree (an unpacked archive), the check passes
 * with a note. A long subject that reached the main branch cannot be reworded there without
 * rewriting shared history: move BASELINE to that commit instead.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const MAX_SUBJECT_LENGTH = 72;

/**
 * The last commit whose subject was not checked: "Commit subjects: the baseline moves to a long
 * subject merged from a branch" (74 characters, made before this clone enabled the hook).
 */
export const BASELINE = "453690d0ecc3a94a410ca476a79f613dceae2c2c";

/** A subject's length as a reader counts it: characters (code points), not UTF-16 units or bytes. */
export const subjectLength = (subject: string): number => [...subject].length;

/**
 * The subject of a commit message as git will record it (`%s`): what follows the scissors line of
 * `git commit --verbose` (the diff), comment lines and leading blank lines dropped, then the first
 * paragraph with its lines joined by spaces.
 */
export function subjectOfMessage(message: string, commentChar = "#"): string {
  const all = message.split(/\r?\n/);
  const scissors = all.findIndex((line) => line.startsWith(`${commentChar} `) && line.includes(" >8 "));
  const lines = (scissors < 0 ? all : all.slice(0, scissors)).filter((line) => !line.startsWith(commentChar));
  const first = lines.findIndex((line) => line.trim() !== "");
  if (first < 0) return "";
  const paragraph: string[] = [];
  for (const line of lines.slice(first)) {
    if (line.trim() === "") break;
    paragraph.push(line.trim());
  }
  return paragraph.join(" ");
}

export interface LongSubject {
  commit: string;
  subject: string;
  length: number;
}

export interface HistoryCheck {
  /** How many commits were checked. */
  checked: number;
  long: LongSubject[];
  /** Why fewer commits than "all after the baseline" were checked, when that is so. */
  note?: string;
}

function git(repo: string, args: string[]): string | undefined {
  try {
    return execFileSync("git", ["-C", repo, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return undefined;
  }
}

/** The commits after `baseline` that `git log` can see in `repo`, and those whose subject is too long. */
export function checkHistory(repo: string, baseline = BASELINE): HistoryCheck {
  if (git(repo, ["rev-parse", "--is-inside-work-tree"])?.trim() !== "true") {
    return { checked: 0, long: [], note: "not inside a git work tree: no history to check" };
  }
  if (git(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]) === undefined) {
    return { checked: 0, long: [], note: "no commit yet" };
  }
  let range = [`${baseline}..HEAD`];
  let note: string | undefined;
  if (git(repo, ["rev-parse", "--verify", "--quiet", `${baseline}^{commit}`]) === undefined) {
    if (git(repo, ["rev-parse", "--is-shallow-repository"])?.trim() !== "true") {
      return { checked: 0, long: [], note: `the baseline ${baseline.slice(0, 12)} is not in this history: nothing to check` };
    }
    range = ["HEAD"];
    note = `the baseline ${baseline.slice(0, 12)} is beyond this shallow clone's history: checked every commit git log can see`;
  }
  const log = git(repo, ["log", "--format=%H%x1f%s%x1e", ...range]) ?? "";
  const commits = log
    .split("\x1e")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const [commit = "", subject = ""] = entry.split("\x1f");
      return { commit, subject };
    });
  const long = commits
    .map(({ commit, subject }) => ({ commit, subject, length: subjectLength(subject) }))
    .filter((c) => c.length > MAX_SUBJECT_LENGTH);
  return note === undefined ? { checked: commits.length, long } : { checked: commits.length, long, note };
}

function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

function main(args: string[]): number {
  const messageFile = option(args, "--message-file");
  if (messageFile !== undefined) {
    const subject = subjectOfMessage(readFileSync(messageFile, "utf8"));
    const length = subjectLength(subject);
    if (length <= MAX_SUBJECT_LENGTH) return 0;
    console.error(`commit subject: ${length} characters, at most ${MAX_SUBJECT_LENGTH}:\n  ${subject}`);
    console.error('Shorten the first line; put figures, measurements and reasons in the body (docs/contributing.md, "Commits").');
    return 1;
  }
  const baseline = option(args, "--baseline") ?? BASELINE;
  const result = checkHistory(option(args, "--repo") ?? process.cwd(), baseline);
  if (result.note) console.log(`commit subjects: ${result.note}`);
  if (result.long.length === 0) {
    console.log(`commit subjects: ${result.checked} checked, each at most ${MAX_SUBJECT_LENGTH} characters`);
    return 0;
  }
  console.error(`commit subjects: ${result.long.length} of ${result.checked} longer than ${MAX_SUBJECT_LENGTH} characters:`);
  for (const c of result.long) console.error(`  ${c.commit.slice(0, 12)} (${c.length}): ${c.subject}`);
  console.error(
    "Reword them before they are merged (git rebase -i, `reword`), figures in the body; a long subject already on the main branch: move BASELINE in scripts/check-commit-subjects.ts to it.",
  );
  return 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
