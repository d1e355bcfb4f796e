import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CodedError } from "../../src/errors.ts";
import { createTransport } from "../../src/host/create-transport.ts";
import type { HostKeyType } from "../../src/host/host-key-type.ts";
import { KeptShell } from "../../src/host/kept-shell.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { quote, sh } from "../../src/host/shell-quote.ts";
import { SshTransport } from "../../src/host/ssh-transport.ts";
import type { HostTransport } from "../../src/host/transport.ts";
import { createLogger } from "../../src/log.ts";
import { freePort } from "../../testbench/free-port.ts";
import { type BenchSshd, startSshd } from "../../testbench/sshd.ts";
import { until } from "../../testbench/until.ts";
import { duplicateKeys } from "../support/duplicate-keys.ts";
import { tempDir } from "../support/tmp.ts";

const log = createLogger({ level: "silent" });
const run = promisify(execFile);
let dir: { path: string; remove: () => Promise<void> };
let sshd: BenchSshd;
let binDir: string;
let ssh: SshTransport;
let local: LocalTransport;

function sshTransport(
  overrides: Partial<{
    port: number;
    hostKeySha256: string;
    hostKeyType: HostKeyType;
    connectTimeoutSeconds: number;
  }>,
  key: string,
  logger = log,
) {
  return new SshTransport({
    hostName: "test-host",
    ssh: {
      address: "127.0.0.1",
      port: overrides.port ?? sshd.port,
      user: process.env.USER ?? "root",
      privateKeyPath: key,
      hostKeySha256: overrides.hostKeySha256 ?? sshd.hostKeySha256(),
      ...(overrides.hostKeyType !== undefined ? { hostKeyType: overrides.hostKeyType } : {}),
      connectTimeoutSeconds: overrides.connectTimeoutSeconds ?? 5,
      keepaliveSeconds: 5,
      maxSessions: 4,
    },
    commandTimeoutMs: 10_000,
    log: logger,
  });
}

let clientKey: string;

beforeAll(async () => {
  dir = await tempDir();
  binDir = join(dir.path, "bin");
  await mkdir(binDir);
  // A command that only exists on the "host's" PATH proves the session gets the sandbox's PATH.
  await writeFile(join(binDir, "only-on-host"), '#!/bin/sh\necho host-tool "$@"\n', { mode: 0o755 });
  sshd = await startSshd(join(dir.path, "sshd"));
  const login = await sshd.authorize({ PATH: `${binDir}:/usr/local/bin:/usr/bin:/bin` });
  clientKey = login.privateKeyPath;
  ssh = sshTransport({}, clientKey);
  local = new LocalTransport({ hostName: "local-host", commandTimeoutMs: 10_000, extraPath: [binDir] });
});

afterAll(async () => {
  await keptSsh?.close();
  await keptLocal?.close();
  await ssh?.close();
  await sshd?.stop();
  await dir?.remove();
});

let keptSsh: KeptShell;
let keptLocal: KeptShell;

const transports: [string, () => Pick<HostTransport, "exec">][] = [
  ["ssh", () => ssh],
  ["local", () => local],
  // the health monitor's kept shells give the same answers, one command after the other
  ["ssh kept shell", () => (keptSsh ??= new KeptShell(ssh, 10_000))],
  ["local kept shell", () => (keptLocal ??= new KeptShell(local, 10_000))],
];
const kept = (name: string) => name.includes("kept shell");

