/** One option of a `modelswap` command, besides the `--help` and `--version` every command has. */
export interface CliOption {
  type: "boolean" | "string";
  short?: string;
  /** For a string option: the value's name in the usage (`--host <host>`). */
  valueName?: string;
  /** One line for the usage. */
  description: string;
  /** A string option that may be given more than once (`--host a --host b`): its value is a list. */
  multiple?: boolean;
}

/** What a command's `run` gets: its options and positional arguments, already checked. */
export interface CliInput {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/**
 * A `modelswap` command: a leaf that runs (`start`, `config check`), or a group of commands (`config`, the
 * top level). Adding one is adding an entry to src/cli/modelswap-commands.ts; the parser gives it
 * `--help`, `--version` and the refusal of anything it does not declare.
 */
export interface CliCommand {
  name: string;
  /** One line for the list of commands. */
  summary: string;
  /** Its usage paragraph (`--help`): what it does, what it reads, what it starts. */
  description?: string;
  /** Its positional arguments as the usage shows them (`[file]`); none when left out. */
  args?: string;
  /** How many positional arguments it takes at most (0 when left out). */
  maxPositionals?: number;
  options?: Record<string, CliOption>;
  /** A leaf: runs and resolves with the exit code. */
  run?(input: CliInput): Promise<number>;
  /** A group: its commands. */
  commands?: readonly CliCommand[];
  /** A group: the command run when it is given no arguments at all. */
  defaultCommand?: string;
  /** `help [command]`: shows the usage of the command its arguments name (the parser handles it). */
  isHelp?: boolean;
}
