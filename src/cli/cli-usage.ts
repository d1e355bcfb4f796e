import type { CliCommand, CliOption } from "./cli-command.ts";

/** The options every command has. */
export const COMMON_OPTIONS: Record<string, CliOption> = {
  help: { type: "boolean", short: "h", description: "show this help and exit" },
  version: { type: "boolean", description: "print modelswap's version and exit" },
};

/** The usage of `command`, reached by `path` (["modelswap", "config", "check"]): what `--help` prints. */
export function cliUsage(command: CliCommand, path: readonly string[]): string {
  const name = path.join(" ");
  const lines: string[] = [];
  if (command.commands !== undefined) {
    const what = command.defaultCommand === undefined ? "<command>" : "[command]";
    lines.push(`Usage: ${name} ${what} [options]`);
    if (command.description !== undefined) lines.push("", command.description);
    lines.push("", "Commands:", ...table(leaves(command, [])));
  } else {
    lines.push(`Usage: ${[name, command.args].filter(Boolean).join(" ")} [options]`);
    if (command.description !== undefined) lines.push("", command.description);
  }
  const options = { ...command.options, ...COMMON_OPTIONS };
  lines.push(
    "",
    "Options:",
    ...table(Object.entries(options).map(([n, o]) => [optionSpelling(n, o), o.description])),
  );
  return lines.join("\n");
}

/** Every runnable command under a group, as `config check [file]`, with its summary. */
function leaves(group: CliCommand, prefix: readonly string[]): [string, string][] {
  return (group.commands ?? []).flatMap((c): [string, string][] => {
    const path = [...prefix, c.name];
    if (c.commands !== undefined) return leaves(c, path);
    const summary = c.name === group.defaultCommand ? `${c.summary} (default)` : c.summary;
    return [[[...path, c.args].filter(Boolean).join(" "), summary]];
  });
}

function optionSpelling(name: string, option: CliOption): string {
  const value =
    option.multiple === true ? ` <${option.valueName ?? "value"}>…` : ` <${option.valueName ?? "value"}>`;
  const long = option.type === "string" ? `--${name}${value}` : `--${name}`;
  return option.short === undefined ? long : `-${option.short}, ${long}`;
}

function table(rows: readonly [string, string][]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length)) + 3;
  return rows.map(([left, right]) => `  ${left.padEnd(width)}${right}`);
}
