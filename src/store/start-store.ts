import { engineOfHost } from "../config/host-engines.ts";
import type { Config } from "../config/load-config.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { waitReady } from "../redis/redis-connection.ts";
import { migrateStore } from "./migrate.ts";
import type { Store } from "./store.ts";

/* What a process does with the store as it starts: migrate it, and wait briefly for Redis. */

/**
 * Brings an older deployment's keys to this version's layout before anything reads them (several
 * processes starting at once: one migrates, the others wait for it). Redis being down is not fatal here:
 * nothing can be read then either, and the next start migrates. A record that named no engine ran the
 * host's (its config's; a host no longer configured: SGLang's).
 */
export async function migrateOnStart(store: Store, log: Logger, config: Config): Promise<void> {
  try {
    const result = await migrateStore(store, log.child({ name: "migrate" }), engineOfHost(config.file.hosts));
    if (result.migrated > 0) log.info(result, "store migrated to this version's key layout");
  } catch (error) {
    log.error({ err: describeError(error) }, "could not migrate the store; old records stay where they were");
  }
}

/** Waits (briefly) for a fail-fast connection to be up, so the first command does not race it. */
export async function ready(connection: RedisClient, log: Logger): Promise<void> {
  if (!(await waitReady(connection, 5000)))
    log.warn("Redis is not reachable yet: commands will answer that the queue is unavailable until it is");
}
