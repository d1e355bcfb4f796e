import { CodedError } from "../errors.ts";
import type { ShellCommand } from "./shell-quote.ts";

export interface ExecOptions {
  /** Fails the command with HOST_COMMAND_TIMEOUT after this long (default: the host's commandTimeoutSeconds). */
  timeoutMs?: number;
  /** Written to the command's standard input, then closed. */
  stdin?: string;
  /** Keeps only the last this-many bytes of each stream (default 4 MiB). */
  maxOutputBytes?: number;
}

export interface ExecResult {
  /** Exit status, or null when the command was ended by a signal. */
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/**
 * Runs shell commands on one host. Implemented over SSH (ssh2) and locally (bash); both pass the same
 * contract tests. Commands are `ShellCommand`s built with `sh`, so every value in them was quoted.
 */
export interface HostTransport {
  readonly hostName: string;
  exec(command: ShellCommand, options?: ExecOptions): Promise<ExecResult>;
  /**
   * A bash that stays running and reads commands from its standard input (`bash --noprofile --norc`, with
   * the host's extraPath): the kept shell of `kept-shell.ts`, for commands run so often that starting a
   * session and a shell for each would cost more than the command.
   */
  openShell(): Promise<ShellChannel>;
  close(): Promise<void>;
  /** Over SSH, the host's public key the connection saw match the pin (a raw key blob); else none. */
  hostKey?(): Buffer | undefined;
}

/** What runs commands and nothing more: a transport, or one that fences them (src/host/fence.ts). */
export type CommandRunner = Pick<HostTransport, "hostName" | "exec">;

/**
 * A running shell: what it prints, a way to write to it, and a way to end it. `kill` sends it TERM (the
 * kept shell's trap stops the command it runs, with its process group, then exits) and makes sure it
 * ends: locally by KILL after a grace, over SSH by closing the channel.
 */
export interface ShellChannel {
  readonly stdout: NodeJS.ReadableStream;
  readonly stderr: NodeJS.ReadableStream;
  write(text: string): void;
  /** Called once, when the shell has ended (it exited, was killed, or its connection was lost). */
  onClose(listener: () => void): void;
  kill(): void;
}

export const DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

/** Collects a stream's output, keeping the tail when it grows past the cap. */
export class OutputBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.cap && this.chunks.length > 1) {
      const dropped = this.chunks.shift()!;
      this.size -= dropped.length;
      this.truncated = true;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    const tail = all.length > this.cap ? all.subarray(all.length - this.cap) : all;
    if (all.length > this.cap) this.truncated = true;
    return tail.toString("utf8");
  }
}

/** A command that had to succeed and did not: HOST_COMMAND_FAILED, with the last line it printed. */
export function commandFailed(hostName: string, what: string, result: ExecResult): CodedError {
  const said = tellingLine(result.stderr.trim() || result.stdout.trim());
  return new CodedError(
    "HOST_COMMAND_FAILED",
    `${what} failed on ${hostName} (exit ${result.code ?? result.signal}): ${said}`,
    "the swap's thread has the output; fix the cause on the host and start the swap again",
  );
}

/**
 * The line of a failed command's output that says why: the last one, unless it only points elsewhere.
 * systemctl ends with `See "systemctl status x.service" and "journalctl -xeu x.service" for details.`
 * (systemd's src/systemctl/systemctl-start-unit.c), after the line that says what failed:
 * `Job for x.service failed because the control process exited with error code.`
 */
function tellingLine(output: string): string {
  const lines = outputLines(output).map((line) => line.trim());
  const telling = lines.filter((line) => !/^(See |Hint: )/.test(line));
  return cutLine(telling.at(-1) ?? lines.at(-1) ?? "");
}

/** The most characters of one line of a host's output that an error or a log tail quotes. */
export const LINE_CHARS = 1000;

/**
 * Output as the lines a person saw: a progress bar redraws its line with `\r` (hf's tqdm bars, git's
 * "Receiving objects"), so an hour of it is one "line" of megabytes with an error at its end; each redraw
 * is a line here. Blank lines are left out.
 */
export function outputLines(output: string): string[] {
  return output.split(/\r\n|\n|\r/).filter((line) => line.trim() !== "");
}

/** A line cut at LINE_CHARS (marked with …): what is quoted from a host goes into swap records. */
export function cutLine(line: string): string {
  return line.length > LINE_CHARS ? `${line.slice(0, LINE_CHARS - 1)}…` : line;
}

/** The error of a command that outlived its time limit, the same for every transport. */
export function commandTimeout(hostName: string, timeoutMs: number): CodedError {
  return new CodedError(
    "HOST_COMMAND_TIMEOUT",
    `a command on ${hostName} did not finish within ${Math.round(timeoutMs / 1000)} s`,
    "the host may be overloaded or a tool on it hangs (nvidia-smi does when the driver is stuck); look at the host directly",
  );
}
