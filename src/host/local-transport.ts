import { spawn } from "node:child_process";
import { CodedError } from "../errors.ts";
import { STOP_GRACE_SECONDS } from "./kept-shell.ts";
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

/** How long a kept shell has after TERM (to stop its command: TERM, a grace, KILL) before it gets KILL. */
const SHELL_KILL_AFTER_MS = (STOP_GRACE_SECONDS + 2) * 1000;

export interface LocalTransportOptions {
  hostName: string;
  commandTimeoutMs: number;
  extraPath?: readonly string[];
}

/**
 * Commands run by bash on the bot's own machine, for `local: true` hosts. Each command gets its own
 * process group so a timeout ends everything it started (work meant to outlive it detaches with setsid).
 */
export class LocalTransport implements HostTransport {
  readonly hostName: string;

  constructor(private readonly options: LocalTransportOptions) {
    this.hostName = options.hostName;
  }

  /** bash in a process group (and session) of its own; `kill` asks it to end, then makes sure. */
  async openShell(): Promise<ShellChannel> {
    const child = spawn("bash", ["--noprofile", "--norc"], {
      env: this.env(),
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (error) => reject(bashNotStarted(error)));
    });
    child.stdin.on("error", () => {
      // the shell ended: its close says so
    });
    return {
      stdout: child.stdout,
      stderr: child.stderr,
      write: (text) => child.stdin.write(text),
      onClose: (listener) => child.once("close", listener),
      kill: () => {
        // TERM lets the shell stop the command it runs (in a process group of its own) before it exits
        try {
          child.kill("SIGTERM");
        } catch {
          // already gone
        }
        const stubborn = setTimeout(() => killGroup(child.pid), SHELL_KILL_AFTER_MS);
        stubborn.unref();
        child.once("exit", () => clearTimeout(stubborn));
      },
    };
  }

  private env(): NodeJS.ProcessEnv {
    const extra = this.options.extraPath ?? [];
    const env = { ...process.env };
    if (extra.length > 0) env.PATH = [...extra, env.PATH ?? "/usr/bin:/bin"].join(":");
    return env;
  }

  exec(command: ShellCommand, options: ExecOptions = {}): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? this.options.commandTimeoutMs;
    const cap = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const env = this.env();
    const started = Date.now();
    return new Promise<ExecResult>((resolve, reject) => {
      // --norc: bash started with a socket for stdin (node's pipes are socket pairs) and SHLVL under 1
      // reads ~/.bashrc as if rshd had started it (Debian builds bash with SSH_SOURCE_BASHRC); a login's
      // `pyenv init` there cost every command 100 ms, and a minute's wait on a lock a killed one left
      const child = spawn("bash", ["--noprofile", "--norc", "-c", command.text], {
        env,
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
      });
      const stdout = new OutputBuffer(cap);
      const stderr = new OutputBuffer(cap);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child.pid);
      }, timeoutMs);
      child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
      child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
      child.stdin.on("error", () => {
        // the command may exit without reading its input
      });
      child.on("error", (error) => {
        clearTimeout(timer);
        reject(bashNotStarted(error));
      });
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        if (timedOut) {
          reject(commandTimeout(this.hostName, timeoutMs));
          return;
        }
        resolve({
          code,
          signal,
          stdout: stdout.text(),
          stderr: stderr.text(),
          durationMs: Date.now() - started,
        });
      });
      child.stdin.end(options.stdin ?? "");
    });
  }

  async close(): Promise<void> {}
}

function bashNotStarted(error: Error): CodedError {
  return new CodedError("HOST_COMMAND_FAILED", `bash could not be started: ${error.message}`, "install bash");
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}
