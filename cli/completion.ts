/**
 * `rb completion bash|zsh|fish`: shell completion scripts made from the command table, so they offer
 * exactly the commands, arguments and options this rb has and cannot drift from it. Each script does
 * the same: it collects the words typed so far (leaving out options, and the value after an option
 * that takes one), then offers what may come next: a command word, one of an argument's listed
 * words (`succeeded|failed`), a help topic, or, after a `-`, the options of the command typed.
 * Nothing is asked of the server while completing.
 */
import { type Command, groupCommands, optionsOf } from "./command.ts";
import { topics } from "./help.ts";
import { GLOBAL_OPTIONS, optionSpec } from "./options.ts";

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

interface Offer {
  word: string;
  description: string;
}

/** After `count` typed words that read `words` (then anything, when `open`), offer these. */
interface State {
  count: number;
  words: string;
  open: boolean;
  offers: Offer[];
}

interface OptionOffer extends Offer {
  short?: string;
  takesValue: boolean;
}

interface Model {
  /** Options that take a value: the word after one is its value, not a command word. */
  valueOptions: string[];
  states: State[];
  /** Each command's options, longest command first, and last the options of no command (global). */
  options: { words: string; offers: OptionOffer[] }[];
}

export function completionScript(shell: Shell, commands: readonly Command[]): string {
  const model = modelOf(commands);
  if (shell === "bash") return bashScript(model);
  if (shell === "zsh") return zshScript(model);
  return fishScript(model);
}

function modelOf(commands: readonly Command[]): Model {
  for (const word of commands.flatMap((c) => [...c.words, ...c.args.flatMap((a) => a.choices ?? [])]))
    if (!/^[a-z][a-z0-9-]*$/.test(word)) throw new Error(`"${word}" cannot be completed safely: command words are [a-z0-9-]`);
  const firstWords = [...new Set(commands.map((c) => c.words[0]!))];
  const describeFirst = (word: string): string => {
    const group = groupCommands(word, commands);
    return group.length ? `${group.map((c) => c.words[1]).join(", ")}` : commands.find((c) => c.words[0] === word)!.summary;
  };
  const states: State[] = [
    { count: 0, words: "", open: false, offers: firstWords.map((w) => ({ word: w, description: describeFirst(w) })) },
  ];
  for (const word of firstWords) {
    const group = groupCommands(word, commands);
    if (group.length) {
      const offers = group.map((c) => ({ word: c.words[1]!, description: c.summary }));
      states.push({ count: 1, words: word, open: false, offers });
      states.push({ count: 2, words: `help ${word}`, open: false, offers });
    }
  }
  states.push({
    count: 1,
    words: "help",
    open: false,
    offers: topics(commands).map((t) => ({
      word: t,
      description: t === "environment" ? "Variables, and what wins over what" : describeFirst(t),
    })),
  });
  for (const c of commands) {
    c.args.forEach((a, i) => {
      if (a.choices)
        states.push({
          count: c.words.length + i,
          words: c.words.join(" "),
          open: i > 0,
          offers: a.choices.map((w) => ({ word: w, description: a.name })),
        });
    });
  }
  const optionOffers = (names: readonly string[]): OptionOffer[] =>
    names.map(optionSpec).map((s) => ({
      word: `--${s.name}`,
      description: s.description,
      takesValue: s.value !== undefined,
      ...(s.short ? { short: s.short } : {}),
    }));
  const options = [...commands]
    .sort((a, b) => b.words.length - a.words.length)
    .map((c) => ({ words: c.words.join(" "), offers: optionOffers(optionsOf(c)) }));
  options.push({ words: "", offers: optionOffers(GLOBAL_OPTIONS) });
  const valueOptions = [...new Set(options.flatMap((o) => o.offers.filter((x) => x.takesValue).map((x) => x.word)))];
  return { valueOptions, states, options };
}

/** A case label of bash and zsh matching "<count>|<typed words>". */
const stateLabel = (s: State) => `"${s.count}|${s.words}${s.open ? " " : ""}"${s.open ? "*" : ""}`;
/** A case label matching the typed words of a command and of anything after them. */
const commandLabel = (words: string) => (words ? `"${words}" | "${words} "*` : "*");
const singleQuoted = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

