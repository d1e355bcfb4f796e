import type { Queue } from "bullmq";
import { Gauge, Registry } from "prom-client";
import type { Logger } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { withTimeout } from "../with-timeout.ts";
import { bullmqRegistry } from "./bullmq-metrics.ts";
import { registerHostMetrics } from "./host-metrics.ts";
import { type DeploymentState, readDeployment } from "./read-deployment.ts";
import { registerSwapMetrics } from "./swap-metrics.ts";

export interface CollectDeps {
  /** This process's own metrics (its Slack calls); modelswap_redis_up is added to it. */
  registry: Registry;
  /** A fail-fast connection: a scrape while Redis is down answers at once, without the Redis families. */
  redis: RedisClient;
  /** The queues whose job counts BullMQ exports. */
  queues: readonly Queue[];
  /** The configured hosts, as they are at each scrape (a reload may add or remove some). */
  hosts: () => readonly string[];
  /** How long the Redis reads of one scrape may take. */
  timeoutMs?: number;
  /** Where a corrupt value read during a scrape is reported (STORE_RECORD_INVALID); stderr without it. */
  log?: Logger;
}

/**
 * The /metrics scrape, in prom-client registries: this process's own (its Slack calls, and
 * modelswap_redis_up), then the deployment's, whose metrics' collect() callbacks fill them from what
 * this scrape read from Redis, then BullMQ's job counts per queue. When Redis cannot be read in time the
 * scrape still answers, with `modelswap_redis_up 0` and without the Redis families.
 */
export class MetricsCollector {
  private readonly deployment = new Registry();
  private readonly redisUp: Gauge;
  /** What this scrape read; set only while one renders. */
  private state: DeploymentState | undefined;
  /** Scrapes run one after the other: they share the metrics that `state` fills. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: CollectDeps) {
    this.redisUp = new Gauge({
      name: "modelswap_redis_up",
      help: "1 when this process could read the Redis families of this scrape, 0 when Redis did not answer in time (they are left out).",
      registers: [deps.registry],
    });
    const state = () => {
      if (this.state === undefined) throw new Error("deployment metrics are collected only during a scrape");
      return this.state;
    };
    registerSwapMetrics(this.deployment, state);
    registerHostMetrics(this.deployment, state);
  }

  /** The text of one scrape, and why Redis could not be read when it could not. */
  scrape(): Promise<{ text: string; redisError: string | undefined }> {
    const next = this.last.then(() => this.scrapeNow());
    this.last = next.catch(() => undefined);
    return next;
  }

  private async scrapeNow(): Promise<{ text: string; redisError: string | undefined }> {
    const { redis, queues, hosts, timeoutMs = 3000 } = this.deps;
    let redisError: string | undefined;
    try {
      this.state = await withTimeout(
        readDeployment(redis, queues, hosts(), this.deps.log),
        timeoutMs,
        () => new Error(`Redis did not answer within ${timeoutMs} ms`),
      );
    } catch (error) {
      redisError = (error as Error).message;
    }
    try {
      this.redisUp.set(redisError === undefined ? 1 : 0);
      const parts = [await this.deps.registry.metrics()];
      if (this.state !== undefined)
        parts.push(await this.deployment.metrics(), await bullmqRegistry(this.state.bullmq).metrics());
      return { text: parts.join(""), redisError };
    } finally {
      this.state = undefined;
    }
  }
}
