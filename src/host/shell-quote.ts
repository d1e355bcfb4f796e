/**
 * The one shell-quoting function. Every value that reaches a remote or local shell goes through it:
 * the result is a single POSIX-shell word that bash reads back byte for byte, whatever the input
 * (quotes, `$`, backticks, newlines, globs, Unicode). NUL cannot be passed to a shell at all and is refused.
 */
export function quote(value: string): string {
  if (value.includes("\0")) throw new Error("a NUL byte cannot be passed to a shell");
  if (value !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** A command line that was built with `sh`: interpolations are already quoted. */
export interface ShellCommand {
  readonly text: string;
}

type Arg = string | number | ShellCommand | readonly (string | number)[];

/**
 * Tagged template for commands: sh`systemctl is-active ${unit}` quotes every interpolated value with
 * `quote` (arrays become several words); literal text is the template's own. Nest `sh` results with
 * `sh\`… ${other}\`` to compose without quoting twice.
 */
export function sh(strings: TemplateStringsArray, ...args: Arg[]): ShellCommand {
  let text = strings[0] ?? "";
  args.forEach((arg, i) => {
    text += render(arg) + (strings[i + 1] ?? "");
  });
  return { text };
}

/** Commands one per line, as a script (each already built with `sh`). */
export function lines(commands: readonly ShellCommand[]): ShellCommand {
  return { text: commands.map((c) => c.text).join("\n") };
}

function render(arg: Arg): string {
  if (typeof arg === "number") {
    if (!Number.isFinite(arg)) throw new Error("a non-finite number cannot be passed to a shell");
    return String(arg);
  }
  if (typeof arg === "string") return quote(arg);
  if (Array.isArray(arg)) return arg.map((a) => quote(String(a))).join(" ");
  return (arg as ShellCommand).text;
}
