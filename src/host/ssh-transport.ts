import { readFile } from "node:fs/promises";
import { Client, type ClientChannel } from "ssh2";
import { CodedError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { ChannelOpenError } from "./channel-open-error.ts";
import { fingerprintSha256, HOST_KEY_ALGORITHMS, hostKeyLabel } from "./host-key.ts";
import { HOST_KEY_TYPES, type HostKeyType } from "./host-key-type.ts";
import { Semaphore } from "./semaphore.ts";
import { quote, type ShellCommand } from "./shell-quote.ts";
import { keyReadProblem, keySetting } from "./ssh-key-file.ts";
import { connectionLost, runOnChannel } from "./ssh-run.ts";
import type { SshConfig } from "./ssh-schema.ts";
import type { ExecOptions, ExecResult, HostTransport, ShellChannel } from "./transport.ts";

export interface SshTransportOptions {
  hostName: string;
  ssh: SshConfig;
  commandTimeoutMs: number;
  extraPath?: readonly string[];
  /** The transport's lines are logged on a child of it that names the host (`host`): pass it without. */
  log: Logger;
  /** The host's position in the config's `hosts:` list, to name its settings in messages. */
  configIndex?: number;
}

/**
 * Commands over one reused SSH connection per host. The host key is always checked against the pinned
 * fingerprint (ssh2 accepts any key unless told otherwise); channels are bounded below sshd's
 * MaxSessions; a dropped connection is re-opened by the next command.
 */
export class SshTransport implements HostTransport {
  readonly hostName: string;
  private connection: Promise<Client> | undefined;
  /**
   * The client `connection` resolved to. A client that closes or is dropped clears `connection` only while
   * it is this one: an old client's late "close" must not orphan the connection that replaced it (left
   * open with its keepalive timer, it outlived close() and kept `modelswap doctor` from exiting).
   */
  private live: Client | undefined;
  private readonly channels: Semaphore;
  private closed = false;
  private readonly log: Logger;

  constructor(private readonly options: SshTransportOptions) {
    this.hostName = options.hostName;
    this.log = options.log.child({ host: options.hostName });
    this.channels = new Semaphore(options.ssh.maxSessions);
  }

  async exec(command: ShellCommand, options: ExecOptions = {}): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? this.options.commandTimeoutMs;
    // The remote `timeout` ends a hung command on the host too; runOnChannel's own timer is the backstop.
    const remoteSeconds = Math.ceil(timeoutMs / 1000) + 1;
    const wrapped = `${this.pathPrefix()}exec timeout -k 2 ${remoteSeconds} bash -c ${quote(command.text)}`;
    return await this.channels.run(() =>
      this.onChannel((client) => runOnChannel(client, this.hostName, wrapped, timeoutMs, options)),
    );
  }

  /**
   * One channel running bash for as long as it is used. It does not count against the `maxSessions`
   * channels the commands share: keep `maxSessions` below sshd's MaxSessions (8 of 10 by default).
   */
  async openShell(): Promise<ShellChannel> {
    return await this.onChannel((client) => this.shellChannel(client));
  }

  /**
   * Opens a channel on the connection with `open`. A connection that died unnoticed fails when the channel
   * opens, before anything ran: it is dropped and `open` tried once more on a new one.
   */
  private async onChannel<T>(open: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.connect();
    try {
      return await open(client);
    } catch (error) {
      if (!(error instanceof ChannelOpenError)) throw error;
      this.forget(client);
      return await open(await this.connect());
    }
  }

  private shellChannel(client: Client): Promise<ShellChannel> {
    return new Promise<ShellChannel>((resolve, reject) => {
      client.exec(`${this.pathPrefix()}exec bash --noprofile --norc`, (error, stream: ClientChannel) => {
        if (error) {
          reject(new ChannelOpenError(connectionLost(this.hostName, error)));
          return;
        }
        resolve({
          stdout: stream,
          stderr: stream.stderr,
          write: (text) => stream.write(text),
          onClose: (listener) => stream.once("close", listener),
          kill: () => {
            try {
              // TERM, not KILL: the shell stops the command it runs (in a process group of its own) first
              stream.signal("TERM");
            } catch {
              // servers may refuse signals (OpenSSH does for root): closing the channel hangs up the
              // shell, which still stops its command at the command's time limit
            }
            stream.close();
          },
        });
      });
    });
  }

  private pathPrefix(): string {
    const extra = this.options.extraPath ?? [];
    return extra.length > 0 ? `PATH=${extra.map(quote).join(":")}:"$PATH" ` : "";
  }

  async close(): Promise<void> {
    this.closed = true;
    const pending = this.connection;
    this.connection = undefined;
    this.live = undefined;
    if (pending === undefined) return;
    try {
      (await pending).end();
    } catch {
      // a connection that never opened has nothing to close
    }
  }

  private forget(client: Client): void {
    client.destroy();
    this.drop(client);
  }

  /** Forgets `client` if it is still the connection in use; one that was replaced already is left alone. */
  private drop(client: Client): boolean {
    if (this.live !== client) return false;
    this.live = undefined;
    this.connection = undefined;
    return true;
  }

  private connect(): Promise<Client> {
    if (this.closed) {
      return Promise.reject(new CodedError("INTERNAL", "the SSH transport was closed", "restart the bot"));
    }
    this.connection ??= this.open().catch((error: unknown) => {
      this.connection = undefined;
      throw error;
    });
    return this.connection;
  }

  private async open(): Promise<Client> {
    const { ssh, hostName } = this.options;
    const privateKey = await readFile(ssh.privateKeyPath).catch((error: unknown) => {
      // No `cause`: Node's message names the key's path, which must not reach Slack or the log.
      const setting = keySetting(this.options.configIndex, hostName);
      throw new CodedError(
        "HOST_AUTH_FAILED",
        `cannot read the SSH key of ${hostName} (${setting}): ${keyReadProblem(error)}`,
        `put the bot's private key where ${setting} says, readable by the bot's user, or correct that setting`,
      );
    });
    // One handshake per key type until the host presents the pinned key: the pin is a fingerprint,
    // which does not say its type, and a host offers several (Debian's sshd has ed25519, ecdsa and rsa).
    // Trying other types weakens nothing: only the pinned key is ever accepted.
    const types = ssh.hostKeyType !== undefined ? [ssh.hostKeyType] : [this.pinnedType, ...HOST_KEY_TYPES];
    const seen = new Map<string, string>();
    let firstError: CodedError | undefined;
    for (const type of new Set(types)) {
      if (type === undefined) continue;
      const attempt = await this.handshake(privateKey, type);
      if ("client" in attempt) {
        this.pinnedType = type;
        return attempt.client;
      }
      if (attempt.seen !== undefined) seen.set(attempt.seen.label, attempt.seen.fingerprint);
      else if (!attempt.noSuchKey) throw attempt.error;
      firstError ??= attempt.error;
    }
    if (seen.size > 0) throw this.mismatchError(seen);
    const asked = ssh.hostKeyType ?? HOST_KEY_TYPES.join(", ");
    throw new CodedError(
      "HOST_KEY_MISMATCH",
      `${hostName} (${ssh.address}:${ssh.port}) has no host key of the type the config asks for (${asked}); the connection was refused`,
      `see which keys the host offers (ssh-keyscan -p ${ssh.port} ${ssh.address} | ssh-keygen -lf -), then set hosts[${hostName}].ssh.hostKeyType to the type of the pinned key`,
      { cause: firstError },
    );
  }

  /** The key type that matched the pin last time: reconnects ask for it first. */
  private pinnedType: HostKeyType | undefined;
  private verifiedKey: Buffer | undefined;

  /**
   * The host's public key as this transport last saw it match the pin (a raw SSH key blob), or undefined
   * before a connection: what a peer copying from this host is told to trust (src/host/peer-copy.ts).
   */
  hostKey(): Buffer | undefined {
    return this.verifiedKey;
  }

  private handshake(
    privateKey: Buffer,
    type: HostKeyType,
  ): Promise<
    | { client: Client }
    | { error: CodedError; seen?: { label: string; fingerprint: string }; noSuchKey: boolean }
  > {
    const { ssh } = this.options;
    const log = this.log;
    let seen: { label: string; fingerprint: string } | undefined;
    const client = new Client();
    return new Promise((resolve) => {
      let settled = false;
      const fail = (error: Error & { level?: string; code?: string }) => {
        if (settled) return;
        settled = true;
        client.destroy();
        const mismatch = seen !== undefined && seen.fingerprint !== ssh.hostKeySha256 ? seen : undefined;
        resolve({
          error: this.connectError(error),
          ...(mismatch !== undefined ? { seen: mismatch } : {}),
          noSuchKey: /no matching host key format/.test(error.message),
        });
      };
      client.once("ready", () => {
        settled = true;
        this.live = client;
        log.debug({ hostKeyType: type }, "ssh connected");
        resolve({ client });
      });
      client.on("error", (error: Error & { level?: string; code?: string }) => {
        if (!settled) {
          fail(error);
          return;
        }
        log.warn({ err: error.message }, "ssh connection error");
      });
      client.on("close", () => {
        if (!settled) {
          fail(new Error("connection closed during handshake"));
          return;
        }
        if (this.drop(client)) log.debug("ssh connection closed");
      });
      client.connect({
        host: ssh.address,
        port: ssh.port,
        username: ssh.user,
        privateKey,
        readyTimeout: ssh.connectTimeoutSeconds * 1000,
        keepaliveInterval: ssh.keepaliveSeconds * 1000,
        keepaliveCountMax: 3,
        algorithms: { serverHostKey: [...HOST_KEY_ALGORITHMS[type]] as never },
        hostVerifier: (key: Buffer) => {
          seen = { label: hostKeyLabel(key), fingerprint: fingerprintSha256(key) };
          if (seen.fingerprint !== ssh.hostKeySha256) return false;
          this.verifiedKey = Buffer.from(key);
          return true;
        },
      });
    });
  }

  private mismatchError(seen: ReadonlyMap<string, string>): CodedError {
    const { ssh, hostName } = this.options;
    const where = `${ssh.user}@${ssh.address}:${ssh.port}`;
    const keys = [...seen].map(([label, fingerprint]) => `${fingerprint} (${label})`).join(", ");
    const setting = `hosts[${hostName}].ssh.hostKeySha256`;
    return new CodedError(
      "HOST_KEY_MISMATCH",
      `${hostName} (${where}) presented host key${seen.size > 1 ? "s" : ""} ${keys}, but the config pins ${ssh.hostKeySha256}; the connection was refused`,
      `if the host was reinstalled and you trust it, check the key on the host itself (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub, or the .pub of the pinned type), then set ${setting} to the new value; otherwise someone may be intercepting the connection`,
    );
  }

  private connectError(error: Error & { level?: string; code?: string }): CodedError {
    const { ssh, hostName } = this.options;
    const where = `${ssh.user}@${ssh.address}:${ssh.port}`;
    if (error.level === "client-authentication") {
      return new CodedError(
        "HOST_AUTH_FAILED",
        `${hostName} (${where}) refused the bot's SSH key`,
        `add the bot's public key to ~${ssh.user}/.ssh/authorized_keys on the host`,
        { cause: error },
      );
    }
    const timedOut = error.level === "client-timeout" || /timed out/i.test(error.message);
    return new CodedError(
      "HOST_UNREACHABLE",
      timedOut
        ? `${hostName} (${where}) did not complete an SSH handshake within ${ssh.connectTimeoutSeconds} s`
        : `${hostName} (${where}) is unreachable: ${error.code ?? error.message}`,
      "check that the host is up, that sshd listens on that address and port, and that no firewall blocks the bot",
      { cause: error },
    );
  }
}