function bashScript(m: Model): string {
  const values = m.valueOptions.join("|");
  return `# bash completion for rb, printed by \`rb completion bash\` from rb's command table.
# Load it with: eval "$(rb completion bash)"   (or save it as ~/.local/share/bash-completion/completions/rb)
_rb_completion() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
  case $prev in
    ${values}) return 0 ;;
  esac
  local -a typed=()
  local i skip=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    if ((skip)); then
      skip=0
      continue
    fi
    case \${COMP_WORDS[i]} in
      ${values}) skip=1 ;;
      -*) ;;
      *) typed+=("\${COMP_WORDS[i]}") ;;
    esac
  done
  local offer=""
  if [[ $cur == -* ]]; then
    case "\${typed[*]}" in
${m.options.map((o) => `      ${commandLabel(o.words)}) offer=${singleQuoted(o.offers.map((x) => x.word).join(" "))} ;;`).join("\n")}
    esac
  else
    case "\${#typed[@]}|\${typed[*]}" in
${m.states.map((s) => `      ${stateLabel(s)}) offer=${singleQuoted(s.offers.map((x) => x.word).join(" "))} ;;`).join("\n")}
    esac
  fi
  mapfile -t COMPREPLY < <(compgen -W "$offer" -- "$cur")
}
complete -F _rb_completion rb
`;
}

/** `word:description` items of zsh's `_describe`, each single-quoted. */
const zshItems = (offers: Offer[]) => offers.map((o) => singleQuoted(`${o.word}:${o.description}`)).join(" ");

function zshScript(m: Model): string {
  const values = m.valueOptions.join("|");
  return `#compdef rb
# zsh completion for rb, printed by \`rb completion zsh\` from rb's command table.
# Load it with: source <(rb completion zsh)   (after compinit; or save it as _rb in a folder of $fpath)
_rb() {
  local cur=\${words[CURRENT]} prev=\${words[CURRENT-1]}
  case $prev in
    ${values}) return 0 ;;
  esac
  local -a typed offer
  local i skip=0
  for ((i = 2; i < CURRENT; i++)); do
    if ((skip)); then
      skip=0
      continue
    fi
    case \${words[i]} in
      ${values}) skip=1 ;;
      -*) ;;
      *) typed+=("\${words[i]}") ;;
    esac
  done
  if [[ $cur == -* ]]; then
    case "\${typed[*]}" in
${m.options.map((o) => `      ${commandLabel(o.words)}) offer=(${zshItems(o.offers)}) ;;`).join("\n")}
    esac
    _describe -t options 'rb option' offer
  else
    case "\${#typed[@]}|\${typed[*]}" in
${m.states.map((s) => `      ${stateLabel(s)}) offer=(${zshItems(s.offers)}) ;;`).join("\n")}
    esac
    (( \${#offer} )) && _describe -t commands 'rb command' offer
  fi
}
if [[ \${funcstack[1]} == _rb ]]; then
  _rb "$@"
else
  compdef _rb rb
fi
`;
}

function fishScript(m: Model): string {
  const lines = [
    `# fish completion for rb, printed by \`rb completion fish\` from rb's command table.`,
    `# Load it with: rb completion fish | source   (or save it as ~/.config/fish/completions/rb.fish)`,
    `function __rb_typed --description 'The words of the rb command line so far, without options and their values'`,
    `    set -l skip 0`,
    `    for token in (commandline -opc)[2..-1]`,
    `        if test $skip = 1`,
    `            set skip 0`,
    `            continue`,
    `        end`,
    `        switch $token`,
    `            case ${m.valueOptions.join(" ")}`,
    `                set skip 1`,
    `            case '-*'`,
    `            case '*'`,
    `                echo $token`,
    `        end`,
    `    end`,
    `end`,
    `function __rb_after --argument-names count pattern --description 'COUNT words typed, matching PATTERN'`,
    `    set -l typed (__rb_typed)`,
    `    test (count $typed) -eq $count; and string match -q -- "$pattern" "$typed"`,
    `end`,
    `function __rb_in --argument-names command --description 'The words typed are COMMAND, then maybe its arguments'`,
    `    set -l typed (__rb_typed)`,
    `    string match -q -- "$command" "$typed"; or string match -q -- "$command *" "$typed"`,
    `end`,
    `complete -c rb -f`,
  ];
  for (const s of m.states) {
    const pattern = `${s.words}${s.open ? " *" : ""}`;
    for (const o of s.offers)
      lines.push(`complete -c rb -n ${singleQuoted(`__rb_after ${s.count} "${pattern}"`)} -a ${o.word} -d ${singleQuoted(o.description)}`);
  }
  for (const c of m.options) {
    const condition = c.words ? ` -n ${singleQuoted(`__rb_in "${c.words}"`)}` : "";
    for (const o of c.offers) {
      if (c.words && m.options.at(-1)!.offers.some((g) => g.word === o.word)) continue; // global: offered everywhere below
      lines.push(
        `complete -c rb${condition}${o.short ? ` -s ${o.short}` : ""} -l ${o.word.slice(2)}${o.takesValue ? " -r" : ""} -d ${singleQuoted(o.description)}`,
      );
    }
  }
  return `${lines.join("\n")}\n`;
}