describe.each(transports)("HostTransport contract: %s", (name, get) => {
  it("runs a command and returns stdout, stderr and the exit code", async () => {
    const result = await get().exec(sh`echo out; echo err >&2; exit 3`);
    expect(result).toMatchObject({ code: 3, signal: null, stdout: "out\n", stderr: "err\n" });
  });

  it("finds the host's own tools on its PATH", async () => {
    const result = await get().exec(sh`only-on-host ${"a b"}`);
    expect(result.stdout).toBe("host-tool a b\n");
  });

  it("passes standard input (a kept shell refuses it, saying so)", async () => {
    if (kept(name)) {
      await expect(get().exec(sh`wc -c`, { stdin: "12345" })).rejects.toMatchObject({
        code: "INTERNAL",
        message: "the kept shell takes no standard input",
      });
      return;
    }
    const result = await get().exec(sh`wc -c`, { stdin: "12345" });
    expect(result.stdout.trim()).toBe("5");
  });

  it("drains large output on both streams without deadlock", { timeout: 90_000 }, async () => {
    // a deadlock never ends; 6 MB on a machine the rest of the suite loads took over the 10 s default
    // (a clean-clone run on 2026-12-07, both kept shells)
    const result = await get().exec(
      sh`head -c 3000000 /dev/zero | tr '\\0' a; head -c 3000000 /dev/zero | tr '\\0' b >&2`,
      { timeoutMs: 60_000 },
    );
    expect(result.stdout.length).toBe(3_000_000);
    expect(result.stderr.length).toBe(3_000_000);
  });

  it("keeps only the tail of output past the cap", async () => {
    const result = await get().exec(sh`seq 1 100000`, { maxOutputBytes: 1000 });
    expect(result.stdout.length).toBeLessThanOrEqual(1000);
    expect(result.stdout.endsWith("100000\n")).toBe(true);
  });

  it("fails a hung command with HOST_COMMAND_TIMEOUT and does not hang", async () => {
    const started = Date.now();
    const error = await get()
      .exec(sh`sleep 30`, { timeoutMs: 1500 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CodedError);
    expect((error as CodedError).code).toBe("HOST_COMMAND_TIMEOUT");
    expect(Date.now() - started).toBeLessThan(8000);
  });

  // A command that outlives its time is ended with everything it started (its whole process group), not
  // only the shell that ran it: the host has one process fewer to leak per hung check, every interval.
  it.each([
    ["a job in the background beside one in the foreground", (m: Marker) => sh`sleep ${m.a} & sleep ${m.b}`],
    ["a command run by a shell of its own", (m: Marker) => sh`bash -c ${`sleep ${m.a}; true`}`],
    ["processes that ignore TERM", (m: Marker) => sh`trap '' TERM; sleep ${m.a} & sleep ${m.b}`],
  ])("leaves no process of a command that timed out: %s", async (_what, command) => {
    const m = marker();
    await expect(get().exec(command(m), { timeoutMs: 800 })).rejects.toMatchObject({
      code: "HOST_COMMAND_TIMEOUT",
    });
    await until(async () => (await processesOf(m.id)).length === 0, {
      what: "the timed-out command's processes to end",
      timeoutMs: 5000,
    }).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; still running: ${(await processesOf(m.id)).join("; ")}`);
    });
    expect((await get().exec(sh`echo next`)).stdout).toBe("next\n");
  });

  it("surfaces a signal that ended the command", async () => {
    // $$ is the kept shell itself; $BASHPID is the command's own shell in every case
    const result = await get().exec(sh`kill -TERM $BASHPID`);
    expect(String(result.code === null ? result.signal : result.code)).toMatch(/TERM|143/);
  });

  it("runs more concurrent commands than the channel limit", async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => get().exec(sh`sleep 0.2; echo ${i}`)),
    );
    expect(results.map((r) => r.stdout.trim())).toEqual(Array.from({ length: 12 }, (_, i) => String(i)));
  });

  it("gives back any string byte for byte through a real bash (quote)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .oneof(
            fc.string({ unit: "binary", maxLength: 60 }),
            fc.constantFrom(
              "'",
              '"',
              "$(id)",
              "`id`",
              "a\nb",
              "; rm -rf /",
              "*",
              "~",
              "-n",
              "\\",
              "$HOME",
              "!!",
              "é ∂ 𝔘",
            ),
          )
          .filter((s) => !s.includes("\0")),
        async (value) => {
          const result = await get().exec(sh`printf %s ${value}`);
          expect(result.stdout).toBe(value);
        },
      ),
      { numRuns: 60 },
    );
  });
});

interface Marker {
  /** What `pgrep -f` looks for: in every process the command starts, nowhere else. */
  id: string;
  a: string;
  b: string;
}

let markers = 0;
/** Sleep lengths no other process on the machine has: `sleep 300.<pid><n>1` and `…2`. */
function marker(): Marker {
  markers += 1;
  const id = `30${markers % 10}.${process.pid}${markers}`;
  return { id, a: `${id}1`, b: `${id}2` };
}

/** The processes of a command whose marker is `id`: the bench's hosts are this machine. */
async function processesOf(id: string): Promise<string[]> {
  const { stdout } = await run("pgrep", ["-af", id.replaceAll(".", "[.]")]).catch(() => ({ stdout: "" }));
  return stdout.split("\n").filter((line) => line.trim() !== "");
}

// A connection that drops while a command runs: the command fails at once (HOST_CONNECTION_LOST), and
// what it started on the host ends by its own time limit at the latest, not whenever it would have.
describe.each([
  ["ssh", () => ssh],
  ["ssh kept shell", () => new KeptShell(ssh, 10_000)],
] as const)("a dropped connection during a command: %s", (_name, get) => {
  it("fails the command and leaves none of its processes past its time limit", {
    timeout: 120_000,
  }, async () => {
    const transport = get();
    const m = marker();
    const pending = transport.exec(sh`sleep ${m.a} & sleep ${m.b}`, { timeoutMs: 3000 });
    const outcome = pending.catch((error: unknown) => error);
    await until(async () => (await processesOf(m.id)).length >= 2, {
      what: "the command to start",
      timeoutMs: 60_000,
    });
    const seen = Date.now();
    await sshd.dropConnections();
    expect(await outcome).toMatchObject({ code: "HOST_CONNECTION_LOST" });
    // the host's `timeout` fires a second after ours, then gives 2 s of grace before KILL: 6 s from the
    // command's start on the host at most, which was before it was seen; 5 s more for a loaded machine
    // (counted from the client's send, the bound failed a run whose command took seconds to start). The
    // sleeps last 300 s: a leak outlives any of it.
    await until(async () => (await processesOf(m.id)).length === 0, {
      what: "the processes of the command whose connection dropped to end",
      timeoutMs: 6000 + 5000 - (Date.now() - seen),
    }).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; still running: ${(await processesOf(m.id)).join("; ")}`);
    });
    expect((await transport.exec(sh`echo next`)).stdout).toBe("next\n");
    if (transport instanceof KeptShell) await transport.close();
  });
});

