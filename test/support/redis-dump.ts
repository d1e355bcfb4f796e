import { Redis } from "ioredis";

/**
 * Every key of a Redis and its whole value as text (strings, hashes, lists, sets, sorted sets, streams),
 * for "this never reaches Redis" sweeps. Values are read as binary-safe buffers and decoded as latin1, so
 * a secret inside a packed (msgpack) BullMQ field is still found byte for byte.
 */
export async function dumpRedis(url: string): Promise<Map<string, string>> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  const out = new Map<string, string>();
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scanBuffer(cursor, "COUNT", 500);
      cursor = String(next);
      for (const keyBuffer of keys) {
        const key = keyBuffer.toString("latin1");
        out.set(key, await valueText(redis, keyBuffer));
      }
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
  return out;
}

async function valueText(redis: Redis, key: Buffer): Promise<string> {
  const type = await redis.type(key);
  const text = (parts: readonly (Buffer | string)[]) =>
    parts.map((p) => (typeof p === "string" ? p : p.toString("latin1"))).join("\n");
  switch (type) {
    case "string":
      return (await redis.getBuffer(key))?.toString("latin1") ?? "";
    case "hash":
      return text(await redis.hgetallBuffer(key).then((h) => Object.entries(h).flat()));
    case "list":
      return text(await redis.lrangeBuffer(key, 0, -1));
    case "set":
      return text(await redis.smembersBuffer(key));
    case "zset":
      return text(await redis.zrangeBuffer(key, "0", "-1", "WITHSCORES"));
    case "stream": {
      const entries = (await redis.xrangeBuffer(key, "-", "+")) as unknown as [Buffer, Buffer[]][];
      return text(entries.flatMap(([id, fields]) => [id, ...fields]));
    }
    case "none":
      return ""; // expired between SCAN and TYPE
    default:
      throw new Error(`dumpRedis: no reader for ${type} key ${key.toString("latin1")}`);
  }
}
