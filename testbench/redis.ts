import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort, freePortWith } from "./free-port.ts";
import { until } from "./until.ts";
import { waitForPort } from "./wait-for-port.ts";

export interface BenchRedis {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Stops redis-server (SIGTERM, it flushes its AOF) and waits for it to exit. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same data directory. */
  start(): Promise<void>;
  /** SIGSTOP: the process is there but answers nothing (a hung machine, a replica that stopped reading). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
}

export interface BenchRedisOptions {
  /**
   * Run in Redis Cluster mode as a one-node cluster that owns all 16384 slots: a plain client works as
   * usual, but every multi-key command, MULTI block and Lua script whose keys span slots is refused
   * (CROSSSLOT), exactly as on a real cluster.
   */
  cluster?: boolean;
  /**
   * A node of a multi-node Redis Cluster (testbench/redis-cluster.ts gives it its slots): cluster mode
   * with this `cluster-node-timeout`, after which a master that does not answer is failed over.
   */
  clusterNodeTimeoutMs?: number;
  /** A replica of the Redis on this loopback port (`replicaof 127.0.0.1 <port>`). */
  replicaOf?: number;
  /** requirepass, and masterauth for a replica (the same password on every node, as Sentinel wants). */
  password?: string;
}

/**
 * A real redis-server of our own on a free loopback port (never the machine's shared one), with AOF and
 * noeviction as production requires.
 */
export async function startRedis(dir: string, options: BenchRedisOptions = {}): Promise<BenchRedis> {
  await mkdir(dir, { recursive: true });
  const clusterNode = options.cluster === true || options.clusterNodeTimeoutMs !== undefined;
  // a cluster node also listens on its bus port, port + 10000 (redis.conf, "cluster-port"): both free
  const pickPort = () => (clusterNode ? freePortWith(CLUSTER_BUS_OFFSET) : freePort());
  let port = await pickPort();
  let child: ChildProcess | undefined;

  const start = async () => {
    child = spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        dir,
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--save",
        "",
        "--maxmemory-policy",
        "noeviction",
        "--logfile",
        join(dir, "redis.log"),
        ...(clusterNode
          ? ["--cluster-enabled", "yes", "--cluster-config-file", join(dir, "nodes.conf")]
          : []),
        ...(options.clusterNodeTimeoutMs === undefined
          ? []
          : ["--cluster-node-timeout", String(options.clusterNodeTimeoutMs)]),
        ...(options.replicaOf === undefined ? [] : ["--replicaof", "127.0.0.1", String(options.replicaOf)]),
        ...(options.password === undefined
          ? []
          : ["--requirepass", options.password, "--masterauth", options.password]),
      ],
      { stdio: "ignore" },
    );
    child.on("error", (error) => {
      throw new Error(
        `redis-server could not be started: ${error.message}. Install it: apt-get install redis-server`,
      );
    });
    // redis-server that exits (a port taken since freePort looked, a bad option) is said at once, with
    // its log's last lines, not after waitForPort's 10 s as "timed out"
    const running = child;
    const exited = new Promise<string>((resolve) =>
      running.once("exit", (code, signal) => resolve(signal === null ? `exit ${code}` : signal)),
    );
    const listening = waitForPort(port, "redis-server").then(() => undefined);
    listening.catch(() => undefined); // when it exited first, the port's wait runs out unheard
    const early = await Promise.race([listening, exited]);
    if (early !== undefined) throw new RedisExited(port, early, await logTail(dir));
    if (options.cluster === true) await ownAllSlots(port);
  };

  const end = async (signal: NodeJS.Signals) => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill(signal);
    if (signal !== "SIGKILL") running.kill("SIGCONT"); // a paused server handles SIGTERM only once resumed
    await exited;
  };

  // the first start only: a port another process took between freePort's look and redis-server's bind
  // is given up for another (a restart keeps its port: clients and replicas know it)
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (error) {
      if (!(error instanceof RedisExited) || !error.portTaken || attempt >= 3) throw error;
      port = await pickPort();
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    stop: () => end("SIGTERM"),
    kill: () => end("SIGKILL"),
    start,
    pause: () => child?.kill("SIGSTOP"),
    resume: () => child?.kill("SIGCONT"),
  };
}

/** A cluster node's bus port is its port + 10000 (redis.conf: cluster-port 0 means so). */
const CLUSTER_BUS_OFFSET = 10_000;

/** redis-server ended before it listened; its log's last lines say why. */
class RedisExited extends Error {
  readonly portTaken: boolean;
  constructor(port: number, how: string, log: string) {
    super(`redis-server on port ${port} ended (${how}) before it listened; its log ends:\n${log}`);
    this.portTaken = /Address already in use/.test(log);
  }
}

async function logTail(dir: string): Promise<string> {
  const log = await readFile(join(dir, "redis.log"), "utf8").catch(() => "(no redis.log)");
  return log.trimEnd().split("\n").slice(-8).join("\n");
}

/** Gives a one-node cluster every slot (kept in nodes.conf across restarts) and waits for cluster_state:ok. */
async function ownAllSlots(port: number): Promise<void> {
  const client = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1 });
  try {
    const info = await client.cluster("INFO");
    if (!/cluster_slots_assigned:16384/.test(info)) await client.cluster("ADDSLOTSRANGE", 0, 16383);
    await until(async () => /cluster_state:ok/.test(await client.cluster("INFO")), {
      what: `the one-node Redis Cluster on ${port} to reach cluster_state:ok`,
      timeoutMs: 10_000,
    });
  } finally {
    client.disconnect();
  }
}
