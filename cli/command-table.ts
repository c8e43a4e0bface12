/**
 * Every command of `rb`, once: its words, arguments and options (`command.ts` says what each field
 * means). The parser, the help and the shell completion scripts are all read from this table, so a
 * command added here is parsed, checked, documented and completed with nothing else to keep in step.
 */
import type { Argument, Command } from "./command.ts";
import * as agent from "./commands/agent.ts";
import * as auth from "./commands/auth.ts";
import * as build from "./commands/build.ts";
import * as meta from "./commands/meta.ts";
import * as repo from "./commands/repo.ts";
import { SHELLS } from "./completion.ts";

const PAGING = ["page", "page-size"];
const arg = (name: string): Argument => ({ name });

export const COMMANDS: readonly Command[] = [
  {
    words: ["login"],
    args: [],
    options: ["email", "device", "issuer", "client-id", "scope", "resource"],
    summary: "Log in; the password is prompted for, or read from stdin when piped.",
    details: [
      "With --device: sign in with an identity service the server trusts, in any browser (OAuth 2.0 device grant).",
      "rb prints an address and a code, waits for the approval, and stores the identity service's tokens for the server;",
      "they are refreshed and revoked at that identity service. --issuer and --client-id (or RB_ISSUER and RB_CLIENT_ID)",
      "name it and its application; --resource (or RB_RESOURCE) the audience the server expects, which also asks for",
      "the scope repository. Example: rb login --device --issuer https://id.example.com --client-id rb-cli",
    ],
    run: auth.login,
  },
  { words: ["logout"], args: [], options: [], summary: "Revoke the session on the server and delete the stored tokens.", run: auth.logout },
  { words: ["whoami"], args: [], options: [], summary: "Show the signed-in user.", credential: "user", run: auth.whoami },
  {
    words: ["auth", "status"],
    args: [],
    options: [],
    summary: "Show the server, and where the user's and the agent's tokens come from (never the tokens).",
    details: [
      "Checks the user token with the server. Exits 1 when there is no token at all, or the user token is refused.",
      "See `rb help environment` for the order in which flags, variables and the config file are read.",
    ],
    run: auth.status,
  },
  { words: ["repo", "list"], args: [], options: PAGING, summary: "List your repositories.", credential: "user", run: repo.list },
  {
    words: ["repo", "create"],
    args: [arg("name")],
    options: ["description", "default-branch"],
    summary: "Create a repository.",
    credential: "user",
    run: repo.create,
  },
  { words: ["repo", "show"], args: [arg("repo")], options: [], summary: "Show one repository.", credential: "user", run: repo.show },
  {
    words: ["build", "queue"],
    args: [arg("repo")],
    options: ["ref"],
    summary: "Queue a build (default ref: the repository's default branch).",
    credential: "user",
    run: build.queue,
  },
  {
    words: ["build", "list"],
    args: [arg("repo")],
    options: PAGING,
    summary: "List a repository's builds.",
    credential: "user",
    run: build.list,
  },
  {
    words: ["agent", "register"],
    args: [arg("name")],
    options: [],
    summary: "Register a build agent and store its token on this machine.",
    credential: "user",
    run: agent.register,
  },
  { words: ["agent", "list"], args: [], options: PAGING, summary: "List your build agents.", credential: "user", run: agent.list },
  {
    words: ["agent", "revoke"],
    args: [arg("id")],
    options: [],
    summary: "Delete an agent; its token stops working at once.",
    credential: "user",
    run: agent.revoke,
  },
  {
    words: ["agent", "poll"],
    args: [],
    options: [],
    summary: "As the agent, claim the next queued build.",
    credential: "agent",
    run: agent.poll,
  },
  {
    words: ["agent", "report"],
    args: [arg("buildId"), { name: "result", choices: agent.BUILD_RESULTS }],
    options: [],
    summary: "As the agent, report a build's result.",
    credential: "agent",
    run: agent.report,
  },
  {
    words: ["help"],
    args: [{ name: "topic", optionalWords: true }],
    options: [],
    summary: "Show help: of a command (`rb help repo list`), a group (`rb help agent`) or `environment`.",
    local: true,
    run: meta.help,
  },
  { words: ["version"], args: [], options: [], summary: "Show the version of rb.", local: true, run: meta.version },
  {
    words: ["completion"],
    args: [{ name: "shell", choices: SHELLS }],
    options: [],
    summary: "Print the shell completion script for bash, zsh or fish.",
    details: [
      'bash: add `eval "$(rb completion bash)"` to ~/.bashrc, or save the script as ~/.local/share/bash-completion/completions/rb',
      "zsh:  add `source <(rb completion zsh)` to ~/.zshrc after compinit, or save the script as _rb in a folder of $fpath",
      "fish: save the script as ~/.config/fish/completions/rb.fish (`rb completion fish > ~/.config/fish/completions/rb.fish`)",
      "The script is made from rb's own command table, so it offers exactly the commands and options of this version.",
    ],
    local: true,
    run: meta.completion,
  },
];
