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
  finish(result: { code: number } | { error: CodedError }): void;
}

/**
 * Commands written to one bash that stays running on the host, one at a time, for the health monitor:
 * a check every interval on every host. Over SSH, `exec` opens a session for each command, and sshd
 * starts a shell, `timeout` and bash for it before the command runs (on the bench machine 22 CPU ms
 * for `true`, against a few ms for the check's own commands); here a command is a line on a channel
 * that is already open. Each command runs in a subshell, so nothing it sets outlives it; its end is a
 * line with a mark nobody else knows (random per shell) and its exit status.
 *
 * A command that outlives its time, or a shell that ends (its connection lost), fails that command and
 * ends the shell with everything it started; the next command opens a new one. Same results as `exec`:
 * `{ code, stdout, stderr }`, HOST_COMMAND_TIMEOUT, HOST_CONNECTION_LOST.
 */
export class KeptShell implements Pick<HostTransport, "hostName" | "exec" | "close"> {
  readonly hostName: string;
  private shell: Promise<ShellChannel> | undefined;
  private running: Running | undefined;
  private mark = "";
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
      const timer = setTimeout(() => {
        running.finish({ error: commandTimeout(this.hostName, timeoutMs) });
      }, timeoutMs);
      const running: Running = {
        shell,
        out: { text: "", ended: undefined },
        err: { text: "", ended: undefined },
        cap,
        finish: (result) => {
          if (this.running !== running) return;
          this.running = undefined;
          clearTimeout(timer);
          if ("error" in result) {
            // whatever is still running is not ours to wait for: end the shell and all it started
            void this.end();
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
      shell.write(
        `(\n${command.text}\n) </dev/null\nprintf '\\n%s %s\\n' '${this.mark}' "$?"; printf '\\n%s\\n' '${this.mark}' >&2\n`,
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
    if (running.out.ended !== undefined && running.err.ended !== undefined)
      running.finish({ code: Number(running.out.ended) });
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
