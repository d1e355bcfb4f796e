import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Cluster, Redis } from "ioredis";
import { REPORT_QUEUE } from "../src/queue/report-queue.ts";
import type { RedisClient } from "../src/redis/redis-client.ts";
import { QUEUE_PREFIX } from "../src/store/keys.ts";
import type { Bench } from "./bench.ts";
import { type BenchRedis, startRedis } from "./redis.ts";
import { type BenchCluster, startCluster } from "./redis-cluster.ts";
import { type BenchSentinel, startSentinel } from "./redis-sentinel.ts";
import { SwapDriver, unitOf } from "./swap-driver.ts";
import { until } from "./until.ts";

export type FailoverKind = "sentinel" | "cluster";

/**
 * A Redis deployment that fails over: the bot is given `env` instead of REDIS_URL, the driver reads
 * through `client` (which follows the failover as the bot does), and `failOver` SIGKILLs the master
 * that holds modelswap's keys and resolves once a replica serves them.
 */
export interface FailoverTopology {
  readonly kind: FailoverKind;
  readonly env: Record<string, string>;
  readonly client: RedisClient;
  /** How many WAIT commands the master of modelswap's slot has run (INFO commandstats). */
  waitsOnMaster(): Promise<number>;
  failOver(): Promise<{ ms: number; from: number; to: number }>;
  stop(): Promise<void>;
}

const MASTER_NAME = "modelswap";

/**
 * A primary and its replica (AOF on, noeviction) under one real Sentinel (quorum 1) that calls the
 * primary down after 1 s without an answer, as the Redis docs' minimal setup does with shorter timers
 * (https://redis.io/docs/latest/operate/oss_and_stack/management/sentinel/).
 */
