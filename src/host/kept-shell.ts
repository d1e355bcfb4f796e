import { randomBytes } from "node:crypto";
import { StringDecoder } from "node:string_decoder";
import { CodedError } from "../errors.ts";
import type { ShellCommand } from "./shell-quote.ts";
import {
  commandTimeout,
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type HostTransport,
  OutputBuffer,
  type ShellChannel,
} from "./transport.ts";

/** One stream of the running command: its text so far, and what followed the mark once it came. */
interface Side {
  text: string;
  ended: string | undefined;
}

interface Running {
  /** The shell it runs in: only that shell's end fails it. */
  shell: ShellChannel;
  out: Side;
  err: Side;
  cap: number;
  timeoutMs: number;
  /** `end`: the shell is past use (it ended, or no longer answers) and is ended, all it runs with it. */
  finish(result: { code: number } | { error: CodedError; end: boolean }): void;
}

/** How long a command that outlived its time has, once sent TERM, before what is left of its process group gets KILL. */
export const STOP_GRACE_SECONDS = 2;
/**
 * How long past a command's time limit (and the grace) the kept shell has to say it stopped the command
 * before the bot gives up on that shell: a host too loaded to run its shell's builtins.
 */
const BACKSTOP_MS = 5000;

/**
 * Read once by each shell, before its first command. Job control (`set -m`) puts every command (a job in
 * the background) in a process group of its own, so the group is the command with all it started: it
 * ends with `kill -- -PGID`, and the shell, whose group it is not, lives on. The command's exit status
 * comes back with its number on a pipe the shell opens on itself (`<> <(:)` on Linux gives one fd with
 * both ends: it never reads end-of-file), and `read -t` on that pipe is the command's time limit, kept by
 * the host: a command whose connection dropped, or whose shell nobody reads any more, still ends on time.
 * At the limit the group gets TERM, and KILL after the grace from a job of its own (a second such pipe
 * is its clock), while the shell goes on to the next command. `disown` keeps bash from printing
 * `[1]+ Done` lines. A TERM to the shell (the channel's `kill`) stops the running command the same way
 * before the shell exits. The command itself gets neither pipe.
 */
const PRELUDE = `set -m
exec {__ms_p}<> <(:) {__ms_q}<> <(:)
__ms_j=
__ms_stop() {
  kill -TERM -- "-$1" 2>/dev/null || return 0
  { read -r -t ${STOP_GRACE_SECONDS} -u "$__ms_q" _; kill -KILL -- "-$1"; } </dev/null >/dev/null 2>&1 &
  disown "$!" 2>/dev/null
  return 0
}
__ms_wait() {
  local line
  __ms_j=$!
  disown "$__ms_j" 2>/dev/null
  while read -r -t "$2" -u "$__ms_p" line; do
    if [ "\${line%% *}" = "$1" ]; then __ms_s=\${line#* } __ms_j=; return 0; fi
  done
  __ms_stop "$__ms_j"
  __ms_s=timeout __ms_j=
}
trap '[ -n "$__ms_j" ] && __ms_stop "$__ms_j"; exit 143' TERM HUP
`;

/**
 * Commands written to one bash that stays running on the host, one at a time, for the health monitor:
 * a check every interval on every host. Over SSH, `exec` opens a session for each command, and sshd
 * starts a shell, `timeout` and bash for it before the command runs (on the bench machine 22 CPU ms
 * for `true`, against a few ms for the check's own commands); here a command is a line on a channel
 * that is already open. Each command runs in a subshell, so nothing it sets outlives it, in a process
 * group of its own (PRELUDE); its end is a line with a mark nobody else knows (random per shell) and its
 * exit status.
 *
 * A command that outlives its time is stopped by the shell on the host: TERM to its process group, KILL
 * after STOP_GRACE_SECONDS to what is left, then HOST_COMMAND_TIMEOUT, and the shell is kept. The host
 * keeps that time itself, so a dropped connection or an ended shell leaves nothing past it either (an SSH
 * server may refuse the signals `exec` sends: OpenSSH does for root's sessions). A shell that ends (its
 * connection lost), or says nothing for BACKSTOP_MS past the time and the grace, fails that command and
 * is ended; the next command opens a new one. Same results as `exec`: `{ code, stdout, stderr }`,
 * HOST_COMMAND_TIMEOUT, HOST_CONNECTION_LOST.
 */