describe.each([
  ["ssh", () => ssh],
  ["local", () => local],
] as const)("KeptShell over %s", (_name, transport) => {
  // in the subshell a command runs in, $$ is still the kept shell's pid
  const shellPid = async (shell: KeptShell) => (await shell.exec(sh`echo $$`)).stdout.trim();

  it("runs every command in the one shell it keeps, and nothing a command sets outlives it", async () => {
    const shell = new KeptShell(transport(), 10_000);
    try {
      const first = await shellPid(shell);
      expect(first).toMatch(/^\d+$/);
      await shell.exec(sh`cd /tmp; export LEAK=1; set -e; false`);
      expect((await shell.exec(sh`echo "[$LEAK]"; pwd`)).stdout).not.toMatch(/\[1\]|^\/tmp$/m);
      const [a, b] = await Promise.all([shell.exec(sh`sleep 0.3; echo a`), shell.exec(sh`echo b`)]);
      expect([a.stdout, b.stdout]).toEqual(["a\n", "b\n"]);
      expect(await shellPid(shell)).toBe(first);
    } finally {
      await shell.close();
    }
  });

  it("keeps its shell after a command that outlived its time, and opens a new one after one that ended it", async () => {
    const shell = new KeptShell(transport(), 10_000);
    try {
      const first = await shellPid(shell);
      await expect(shell.exec(sh`sleep 30`, { timeoutMs: 500 })).rejects.toMatchObject({
        code: "HOST_COMMAND_TIMEOUT",
      });
      // the shell on the host stopped the command (its process group) and reads the next one
      expect(await shellPid(shell)).toBe(first);
      await expect(shell.exec(sh`kill -KILL $$`)).rejects.toMatchObject({ code: "HOST_CONNECTION_LOST" });
      const second = await shellPid(shell);
      expect(second).not.toBe(first);
      expect((await shell.exec(sh`echo still here`)).stdout).toBe("still here\n");
    } finally {
      await shell.close();
    }
  });

  it("closed during a command, leaves none of the command's processes past its time limit", async () => {
    const shell = new KeptShell(transport(), 10_000);
    const m = marker();
    const started = Date.now();
    const outcome = shell.exec(sh`sleep ${m.a} & sleep ${m.b}`, { timeoutMs: 3000 }).catch((e: unknown) => e);
    await until(async () => (await processesOf(m.id)).length >= 2, { what: "the command to start" });
    await shell.close();
    expect(await outcome).toMatchObject({ code: "HOST_CONNECTION_LOST" });
    // a TERM to the shell stops it at once; where the server refuses signals (OpenSSH for root, as on the
    // bench), the shell still stops it at its time limit
    await until(async () => (await processesOf(m.id)).length === 0, {
      what: "the processes of the command whose shell was closed to end",
      timeoutMs: 3000 + 3000 - (Date.now() - started),
    }).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; still running: ${(await processesOf(m.id)).join("; ")}`);
    });
  });

  it("does not take a mark-like line in the output for the end", async () => {
    const shell = new KeptShell(transport(), 10_000);
    try {
      const result = await shell.exec(sh`echo __modelswap_end_0000__ 0; printf 'no newline'`);
      expect(result).toMatchObject({ code: 0, stdout: "__modelswap_end_0000__ 0\nno newline" });
    } finally {
      await shell.close();
    }
  });
});

describe("SSH host key pinning and reachability", () => {
  it("refuses a host whose key differs from the pin, and says which key it saw", async () => {
    const wrongPin = `SHA256:${"A".repeat(43)}`;
    const transport = sshTransport({ hostKeySha256: wrongPin }, clientKey);
    const error = (await transport
      .exec(sh`touch /tmp/should-never-run`)
      .catch((e: unknown) => e)) as CodedError;
    expect(error.code).toBe("HOST_KEY_MISMATCH");
    // Every key the host offered is named with its type, as `ssh-keygen -lf` prints them.
    const keys = sshd.hostKeyFingerprints();
    expect(error.message).toContain(`${keys.ed25519} (ED25519)`);
    expect(error.message).toContain(`${keys.ecdsa} (ECDSA)`);
    expect(error.message).toContain(wrongPin);
    expect(error.fix).toMatch(/hostKeySha256/);
    await transport.close();
  });

  it("accepts a pin of any of the host's key types, not only the one ssh2 would negotiate first", async () => {
    // ssh2 prefers ssh-ed25519; an operator who pinned the host's ECDSA key (the first line of a plain
    // `ssh-keyscan HOST | ssh-keygen -lf -` may be it) was refused as if the key had changed.
    const transport = sshTransport({ hostKeySha256: sshd.hostKeyFingerprints().ecdsa ?? "" }, clientKey);
    const result = await transport.exec(sh`echo pinned-ecdsa`);
    expect(result.stdout.trim()).toBe("pinned-ecdsa");
    await transport.close();
  });

  it("with hostKeyType set, asks only for that type and says so when the host has none", async () => {
    const typed = sshTransport(
      { hostKeySha256: sshd.hostKeyFingerprints().ecdsa ?? "", hostKeyType: "ecdsa" },
      clientKey,
    );
    expect((await typed.exec(sh`echo typed`)).stdout.trim()).toBe("typed");
    await typed.close();

    const missing = sshTransport({ hostKeyType: "rsa" }, clientKey);
    const error = (await missing.exec(sh`true`).catch((e: unknown) => e)) as CodedError;
    expect(error.code).toBe("HOST_KEY_MISMATCH");
    expect(error.message).toContain("has no host key of the type the config asks for (rsa)");
    expect(error.fix).toContain("hostKeyType");
    await missing.close();
  });

  it("reports a closed port as unreachable at once", async () => {
    const transport = sshTransport({ port: await freePort() }, clientKey);
    const error = (await transport.exec(sh`true`).catch((e: unknown) => e)) as CodedError;
    expect(error.code).toBe("HOST_UNREACHABLE");
    expect(error.message).toContain("ECONNREFUSED");
  });

  it("gives up on a host that accepts TCP but never speaks SSH within the connect timeout", async () => {
    const silent: Server = createServer(() => undefined);
    const port = await freePort();
    await new Promise<void>((resolve) => silent.listen(port, "127.0.0.1", resolve));
    const transport = sshTransport({ port, connectTimeoutSeconds: 1 }, clientKey);
    const started = Date.now();
    const error = (await transport.exec(sh`true`).catch((e: unknown) => e)) as CodedError;
    expect(error.code).toBe("HOST_UNREACHABLE");
    expect(error.message).toMatch(/handshake within 1 s/);
    expect(Date.now() - started).toBeLessThan(5000);
    silent.close();
  });

  it("reconnects after the connection dropped", async () => {
    const lines: string[] = [];
    const watched = createLogger({
      level: "debug",
      destination: { write: (line: string) => lines.push(line) },
    });
    const transport = sshTransport({}, clientKey, watched);
    expect((await transport.exec(sh`echo one`)).stdout).toBe("one\n");
    // End the server side of this very connection (the sshd process that owns the session).
    const session = (await transport.exec(sh`ps -o ppid= -p $PPID`)).stdout.trim();
    expect(session).toMatch(/^\d+$/);
    process.kill(Number(session), "SIGKILL");
    await until(() => lines.some((l) => l.includes("ssh connection closed")), {
      what: "the transport to see its connection close",
    });
    const again = await transport.exec(sh`echo two`);
    expect(again.stdout).toBe("two\n");
    const newSession = (await transport.exec(sh`ps -o ppid= -p $PPID`)).stdout.trim();
    expect(newSession).not.toBe(session);
    await transport.close();
  });

  it("moves to a new connection when sshd refuses a channel, keeps using it, and close() leaves no connection open", async () => {
    const sockets = () => process.getActiveResourcesInfo().filter((r) => r === "TCPSocketWrap").length;
    const before = sockets();
    const transport = sshTransport({}, clientKey);
    const session = async () => (await transport.exec(sh`ps -o ppid= -p $PPID`)).stdout.trim();
    const first = await session();
    // sshd allows 10 sessions per connection (testbench/sshd.ts, MaxSessions 10): ten kept shells fill the
    // first connection, so the next command's channel is refused ("open failed") and the transport
    // drops that connection for a new one
    await Promise.all(Array.from({ length: 10 }, () => transport.openShell()));
    const second = await session();
    expect(second).not.toBe(first);
    // once sshd saw the first connection end, the transport has long seen its "close"
    await until(
      async () => (await run("ps", ["-o", "pid=", "-p", first]).catch(() => undefined)) === undefined,
      {
        what: "sshd's session of the dropped connection to end",
      },
    );
    // that late "close" must not make the transport forget the connection that replaced it
    expect(await session()).toBe(second);
    await transport.close();
    // before the fix a third connection was opened and left open, with ssh2's keepalive timer, after close()
    await until(() => sockets() <= before, { what: "every connection the transport opened to be closed" });
  });
});

describe.each([
  ["local", () => local],
  ["local kept shell", () => new KeptShell(local, 10_000)],
] as const)("the bot's own login files: %s", (_name, get) => {
  // bash started with a socket for stdin (node's pipes are socket pairs) and SHLVL under 1 reads
  // ~/.bashrc as if rshd had started it (Debian's bash is built with SSH_SOURCE_BASHRC). This machine's
  // root .bashrc runs `pyenv init`: 100 ms a command, and a minute's wait on a lock a killed one left.
  it("runs each command without reading the bot user's ~/.bashrc", async () => {
    const home = await tempDir("modelswap-home-");
    const saved = { HOME: process.env.HOME, SHLVL: process.env.SHLVL };
    const transport = get();
    try {
      await writeFile(join(home.path, ".bashrc"), 'echo "read ~/.bashrc" >&2\n');
      process.env.HOME = home.path;
      process.env.SHLVL = "0";
      const result = await transport.exec(sh`echo ran`);
      expect(result).toMatchObject({ code: 0, stdout: "ran\n", stderr: "" });
    } finally {
      for (const [name, value] of Object.entries(saved))
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      if (transport instanceof KeptShell) await transport.close();
      await home.remove();
    }
  });
});

describe("quote", () => {
  it("leaves plain words alone and quotes everything else", () => {
    expect(quote("sglang-qwen.service")).toBe("sglang-qwen.service");
    expect(quote("")).toBe("''");
    expect(quote("it's")).toBe(`'it'\\''s'`);
    expect(() => quote("a\0b")).toThrow(/NUL/);
  });
});