export async function startSentinelTopology(dir: string): Promise<FailoverTopology> {
  const primary = await startRedis(join(dir, "primary"));
  const servers: BenchRedis[] = [primary];
  let sentinel: BenchSentinel | undefined;
  try {
    servers.push(await startRedis(join(dir, "replica"), { replicaOf: primary.port }));
    await until(
      async () => /^master_link_status:up/m.test(await info(servers[1] as BenchRedis, "replication")),
      {
        what: "the replica's link to the primary",
      },
    );
    sentinel = await startSentinel(join(dir, "sentinel"), {
      masterPort: primary.port,
      masterName: MASTER_NAME,
      downAfterMs: 1000,
      failoverTimeoutMs: 10_000,
      replicas: 1,
    });
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop()));
    throw error;
  }
  const theSentinel = sentinel;
  const client = new Redis({
    sentinels: [{ host: "127.0.0.1", port: theSentinel.port }],
    name: MASTER_NAME,
    maxRetriesPerRequest: null,
  });
  client.on("error", () => undefined);
  const masterPort = async () => {
    const ask = new Redis({ port: theSentinel.port, host: "127.0.0.1", maxRetriesPerRequest: 1 });
    try {
      const [, port] = (await ask.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)) as [
        string,
        string,
      ];
      return Number(port);
    } finally {
      ask.disconnect();
    }
  };
  const serverOn = async () => {
    const port = await masterPort();
    const server = servers.find((s) => s.port === port);
    if (server === undefined)
      throw new Error(`the sentinel names a master on ${port}, which the bench did not start`);
    return server;
  };
  return {
    kind: "sentinel",
    env: { REDIS_SENTINELS: theSentinel.address, REDIS_SENTINEL_MASTER: MASTER_NAME },
    client,
    waitsOnMaster: async () => waitsOn(await serverOn()),
    async failOver() {
      const old = await serverOn();
      const started = Date.now();
      await old.kill();
      let to = old.port;
      await until(
        async () => {
          to = await masterPort();
          if (to === old.port) return false;
          const promoted = servers.find((s) => s.port === to);
          return promoted !== undefined && /^role:master/m.test(await info(promoted, "replication"));
        },
        { what: `the sentinel to promote the replica after 127.0.0.1:${old.port} died`, timeoutMs: 60_000 },
      );
      return { ms: Date.now() - started, from: old.port, to };
    },
    async stop() {
      client.disconnect();
      await theSentinel.stop();
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}

/** Three masters with a replica each, joined by redis-cli --cluster create (testbench/redis-cluster.ts). */
export async function startClusterTopology(dir: string): Promise<FailoverTopology> {
  const cluster: BenchCluster = await startCluster(dir, { masters: 3, nodeTimeoutMs: 2000 });
  const client = new Cluster([...cluster.startupNodes], {
    redisOptions: { maxRetriesPerRequest: null },
    retryDelayOnClusterDown: 250,
    maxRedirections: 500,
  });
  client.on("error", () => undefined);
  return {
    kind: "cluster",
    env: { REDIS_CLUSTER_NODES: cluster.addresses },
    client,
    waitsOnMaster: async () => waitsOn(await cluster.masterOf()),
    async failOver() {
      const old = await cluster.masterOf();
      const started = Date.now();
      await old.kill();
      const promoted = await cluster.waitFailover(old);
      return { ms: Date.now() - started, from: old.port, to: promoted.port };
    },
    async stop() {
      client.disconnect();
      await cluster.stop();
    },
  };
}

export function startFailoverTopology(kind: FailoverKind, dir: string): Promise<FailoverTopology> {
  return kind === "sentinel" ? startSentinelTopology(dir) : startClusterTopology(dir);
}

async function info(server: BenchRedis, section: string): Promise<string> {
  const client = new Redis({ port: server.port, host: "127.0.0.1", maxRetriesPerRequest: 1 });
  client.on("error", () => undefined);
  try {
    return await client.info(section);
  } finally {
    client.disconnect();
  }
}

async function waitsOn(server: BenchRedis): Promise<number> {
  return Number(/^cmdstat_wait:calls=(\d+)/m.exec(await info(server, "commandstats"))?.[1] ?? "0");
}

/** What the host and the channel saw of a swap whose Redis failed over in the middle of its switch. */
export interface FailoverSwap {
  swapId: string;
  cardTs: string;
  /** The card's last word: Swapped, Rolled back, Failed, or what it says when none came. */
  outcome: string;
  /** Host side effects that ran more than once (below), summed. */
  duplicates: number;
  /**
   * How many times each ran: the new unit started, the old stopped, the model downloaded; the benchmark's
   * settings and its runs (a setting run twice is a duplicate).
   */
  sideEffects: {
    newUnitStarts: number;
    oldUnitStops: number;
    downloads: number;
    benchmarkSettings: number;
    benchmarkRuns: number;
  };
  /** Cards and plans posted for the swap (1 each when nothing was repeated in Slack). */
  cards: number;
  plans: number;
  /** WAITs the master had run when it was killed: the lock, lease and saves confirmed by the replica. */
  waitsBeforeKill: number;
  failover: { ms: number; from: number; to: number };
  /** The bot's warnings and errors during the swap (pino lines, level 40 and up). */
  problems: string[];
  driver: SwapDriver;
}

/**
 * One swap through a failover: the real `modelswap start` (a child process) is given the topology's
 * variables, a swap is requested and approved, and when the host is in the middle of the switch (the old
 * unit stopped, `systemctl enable --now` of the new one held) the master holding modelswap's keys is
 * SIGKILLed. Once a replica has taken over, the held command runs and the swap is followed to its end.
 */
export async function swapThroughFailover(
  bench: Bench,
  topology: FailoverTopology,
  { host, model, outcomeWithinMs = 180_000 }: { host: string; model: string; outcomeWithinMs?: number },
): Promise<FailoverSwap> {
  delete bench.env.REDIS_URL;
  Object.assign(bench.env, topology.env);
  const driver = new SwapDriver(bench, { redis: topology.client });
  const sim = bench.host(host).sim;
  const bot = await bench.spawnBot();
  const card = await driver.request(model, host);
  const swapId = driver.swapId(card.ts);
  await driver.plan(card.ts);
  const oldUnit = (await driver.record(swapId))?.previous?.unit;
  if (oldUnit === undefined) throw new Error("the plan names no unit serving before");
  const oldStopsBefore = await driver.stopsOf(host, oldUnit);
  const callsBefore = (await sim.calls()).length;
  await sim.hold("systemctl", " enable --now");
  await driver.approve(card.ts);
  await sim.waitHeld("systemctl", 120_000);
  const waitsBeforeKill = await topology.waitsOnMaster();
  const failover = await topology.failOver();
  await sim.release("systemctl");
  const end = await driver
    .outcome(card.ts, /Swapped|Rolled back|Failed/, outcomeWithinMs)
    .catch(() => driver.card(card.ts));
  const said = /Swapped|Rolled back|Failed/.exec(end.text)?.[0];
  const problems = await problemsIn(bot.logPath);
  // no outcome in time: the bot's warnings and errors, and where the reporter's jobs are, say why
  const outcome =
    said ??
    `no outcome: ${end.text.slice(0, 80)}\n${problems.slice(-15).join("\n")}\nreport jobs: ${await reportJobs(topology.client)}`;
  const record = await driver.record(swapId);
  const newUnit = unitOf(record);
  const calls = (await sim.calls()).slice(callsBefore);
  // a swap benchmarks twice (single-stream, then loaded: two settings); a setting run again is a duplicate
  const benchmarkRuns = calls
    .filter((c) => c.cmd === "python" && c.argv.some((arg) => arg.includes("bench_serving")))
    .map((c) => c.argv.join(" "));
  const sideEffects = {
    newUnitStarts: await driver.startsOf(host, newUnit),
    oldUnitStops: (await driver.stopsOf(host, oldUnit)) - oldStopsBefore,
    downloads: calls.filter((c) => c.cmd === "hf" && c.argv[0] === "download").length,
    benchmarkSettings: new Set(benchmarkRuns).size,
    benchmarkRuns: benchmarkRuns.length,
  };
  const duplicates =
    Math.max(0, sideEffects.newUnitStarts - 1) +
    Math.max(0, sideEffects.oldUnitStops - 1) +
    Math.max(0, sideEffects.downloads - 1) +
    (sideEffects.benchmarkRuns - sideEffects.benchmarkSettings);
  return {
    swapId,
    cardTs: card.ts,
    outcome,
    duplicates,
    sideEffects,
    cards: driver.cardsOf(swapId).length,
    plans: driver.plansOf(card.ts).length,
    waitsBeforeKill,
    failover,
    problems,
    driver,
  };
}

/** The last warnings and errors of a bot's log (pino: level 40 and up), one line each. */
async function problemsIn(logPath: string): Promise<string[]> {
  const text = await readFile(logPath, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => /"level":(40|50|60)/.test(line))
    .map((line) => line.slice(0, 400));
}

/** The reporter queue's job counts by state, as JSON (what a stuck reporter left behind). */
async function reportJobs(client: RedisClient): Promise<string> {
  const queue = new Queue(REPORT_QUEUE, { connection: client, prefix: QUEUE_PREFIX });
  try {
    return JSON.stringify(await queue.getJobCounts());
  } catch (error) {
    return `unreadable (${(error as Error).message})`;
  } finally {
    await queue.close().catch(() => undefined);
  }
}
