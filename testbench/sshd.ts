import { type ChildProcess, execFile, spawn } from "node:child_process";
import { appendFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.ts";
import { waitForPort } from "./wait-for-port.ts";

const run = promisify(execFile);
export const SSHD_BINARY = "/usr/sbin/sshd";

export interface SshLogin {
  user: string;
  privateKeyPath: string;
}

export interface BenchSshd {
  readonly port: number;
  /**
   * The HOME of every bench host's sessions: what the bot writes to `$HOME/.ssh/authorized_keys` (a
   * rollout's peer-copy lines) lands in the one file this sshd reads besides its own.
   */
  readonly home: string;
  /** SHA256 fingerprint of the current ed25519 host key, as `ssh-keygen -lf` prints it. */
  hostKeySha256(): string;
  /** The listener's pid (its reaped connections' CPU time shows in its cutime/cstime), if it runs. */
  pid(): number | undefined;
  /** The fingerprint of each host key this sshd has, by `ssh-keygen -t` type. */
  hostKeyFingerprints(): Readonly<Partial<Record<BenchHostKeyType, string>>>;
  /**
   * A new client key whose sessions get these environment variables (via authorized_keys
   * `environment=`): this is how one sshd serves many sandboxed hosts, each with its own PATH.
   * `keyDir` puts the key file in another directory (default: the sshd's own directory).
   */
  authorize(env: Record<string, string>, options?: { keyDir?: string }): Promise<SshLogin>;
  /** Replaces the host keys and restarts sshd: a pinned client must now refuse the host. */
  rotateHostKey(): Promise<void>;
  /**
   * Cuts every established connection (SIGKILL to each connection's sshd process), as a network cut or
   * a host reboot would; the listener stays up, so clients can reconnect.
   */
  dropConnections(): Promise<void>;
  /**
   * The host gone: the listener stopped first, then every connection cut, so that none is made in
   * between (a client that reconnects within milliseconds of a cut would otherwise keep a connection
   * through the whole outage: `stop` alone leaves established connections up). `start` brings it back.
   */
  cut(): Promise<void>;
  /** Stops the listener; established connections stay up (as sshd's do when its listener restarts). */
  stop(): Promise<void>;
  /** Starts the listener again (nothing when it runs). */
  start(): Promise<void>;
}

export type BenchHostKeyType = "ed25519" | "ecdsa" | "rsa";

export interface SshdOptions {
  /**
   * Host key types, one throwaway key each (default ed25519 and ecdsa). A Debian or Ubuntu sshd has
   * ed25519, ecdsa and rsa keys (openssh-server's postinst runs `ssh-keygen -A`); rsa is left out by
   * default only because a 3072-bit key takes about a second to make.
   */
  hostKeyTypes?: readonly BenchHostKeyType[];
}

/** A real OpenSSH sshd on a free loopback port, with throwaway host keys and key-only auth. */
export async function startSshd(dir: string, options: SshdOptions = {}): Promise<BenchSshd> {
  await mkdir(dir, { recursive: true });
  await mkdir("/run/sshd", { recursive: true }).catch(() => undefined);
  const port = await freePort();
  const hostKeyTypes = options.hostKeyTypes ?? ["ed25519", "ecdsa"];
  const hostKeyPath = (type: BenchHostKeyType) => join(dir, `ssh_host_${type}_key`);
  const authorizedKeys = join(dir, "authorized_keys");
  const configPath = join(dir, "sshd_config");
  const user = userInfo().username;
  let fingerprints: Partial<Record<BenchHostKeyType, string>> = {};
  let child: ChildProcess | undefined;
  let keyCount = 0;

  const makeHostKeys = async () => {
    const made = await Promise.all(
      hostKeyTypes.map(async (type) => {
        const path = hostKeyPath(type);
        await rm(path, { force: true });
        await rm(`${path}.pub`, { force: true });
        await run("ssh-keygen", ["-q", "-t", type, "-N", "", "-C", "bench-host", "-f", path]);
        const { stdout } = await run("ssh-keygen", ["-lf", `${path}.pub`]);
        return [type, stdout.split(" ")[1] ?? ""] as const;
      }),
    );
    fingerprints = Object.fromEntries(made);
  };

  const home = join(dir, "home");
  await mkdir(home, { recursive: true });
  await makeHostKeys();
  await writeFile(authorizedKeys, "", { mode: 0o600 });
  await writeFile(
    configPath,
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      ...hostKeyTypes.map((type) => `HostKey ${hostKeyPath(type)}`),
      // the bench's own keys, then what the bot adds to the host's user's file (a rollout's peer copies
      // let their key in there: src/host/peer-copy.ts), as sshd's default .ssh/authorized_keys would
      `AuthorizedKeysFile ${authorizedKeys} ${join(home, ".ssh", "authorized_keys")}`,
      "PermitUserEnvironment PATH,HOME,MODELSWAP_*",
      "PubkeyAuthentication yes",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PermitRootLogin prohibit-password",
      "StrictModes no",
      "UsePAM no",
      "MaxSessions 10",
      "MaxStartups 100:30:200",
      `PidFile ${join(dir, "sshd.pid")}`,
      "LogLevel INFO",
      "",
    ].join("\n"),
  );

  const start = async () => {
    if (child !== undefined && child.exitCode === null) return; // running already
    child = spawn(SSHD_BINARY, ["-D", "-f", configPath, "-E", join(dir, "sshd.log")], { stdio: "ignore" });
    child.on("error", (error) => {
      throw new Error(
        `sshd could not be started: ${error.message}. Install it: apt-get install openssh-server`,
      );
    });
    await waitForPort(port, "sshd");
  };

  // Connections outlive their listener (as with a real `systemctl restart ssh`): remembered so that
  // dropConnections can still cut them after a restart.
  const survivors = new Set<number>();
  const connectionPids = async (listener: number): Promise<number[]> => {
    const { stdout } = await run("pgrep", ["-P", String(listener)]).catch(() => ({ stdout: "" }));
    return stdout.split("\n").filter(Boolean).map(Number);
  };

  const stop = async () => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    for (const pid of await connectionPids(running.pid ?? 0)) survivors.add(pid);
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGTERM");
    await exited;
  };

  const dropConnections = async () => {
    const pids = [...survivors, ...(child?.pid === undefined ? [] : await connectionPids(child.pid))];
    survivors.clear();
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  };

  await start();
  return {
    port,
    home,
    hostKeySha256: () => fingerprints.ed25519 ?? "",
    pid: () => (child?.exitCode === null ? child.pid : undefined),
    hostKeyFingerprints: () => ({ ...fingerprints }),
    async authorize(env, where = {}) {
      keyCount += 1;
      const n = keyCount; // taken before any await: hosts are authorized concurrently
      const keyDir = where.keyDir ?? dir;
      const keyPath = join(keyDir, `client_${n}`);
      await mkdir(keyDir, { recursive: true });
      await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", `bench-client-${n}`, "-f", keyPath]);
      const publicKey = (await readFile(`${keyPath}.pub`, "utf8")).trim();
      // A home of its own: the session's bash reads no ~/.bashrc of this machine's user (here root's runs
      // `pyenv rehash`, which waits up to a minute on a lock a killed process left behind), as on a GPU
      // host's clean service account.
      const options = Object.entries({ HOME: home, ...env })
        .map(([name, value]) => `environment="${name}=${value.replaceAll('"', '\\"')}"`)
        .join(",");
      await appendFile(authorizedKeys, `${options}${options ? " " : ""}${publicKey}\n`);
      return { user, privateKeyPath: keyPath };
    },
    dropConnections,
    async rotateHostKey() {
      await stop();
      await makeHostKeys();
      await start();
    },
    async cut() {
      await stop();
      await dropConnections();
    },
    stop,
    start,
  };
}