describe("the SSH transport's log", () => {
  it("names the host once in each of its lines, as the bot builds it (createTransport)", async () => {
    const raw: string[] = [];
    const logger = createLogger({
      level: "debug",
      destination: new Writable({
        write(chunk, _encoding, done) {
          raw.push(...String(chunk).split("\n").filter(Boolean));
          done();
        },
      }),
    });
    const transport = createTransport(
      {
        name: "logged-host",
        ssh: {
          address: "127.0.0.1",
          port: sshd.port,
          user: process.env.USER ?? "root",
          privateKeyPath: clientKey,
          hostKeySha256: sshd.hostKeySha256(),
          connectTimeoutSeconds: 5,
          keepaliveSeconds: 5,
          maxSessions: 4,
        },
        commandTimeoutSeconds: 10,
        extraPath: [],
      },
      logger,
    );
    try {
      expect((await transport.exec(sh`echo hi`)).stdout).toBe("hi\n");
    } finally {
      await transport.close();
    }
    const connected = raw.filter((line) => line.includes('"msg":"ssh connected"'));
    expect(connected).toHaveLength(1);
    expect(JSON.parse(connected[0]!)).toMatchObject({ host: "logged-host" });
    // JSON.parse keeps the last of two equal keys: the raw text says whether the line had two
    expect(raw.flatMap((line) => duplicateKeys(line).map((key) => `${key} in ${line}`))).toEqual([]);
  });
});
