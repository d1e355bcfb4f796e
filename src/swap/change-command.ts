import { lines, type ShellCommand, sh } from "../host/shell-quote.ts";

/** A change to run on the host: one command, or several run one after another in one exec (one round trip). */
export type ChangeCommands = ShellCommand | readonly ShellCommand[];

/**
 * The text a change runs: each command as `sudo -n <command>` when it is privileged on a host with
 * `sudo: true`, several one per line (the exit status is the last one's).
 */
export function changeCommand(commands: ChangeCommands, privileged: boolean, sudo: boolean): ShellCommand {
  const one = (c: ShellCommand) => (privileged && sudo ? sh`sudo -n ${c}` : c);
  return "text" in commands ? one(commands) : lines(commands.map(one));
}