export class KeptShell implements Pick<HostTransport, "hostName" | "exec" | "close"> {
  readonly hostName: string;
  private shell: Promise<ShellChannel> | undefined;
  private running: Running | undefined;
  private mark = "";
  /** The number of the last command written: its status line carries it, so a late one is told apart. */
  private sent = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly transport: Pick<HostTransport, "hostName" | "openShell">,
    private readonly defaultTimeoutMs: number,
  ) {
    this.hostName = transport.hostName;
  }

  exec(command: ShellCommand, options: ExecOptions = {}): Promise<ExecResult> {
    const turn = this.queue.then(() => this.run(command, options));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.end();
  }

  private async run(command: ShellCommand, options: ExecOptions): Promise<ExecResult> {
    if (this.closed) throw new CodedError("INTERNAL", "the kept shell was closed", "restart the bot");
    if (options.stdin !== undefined)
      throw new CodedError("INTERNAL", "the kept shell takes no standard input", "run the command with exec");
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const cap = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const started = Date.now();
    const shell = await this.open();
    return await new Promise<ExecResult>((resolve, reject) => {
      // the shell on the host keeps the time: this is only for a shell that does not answer
      const timer = setTimeout(
        () => running.finish({ error: commandTimeout(this.hostName, timeoutMs), end: true }),
        timeoutMs + STOP_GRACE_SECONDS * 1000 + BACKSTOP_MS,
      );
      const running: Running = {
        shell,
        out: { text: "", ended: undefined },
        err: { text: "", ended: undefined },
        cap,
        timeoutMs,
        finish: (result) => {
          if (this.running !== running) return;
          this.running = undefined;
          clearTimeout(timer);
          if ("error" in result) {
            // a shell that no longer answers is not ours to wait for: end it and all it started
            if (result.end) void this.end();
            reject(result.error);
            return;
          }
          const tail = (text: string) => {
            const buffer = new OutputBuffer(cap);
            buffer.push(Buffer.from(text));
            return buffer.text();
          };
          resolve({
            code: result.code,
            signal: null,
            stdout: tail(running.out.text),
            stderr: tail(running.err.text),
            durationMs: Date.now() - started,
          });
        },
      };
      this.running = running;
      this.sent += 1;
      const n = this.sent;
      const seconds = (Math.max(1, timeoutMs) / 1000).toFixed(3);
      shell.write(
        `{ (\n${command.text}\n) {__ms_p}>&- {__ms_q}>&-; printf '%s %s\\n' ${n} "$?" >&"$__ms_p"; } </dev/null & __ms_wait ${n} ${seconds}\n` +
          `printf '\\n%s %s\\n' '${this.mark}' "$__ms_s"; printf '\\n%s\\n' '${this.mark}' >&2\n`,
      );
    });
  }

  private open(): Promise<ShellChannel> {
    this.shell ??= this.start().catch((error: unknown) => {
      this.shell = undefined;
      throw error;
    });
    return this.shell;
  }

  private async start(): Promise<ShellChannel> {
    const shell = await this.transport.openShell();
    shell.write(PRELUDE);
    this.mark = `__modelswap_end_${randomBytes(12).toString("hex")}__`;
    const current = this.shell;
    // a character split over two chunks is put together before it is read
    const out = new StringDecoder("utf8");
    const err = new StringDecoder("utf8");
    shell.stdout.on("data", (chunk: Buffer) => this.output(shell, "out", out.write(chunk)));
    shell.stderr.on("data", (chunk: Buffer) => this.output(shell, "err", err.write(chunk)));
    shell.onClose(() => {
      if (this.shell === current) this.shell = undefined;
      // a shell ended for a timeout closes while the next command runs in a new one
      if (this.running?.shell !== shell) return;
      this.running.finish({
        error: new CodedError(
          "HOST_CONNECTION_LOST",
          `the shell the health monitor keeps on ${this.hostName} ended during a command`,
          "this is usually transient (the connection dropped); if it persists, check sshd's MaxSessions and the host's load",
        ),
        end: true,
      });
    });
    return shell;
  }

  /**
   * Output goes to the running command until the line with the mark: on standard output with the exit
   * status, on standard error bare. The command ends when both came (its last error line may otherwise
   * land in the next command's).
   */
  private output(shell: ShellChannel, stream: "out" | "err", text: string): void {
    const running = this.running;
    if (running === undefined || running.shell !== shell) return;
    const side = running[stream];
    const searchFrom = Math.max(0, side.text.length - this.mark.length - 2);
    side.text += text;
    if (side.ended === undefined) {
      const at = side.text.indexOf(`\n${this.mark}`, searchFrom);
      const lineEnd = at === -1 ? -1 : side.text.indexOf("\n", at + 1);
      if (lineEnd === -1) {
        // a command that prints without end: keep the tail (enough for the cap and a split mark)
        if (side.text.length > 2 * running.cap + 256) side.text = side.text.slice(-(running.cap + 256));
        return;
      }
      // printf put a newline of its own before the mark: the output is what came before it
      side.ended = side.text.slice(at + 1 + this.mark.length, lineEnd).trim();
      side.text = side.text.slice(0, at);
    }
    if (running.out.ended === undefined || running.err.ended === undefined) return;
    // the shell stopped the command at its time limit (PRELUDE's __ms_wait), and lives on
    if (running.out.ended === "timeout")
      running.finish({ error: commandTimeout(this.hostName, running.timeoutMs), end: false });
    else running.finish({ code: Number(running.out.ended) });
  }

  private async end(): Promise<void> {
    const pending = this.shell;
    this.shell = undefined;
    if (pending === undefined) return;
    try {
      (await pending).kill();
    } catch {
      // a shell that never opened has nothing to end
    }
  }
}
