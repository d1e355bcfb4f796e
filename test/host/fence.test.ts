import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asCodedError } from "../../src/errors.ts";
import { type FenceToken, fenceDir, fencedExec, fencedTransport } from "../../src/host/fence.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { sh } from "../../src/host/shell-quote.ts";
import { SshTransport } from "../../src/host/ssh-transport.ts";
import type { CommandRunner } from "../../src/host/transport.ts";
import { createLogger } from "../../src/log.ts";
import { type BenchSshd, startSshd } from "../../testbench/sshd.ts";
import { until } from "../../testbench/until.ts";
import { tempDir } from "../support/tmp.ts";

/**
 * The fence on a host (src/host/fence.ts), over a real sshd and the local transport: a command carrying a
 * number smaller than one the host has seen is refused there, before it runs, whatever the bot believes;
 * a command holding the fence keeps a newer one waiting until it ends, so no stale command can slip in
 * between a compare and its effect; what a fenced command leaves running does not keep the fence locked.
 */
const log = createLogger({ level: "silent" });
let dir: { path: string; remove: () => Promise<void> };
let sshd: BenchSshd;
let ssh: SshTransport;
let local: LocalTransport;
let noFlockBin: string;

beforeAll(async () => {
  dir = await tempDir();
  sshd = await startSshd(join(dir.path, "sshd"));
  const login = await sshd.authorize({ PATH: "/usr/local/bin:/usr/bin:/bin" });
  ssh = new SshTransport({
    hostName: "fenced-host",
    ssh: {
      address: "127.0.0.1",
      port: sshd.port,
      user: process.env.USER ?? "root",
      privateKeyPath: login.privateKeyPath,
      hostKeySha256: sshd.hostKeySha256(),
      connectTimeoutSeconds: 5,
      keepaliveSeconds: 5,
      maxSessions: 4,
    },
    commandTimeoutMs: 10_000,
    log,
  });
  local = new LocalTransport({ hostName: "local-host", commandTimeoutMs: 10_000 });
  // a PATH with bash and coreutils but no flock
  noFlockBin = join(dir.path, "no-flock-bin");
  await mkdir(noFlockBin);
  for (const tool of ["bash", "mkdir", "cat", "mv", "echo", "sleep"])
    await writeFile(
      join(noFlockBin, tool),
      `#!/bin/sh\nexec /usr/bin/env -i PATH=/usr/bin:/bin ${tool} "$@"\n`,
      {
        mode: 0o755,
      },
    );
});

afterAll(async () => {
  await ssh?.close();
  await sshd?.stop();
  await dir?.remove();
});

/** A run's token whose catch-up is refused (it lost its lease) unless `holds`. */
function token(number: number, holds = false): FenceToken & { caughtUp: number[] } {
  let n = number;
  const caughtUp: number[] = [];
  return {
    caughtUp,
    get number() {
      return n;
    },
    async catchUp(seen) {
      caughtUp.push(seen);
      if (!holds) return false;
      n = seen + 1;
      return true;
    },
  };
}

const transports: [string, () => CommandRunner][] = [
  ["ssh", () => ssh],
  ["local", () => local],
];

