/**
 * The commit-subject check (scripts/check-commit-subjects.ts, a step of `npm test`, and the
 * `.githooks/commit-msg` hook that `npm run setup` enables): a subject of 72 characters passes and
 * one of 73 fails, counted in characters; only the commits after the baseline count; a shallow
 * clone that does not reach the baseline checks what it can see, and a history without the
 * baseline, or no work tree at all, passes with a note. The hook refuses a real `git commit`.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASELINE, checkHistory, MAX_SUBJECT_LENGTH, subjectLength, subjectOfMessage } from "../../scripts/check-commit-subjects.ts";

const root = join(import.meta.dirname, "../..");
const hooks = join(root, ".githooks");
const ok = "a".repeat(MAX_SUBJECT_LENGTH);
const tooLong = "a".repeat(MAX_SUBJECT_LENGTH + 1);

let scratch = "";
/** git with no user or system configuration of the machine's (no hooks path, no signing). */
const env = () => ({
  ...process.env,
  HOME: scratch,
  XDG_CONFIG_HOME: scratch,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.com",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.com",
});
const git = (repo: string, ...args: string[]) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8", env: env() }).trim();
const commit = (repo: string, subject: string) => {
  git(repo, "commit", "--allow-empty", "--no-verify", "-q", "-m", subject);
  return git(repo, "rev-parse", "HEAD");
};
function newRepo(name: string): string {
  const repo = join(scratch, name);
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  return repo;
}
const cli = (...args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", "scripts/check-commit-subjects.ts", ...args], {
    cwd: root,
    encoding: "utf8",
    env: env(),
  });

describe("commit subjects", () => {
  let repo = "";
  let baseline = "";
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), "commit-subjects-"));
    repo = newRepo("history");
    commit(repo, `${tooLong} before the baseline`);
    baseline = commit(repo, "the baseline");
    commit(repo, ok);
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("a subject is counted in characters, after comments and leading blank lines, its first paragraph joined", () => {
    expect(subjectLength("é".repeat(MAX_SUBJECT_LENGTH))).toBe(MAX_SUBJECT_LENGTH);
    expect(subjectOfMessage("# Please enter the commit message\n\n  Area: what changed  \n\nWhy, with figures.\n")).toBe(
      "Area: what changed",
    );
    expect(subjectOfMessage("First line\nsecond line\n\nbody")).toBe("First line second line");
    expect(subjectOfMessage("Short\n# ------------------------ >8 ------------------------\ndiff --git a/x b/x")).toBe("Short");
    expect(subjectOfMessage("# only comments\n")).toBe("");
  });

  it("the commits after the baseline pass at 72 characters; the long one before it does not count", () => {
    expect(checkHistory(repo, baseline)).toEqual({ checked: 1, long: [] });
  });

  it("a subject of 73 characters after the baseline fails, named with its length, and the command exits 1", () => {
    const bad = commit(repo, tooLong);
    try {
      expect(checkHistory(repo, baseline)).toEqual({ checked: 2, long: [{ commit: bad, subject: tooLong, length: 73 }] });
      const run = cli("--repo", repo, "--baseline", baseline);
      expect(run.status).toBe(1);
      expect(run.stderr).toContain(`${bad.slice(0, 12)} (73): ${tooLong}`);
    } finally {
      git(repo, "reset", "-q", "--hard", "HEAD~1");
    }
    expect(cli("--repo", repo, "--baseline", baseline).status).toBe(0);
  });

  it("a shallow clone that does not reach the baseline checks every commit it can see, and says so", () => {
    const shallow = join(scratch, "shallow");
    execFileSync("git", ["clone", "-q", "--depth", "1", `file://${repo}`, shallow], { env: env() });
    const result = checkHistory(shallow, baseline);
    expect(result).toMatchObject({ checked: 1, long: [] });
    expect(result.note).toMatch(/shallow/);
    commit(shallow, tooLong);
    expect(checkHistory(shallow, baseline).long).toHaveLength(1);
  });

  it("a history without the baseline, and a folder that is no work tree, pass with a note", () => {
    const other = newRepo("other");
    commit(other, tooLong);
    expect(checkHistory(other, baseline)).toMatchObject({ checked: 0, long: [], note: expect.stringMatching(/not in this history/) });
    const plain = join(scratch, "plain");
    mkdirSync(plain);
    const run = cli("--repo", plain);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/not inside a git work tree/);
  });

  it("this repository's commits after the recorded baseline pass", () => {
    const result = checkHistory(root, BASELINE);
    expect(result.long).toEqual([]);
  });

  it("the commit-msg hook refuses a 73-character subject in a real `git commit` and lets 72 through", () => {
    const hooked = newRepo("hooked");
    git(hooked, "config", "core.hooksPath", hooks);
    const refused = spawnSync(
      "git",
      ["-C", hooked, "commit", "--allow-empty", "-q", "-m", tooLong, "-m", "The body may be as long as it likes."],
      {
        encoding: "utf8",
        env: env(),
      },
    );
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("commit subject: 73 characters, at most 72");
    expect(spawnSync("git", ["-C", hooked, "rev-parse", "--verify", "-q", "HEAD"], { env: env() }).status).not.toBe(0);
    git(hooked, "commit", "--allow-empty", "-q", "-m", ok, "-m", `A body line longer than the subject may be: ${tooLong}`);
    expect(git(hooked, "log", "--format=%s")).toBe(ok);
    const message = join(scratch, "MSG");
    writeFileSync(message, `# a comment line longer than the limit: ${tooLong}\n\n${ok}\n`);
    expect(spawnSync(join(hooks, "commit-msg"), [message], { encoding: "utf8", env: env() }).status).toBe(0);
  });
});
