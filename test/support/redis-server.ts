import { Redis, type RedisOptions } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import { type BenchRedis, startRedis } from "../../testbench/redis.ts";
import { tempDir } from "./tmp.ts";

/**
 * A redis-server of the test file's own (never the machine's), started before its tests with a client
 * of it, both stopped and the data directory removed after them; `ready` hands them over. Register it
 * before the file's own hooks: its afterAll then runs last (vitest runs after-hooks as a stack), so the
 * file closes its queues and extra clients while the server still answers.
 */
export function useRedisServer(
  ready: (redis: Redis, server: BenchRedis) => void | Promise<void>,
  options: RedisOptions = {},
): void {
  let removeDir: (() => Promise<void>) | undefined;
  let server: BenchRedis | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    const dir = await tempDir();
    removeDir = dir.remove;
    server = await startRedis(dir.path);
    redis = new Redis(server.url, options);
    await ready(redis, server);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
    await removeDir?.();
  });
}
