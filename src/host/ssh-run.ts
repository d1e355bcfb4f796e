import type { Client, ClientChannel } from "ssh2";
import { CodedError } from "../errors.ts";
import { ChannelOpenError } from "./channel-open-error.ts";
import {
  commandTimeout,
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  OutputBuffer,
} from "./transport.ts";

/**
 * Runs `wrapped` (a command line for the host's login shell) on a new channel of `client`: its output
 * capped, its exit code or signal as the host reported it, ended with SIGKILL and HOST_COMMAND_TIMEOUT when
 * `timeoutMs` passes, HOST_CONNECTION_LOST when the channel closes without an exit status, and a channel
 * the server refused as a ChannelOpenError (the transport then tries another connection).
 */
export function runOnChannel(
  client: Client,
  hostName: string,
  wrapped: string,
  timeoutMs: number,
  options: ExecOptions,
): Promise<ExecResult> {
  const cap = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const started = Date.now();
  return new Promise<ExecResult>((resolve, reject) => {
    client.exec(wrapped, (error, stream: ClientChannel) => {
      if (error) {
        reject(new ChannelOpenError(connectionLost(hostName, error)));
        return;
      }
      const stdout = new OutputBuffer(cap);
      const stderr = new OutputBuffer(cap);
      let code: number | null = null;
      let signal: string | null = null;
      let done = false;
      const timer = setTimeout(() => {
        if (done) return;
        done = true;
        try {
          stream.signal("KILL");
        } catch {
          // servers may refuse signals; closing the channel is enough
        }
        stream.close();
        reject(commandTimeout(hostName, timeoutMs));
      }, timeoutMs);
      stream.on("data", (chunk: Buffer) => stdout.push(chunk));
      stream.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
      stream.on("exit", (exitCode: number | null, exitSignal?: string) => {
        code = exitCode;
        signal = exitSignal ?? null;
      });
      stream.on("close", () => {
        clearTimeout(timer);
        if (done) return;
        done = true;
        // `timeout` exits 124 (TERM) or 137 (KILL) when it had to end the command.
        if (code === 124 || code === 137) {
          reject(commandTimeout(hostName, timeoutMs));
          return;
        }
        if (code === null && signal === null) {
          reject(
            connectionLost(
              hostName,
              new Error("the connection closed before the command reported its exit status"),
            ),
          );
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
      if (options.stdin !== undefined) stream.end(options.stdin);
      else stream.end();
    });
  });
}

/** HOST_CONNECTION_LOST: the connection failed while a command ran or a channel opened. */
export function connectionLost(hostName: string, error: Error): CodedError {
  return new CodedError(
    "HOST_CONNECTION_LOST",
    `the SSH connection to ${hostName} failed during a command: ${error.message}`,
    "this is usually transient; if it persists, check sshd's MaxSessions and the host's load",
    { cause: error },
  );
}
