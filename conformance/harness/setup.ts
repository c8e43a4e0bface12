/**
 * vitest's setup file (vitest.config.ts `setupFiles`), acting on conformance files only: a failed
 * conformance test's message ends with the error answers the service gave it during the test
 * (answers.ts), so `expected 400 to be 201` comes with the 400's problem detail. Project tests
 * (test/) are left as they are.
 */
import { beforeEach } from "vitest";
import { answersNote, listenForAnswers, resetAnswers } from "./answers.ts";

const CONFORMANCE_FILE = /[/\\]conformance[/\\]/;

beforeEach((ctx) => {
  if (!CONFORMANCE_FILE.test(ctx.task.file.filepath)) return;
  listenForAnswers();
  resetAnswers();
  ctx.onTestFailed(({ task }) => {
    const note = answersNote();
    if (!note) return;
    for (const error of task.result?.errors ?? []) {
      const message = error.message ?? "";
      error.message = message + note;
      // The reports print the stack, which begins with the message: the note goes right after it.
      if (error.stack?.includes(message)) error.stack = error.stack.replace(message, () => message + note);
      else if (error.stack) error.stack += note;
    }
  });
});
