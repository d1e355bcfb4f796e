import { CodedError } from "../errors.ts";
import { sh } from "../host/shell-quote.ts";
import type { CommandRunner } from "../host/transport.ts";

export interface RuntimeApiTarget {
  transport: CommandRunner;
  socket: string;
  sudo: boolean;
  timeoutMs: number;
}

/**
 * Sends one command to HAProxy's Runtime API on the host and returns its answer, the way HAProxy's
 * management guide does it (`echo "show stat" | socat stdio unix-connect:<socket>`), through the host's
 * transport. The command is given on standard input, never on the command line; socat's `-t` lets HAProxy
 * take up to the time limit to answer after the command is sent (socat's own default, 0.5 s, would cut
 * a slow `show stat`). A socket that is missing, refused or not ours to open, and a missing socat, are
 * coded errors with their fix.
 */
export async function runtimeCommand(target: RuntimeApiTarget, command: string): Promise<string> {
  if (/[\n;]/.test(command)) throw new Error("one Runtime API command at a time, without ; or a newline");
  return await runtimeLine(target, command);
}

async function runtimeLine(target: RuntimeApiTarget, command: string): Promise<string> {
  const wait = Math.max(1, Math.ceil(target.timeoutMs / 1000));
  const socat = sh`socat -t ${wait} stdio ${`unix-connect:${target.socket}`}`;
  const line = target.sudo ? sh`sudo -n ${socat}` : socat;
  const result = await target.transport.exec(line, {
    stdin: `${command}\n`,
    timeoutMs: target.timeoutMs + 2000,
  });
  if (result.code === 0) return result.stdout;
  throw socatFailure(target, result.code, result.stderr.trim() || result.stdout.trim());
}

/**
 * Several commands on one Runtime API line (`cmd1; cmd2`), as management.txt allows: HAProxy runs them
 * one after the other in the same CLI session, before any request is handled in between. Used where two
 * state changes must not be seen apart (readying the hold and draining the slot: with both ready and
 * both refusing, a retrying request is redispatched at once instead of after the 1 s turn-around, spends
 * its retries in milliseconds and gets 503 — measured on 2.6.12, docs/front-door.md). The answers come
 * back one after the other, each followed by an empty line.
 */
export async function runtimeCommands(
  target: RuntimeApiTarget,
  commands: readonly string[],
): Promise<string> {
  for (const command of commands)
    if (/[\n;]/.test(command)) throw new Error("a Runtime API command without ; or a newline");
  return await runtimeLine(target, commands.join("; "));
}

function socatFailure(target: RuntimeApiTarget, code: number | null, said: string): CodedError {
  const where = `${target.socket} on ${target.transport.hostName}`;
  const last = said.split("\n").at(-1) ?? "";
  if (code === 127 || /socat: (command )?not found/.test(said))
    return new CodedError(
      "FRONT_DOOR_UNREACHABLE",
      `socat is not installed on ${target.transport.hostName}, so HAProxy's Runtime API cannot be reached`,
      "install it on the host: apt-get install socat",
    );
  if (/sudo: .*password is required|sudo: .*not allowed|is not in the sudoers/.test(said))
    return new CodedError(
      "FRONT_DOOR_DENIED",
      `sudo refused to run socat for the HAProxy socket ${where}: ${last}`,
      "give the bot's user the sudoers rule of docs/front-door.md, or better the socket's group (stats socket … group modelswap mode 660) and sudo: false",
    );
  if (/No such file or directory/.test(said))
    return new CodedError(
      "FRONT_DOOR_SOCKET_MISSING",
      `HAProxy's Runtime API socket ${where} does not exist`,
      "is HAProxy running, with `stats socket <this path> mode 660 group modelswap level admin` in its global section (docs/front-door.md)? Or correct the socket path in the config",
    );
  if (/Permission denied/.test(said))
    return new CodedError(
      "FRONT_DOOR_DENIED",
      `the bot's user may not open HAProxy's socket ${where}`,
      "give the socket to the bot's group (stats socket … mode 660 group modelswap level admin) and reload HAProxy, or set sudo with the rule of docs/front-door.md",
    );
  if (/Connection refused/.test(said))
    return new CodedError(
      "FRONT_DOOR_UNREACHABLE",
      `nothing answers on HAProxy's socket ${where}: HAProxy is stopped, or restarted with another socket`,
      "start HAProxy (systemctl status haproxy) and check the stats socket path in its configuration",
    );
  return new CodedError(
    "FRONT_DOOR_UNREACHABLE",
    `HAProxy's socket ${where} could not be used (exit ${code}): ${last}`,
    "run the same socat command on the host by hand (docs/front-door.md) and fix what it says",
  );
}
