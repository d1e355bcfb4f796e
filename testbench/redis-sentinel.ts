import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "./free-port.ts";
import { until } from "./until.ts";
import { waitForPort } from "./wait-for-port.ts";

export interface SentinelOptions {
  /** The port of the Redis to monitor (on 127.0.0.1), e.g. the bench's `redis.port`. */
  masterPort: number;
  /** The master group name (`sentinel monitor <name> …`). Default `modelswap`. */
  masterName?: string;
  /** The monitored Redis's requirepass, when it has one (`sentinel auth-pass`). */
  masterPassword?: string;
  /** The sentinel's own password (`requirepass` in sentinel mode). */
  password?: string;
  /** `down-after-milliseconds`: how long the master may not answer before it is failed over (default 5000). */
  downAfterMs?: number;
  /** `failover-timeout` (default Sentinel's 180000). */
  failoverTimeoutMs?: number;
  /** Replicas the sentinel must have found (from the master's INFO) before this returns (default 0). */
  replicas?: number;
}

export interface BenchSentinel {
  readonly port: number;
  readonly masterName: string;
  /** `127.0.0.1:<port>`, as REDIS_SENTINELS lists it. */
  readonly address: string;
  readonly dir: string;
  /** Stops the sentinel and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * A real Redis Sentinel (`redis-server <conf> --sentinel`; Debian's redis-server package ships no
 * separate redis-sentinel binary) on a free loopback port, monitoring one master with quorum 1. Returns
 * once the sentinel has connected to the master and reports it up, so a client asking it for the master
 * gets the real address.
 */
export async function startSentinel(dir: string, options: SentinelOptions): Promise<BenchSentinel> {
  await mkdir(dir, { recursive: true });
  const port = await freePort();
  const masterName = options.masterName ?? "modelswap";
  const confPath = join(dir, "sentinel.conf");
  // the sentinel rewrites this file as it learns the topology: it must stay writable, in its own dir
  await writeFile(
    confPath,
    [
      `port ${port}`,
      "bind 127.0.0.1",
      `dir ${dir}`,
      `logfile ${join(dir, "sentinel.log")}`,
      `sentinel monitor ${masterName} 127.0.0.1 ${options.masterPort} 1`,
      `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 5000}`,
      ...(options.failoverTimeoutMs === undefined
        ? []
        : [`sentinel failover-timeout ${masterName} ${options.failoverTimeoutMs}`]),
      ...(options.masterPassword === undefined
        ? []
        : [`sentinel auth-pass ${masterName} ${options.masterPassword}`]),
      ...(options.password === undefined ? [] : [`requirepass ${options.password}`]),
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  const child: ChildProcess = spawn("redis-server", [confPath, "--sentinel"], { stdio: "ignore" });
  child.on("error", (error) => {
    throw new Error(
      `redis-server --sentinel could not be started: ${error.message}. Install it: apt-get install redis-server`,
    );
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  try {
    await waitForPort(port, "redis-server --sentinel");
    await waitMasterUp(port, masterName, options.password, options.replicas ?? 0);
  } catch (error) {
    await stop();
    throw error;
  }
  return { port, masterName, address: `127.0.0.1:${port}`, dir, stop };
}

/** Waits until the sentinel has reached the master (its flags say `master`, nothing else) and found its replicas. */
async function waitMasterUp(
  port: number,
  name: string,
  password: string | undefined,
  replicas: number,
): Promise<void> {
  const client = new Redis({ port, host: "127.0.0.1", ...(password === undefined ? {} : { password }) });
  let flags = "";
  try {
    await until(
      async () => {
        const fields = (await client.call("SENTINEL", "MASTER", name)) as string[];
        flags = fields[fields.indexOf("flags") + 1] ?? "";
        const lastOk = Number(fields[fields.indexOf("last-ok-ping-reply") + 1] ?? "-1");
        const found = Number(fields[fields.indexOf("num-slaves") + 1] ?? "0");
        return flags === "master" && lastOk >= 0 && lastOk < 2000 && found >= replicas;
      },
      { what: `the sentinel on ${port} to see master ${name} up`, timeoutMs: 10_000, intervalMs: 100 },
    );
  } catch (error) {
    throw new Error(`${(error as Error).message} (its flags: ${flags || "none read"})`, { cause: error });
  } finally {
    client.disconnect();
  }
}
