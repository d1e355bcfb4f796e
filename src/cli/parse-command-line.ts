import { type ParseArgsConfig, parseArgs } from "node:util";
import { didYouMean } from "../config/did-you-mean.ts";
import type { CliCommand, CliInput } from "./cli-command.ts";
import { COMMON_OPTIONS, cliUsage } from "./cli-usage.ts";

/** What the command line asks for; nothing has run yet. */
export type CommandLine =
  | { kind: "run"; command: CliCommand; path: string[]; input: CliInput }
  /** `--help`, `-h` or `help [command]`: print `usage` on stdout, exit 0. */
  | { kind: "help"; usage: string }
  /** `--version`: print the version on stdout, exit 0. */
  | { kind: "version" }
  /** Anything not declared: print `message` and `usage` on stderr, exit 2, start nothing. */
  | { kind: "refused"; message: string; usage: string };

/**
 * Reads `argv` (the words after `modelswap`) against the command tree: the command words first, then that
 * command's options with node:util's parseArgs, strict: an unknown option, a value where none is taken,
 * or more positional arguments than the command takes is refused with its usage. `--help` wins over
 * everything else on the line, `--version` over running.
 */
export function parseCommandLine(argv: readonly string[], root: CliCommand): CommandLine {
  let command = root;
  const path = [root.name];
  let rest = [...argv];
  while (command.commands !== undefined) {
    const [word, ...after] = rest;
    if (word === undefined && command.defaultCommand !== undefined) {
      rest = [command.defaultCommand];
      continue;
    }
    if (word === undefined)
      return refused(command, path, `name a command: ${command.commands.map((c) => c.name).join(", ")}`);
    if (word.startsWith("-")) break;
    const next = command.commands.find((c) => c.name === word);
    if (next === undefined)
      return refused(
        command,
        path,
        `unknown command '${word}'${meant(
          word,
          command.commands.map((c) => c.name),
        )}`,
      );
    command = next;
    path.push(word);
    rest = after;
  }

  const max = command.maxPositionals ?? 0;
  const config: ParseArgsConfig = {
    args: rest,
    options: { ...command.options, ...COMMON_OPTIONS },
    strict: true,
    allowPositionals: max > 0,
  };
  let parsed: ReturnType<typeof parseArgs<typeof config>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    const unknown = /^Unknown option '(-{1,2}[^']+)'/.exec(error instanceof Error ? error.message : "");
    const known = Object.keys(config.options ?? {}).map((name) => `--${name}`);
    return refused(command, path, `${firstSentence(error)}${unknown ? meant(unknown[1]!, known) : ""}`);
  }
  const { values, positionals } = parsed;
  if (values.help === true) return { kind: "help", usage: cliUsage(command, path) };
  if (values.version === true) return { kind: "version" };
  if (command.commands !== undefined)
    return refused(command, path, `name a command: ${command.commands.map((c) => c.name).join(", ")}`);
  if (positionals.length > max) {
    const extra = positionals.slice(max).map((p) => `'${p}'`);
    const most = `at most ${max} argument${max === 1 ? "" : "s"} (${command.args})`;
    return refused(command, path, `unexpected argument ${extra.join(", ")}: it takes ${most}`);
  }
  if (command.isHelp === true) return parseCommandLine([...positionals, "--help"], root);
  return { kind: "run", command, path, input: { values, positionals } };
}

function refused(command: CliCommand, path: readonly string[], message: string): CommandLine {
  return { kind: "refused", message: `${path.join(" ")}: ${message}`, usage: cliUsage(command, path) };
}

/** ": did you mean '--host'?" for a near miss (`--hots`), else nothing. */
function meant(word: string, known: readonly string[]): string {
  const guess = didYouMean(word, known);
  return guess === undefined ? "" : `: did you mean '${guess}'?`;
}

/** parseArgs's message without its advice ("Unknown option '--x'. To specify a positional …"). */
function firstSentence(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const first = text.split(/\.(?:\s|$)/)[0] ?? text;
  return first.charAt(0).toLowerCase() + first.slice(1);
}