describe.each(transports)("the fence over %s", (name, transport) => {
  const fenceAt = () => fenceDir(join(dir.path, name, "models"));
  const run = (number: FenceToken, command = sh`echo ran`) =>
    fencedExec(transport(), { dir: fenceAt(), token: number }, command, { timeoutMs: 10_000 });

  it("runs a command with the newest number, and refuses an older one on the host, before it runs", async () => {
    const marker = join(dir.path, name, "marker");
    expect((await run(token(5), sh`echo ran`)).stdout).toBe("ran\n");
    expect((await run(token(7), sh`echo ran`)).stdout).toBe("ran\n");
    expect(await readFile(join(fenceAt(), "fence"), "utf8")).toBe("7\n");
    const late = token(5);
    const refused = await run(late, sh`touch ${marker}`).catch((e: unknown) => e);
    expect(asCodedError(refused).code).toBe("FENCE_STALE");
    expect(asCodedError(refused).message).toMatch(/has seen run 7, later than this one \(5\)/);
    // the late run was asked whether it still held its lease, and did not: nothing ran
    expect(late.caughtUp).toEqual([7]);
    await expect(readFile(marker)).rejects.toThrow(/ENOENT/);
    // the same number again is the same run: it goes on
    expect((await run(token(7))).code).toBe(0);
  });

  it("raises a run's number above the host's when the run still holds its lease (Redis lost its counter)", async () => {
    await run(token(100));
    const holder = token(3, true);
    expect((await run(holder, sh`echo caught up`)).stdout).toBe("caught up\n");
    expect(holder.number).toBe(101);
    expect(await readFile(join(fenceAt(), "fence"), "utf8")).toBe("101\n");
  });

  it("keeps a newer command waiting while an older one holds the fence, then refuses the older run's next", async () => {
    const started = join(dir.path, name, "started");
    const slow = run(token(200), sh`touch ${started}; sleep 2; echo slow done`);
    await until(async () => (await readFile(started).catch(() => undefined)) !== undefined, {
      what: "the slow command to start",
    });
    const began = Date.now();
    const newer = await run(token(201), sh`echo newer`);
    expect(newer.stdout).toBe("newer\n");
    expect(Date.now() - began).toBeGreaterThan(1000);
    expect((await slow).stdout).toBe("slow done\n");
    expect(asCodedError(await run(token(200)).catch((e: unknown) => e)).code).toBe("FENCE_STALE");
  });

  it("does not stay locked by what a fenced command leaves running (a detached task)", async () => {
    const pidFile = join(dir.path, name, "bg.pid");
    await run(token(300), sh`setsid nohup sleep 30 >/dev/null 2>&1 < /dev/null & echo $! > ${pidFile}`);
    const began = Date.now();
    expect((await run(token(301), sh`echo free`)).stdout).toBe("free\n");
    expect(Date.now() - began).toBeLessThan(5000);
    const pid = Number(await readFile(pidFile, "utf8"));
    process.kill(pid, "SIGKILL");
  });

  it("keeps a command's standard input and exit status", async () => {
    const fenced = fencedTransport(transport(), { dir: fenceAt(), token: token(400) }, 10_000);
    const echoed = await fenced.exec(sh`cat; exit 3`, { stdin: "unit text\n" });
    expect(echoed).toMatchObject({ code: 3, stdout: "unit text\n" });
  });

  it("refuses, with what to do, a fence file that is not a number", async () => {
    await writeFile(join(fenceAt(), "fence"), "garbage\n");
    const refused = asCodedError(await run(token(500)).catch((e: unknown) => e));
    expect(refused.code).toBe("FENCE_UNAVAILABLE");
    expect(refused.fix).toMatch(/remove .*\/fence on the host/);
    await writeFile(join(fenceAt(), "fence"), "400\n");
  });
});

describe("a host without flock", () => {
  it("refuses every change, saying what to install", async () => {
    const bare = new LocalTransport({
      hostName: "bare-host",
      commandTimeoutMs: 10_000,
      extraPath: [noFlockBin],
    });
    const marker = join(dir.path, "no-flock-marker");
    const refused = asCodedError(
      await fencedExec(
        {
          hostName: "bare-host",
          exec: (command, options) => bare.exec(sh`PATH=${noFlockBin}; ${command}`, options),
        },
        { dir: fenceDir(join(dir.path, "bare", "models")), token: token(1) },
        sh`touch ${marker}`,
        { timeoutMs: 10_000 },
      ).catch((e: unknown) => e),
    );
    expect(refused.code).toBe("FENCE_UNAVAILABLE");
    expect(refused.fix).toMatch(/util-linux/);
    await expect(readFile(marker)).rejects.toThrow(/ENOENT/);
  });
});
