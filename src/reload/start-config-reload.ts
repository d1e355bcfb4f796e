import { hostname } from "node:os";
import type { HostConfig } from "../config/file-schema.ts";
import type { LiveConfig } from "../config/live-config.ts";
import { describeError } from "../errors.ts";
import type { HostRegistry } from "../host/host-registry.ts";
import type { Logger } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { createRedis } from "../redis/redis-connection.ts";
import type { AccessControl } from "../slack/access-control.ts";
import { ConfigNotes } from "../store/config-notes.ts";
import type { Store } from "../store/store.ts";
import { withTimeout } from "../with-timeout.ts";
import { ConfigReloader, type ReloadResult, type ReloadTrigger } from "./config-reloader.ts";
import { watchConfigFile } from "./watch-config-file.ts";

export type { ReloadResult } from "./config-reloader.ts";

/** How often hosts whose reloaded settings wait for a swap are looked at (no Redis call when none waits). */
const SETTLE_EVERY_MS = 5000;
/**
 * How long a reload waits to learn whether a swap holds a changed host: past it (Redis away) the host
 * keeps its settings until its lock can be read, as if a swap held it.
 */
const HOLDER_WAIT_MS = 3000;

export interface ConfigReloadOptions {
  live: LiveConfig;
  roles: { bot: boolean; worker: boolean };
  hosts: HostRegistry<HostConfig>;
  /** The bot role's access control: who may request and approve. */
  access?: Pick<AccessControl, "update"> | undefined;
  /** The worker role's health monitor: its schedules follow the hosts and `health:`. */
  monitor?: { reconfigure(): Promise<void> } | undefined;
  /** Host locks (a host a swap holds keeps its settings until it ends), the audit stream, and a connection that may publish. */
  store: Pick<Store, "locks" | "audit" | "redis">;
  /** Registers the notes' own connection with the process's Redis reachability watch. */
  watchConnection?: (connection: RedisClient, source: string) => void;
  log: Logger;
}

export interface RunningConfigReload {
  /** Reads the config file again now (SIGHUP). */
  reload(trigger: ReloadTrigger): Promise<ReloadResult>;
  stop(): Promise<void>;
}

/** `bot`, `worker` or `bot+worker`, at this machine, with this pid: who a process is in reload records. */
export function processName(roles: { bot: boolean; worker: boolean }): string {
  const role = roles.bot && roles.worker ? "bot+worker" : roles.bot ? "bot" : "worker";
  return `${role}@${hostname()}:${process.pid}`;
}

/**
 * Starts what makes a process follow its config file while it runs: a watch of the file
 * (MODELSWAP_WATCH_CONFIG, default on), the notes other processes send when they have loaded one (Redis
 * pub/sub), and the look at hosts whose new settings wait for their swap. SIGHUP is the caller's: it calls
 * `reload`. Reads the file once at once (it may have changed since the start read it) and tells the
 * other processes which file this one runs.
 */
export async function startConfigReload(options: ConfigReloadOptions): Promise<RunningConfigReload> {
  const { live, roles, hosts, store, watchConnection } = options;
  const log = options.log.child({ name: "config" });
  const holderOf = (host: string) =>
    withTimeout(
      store.locks.hostHolder(host),
      HOLDER_WAIT_MS,
      () => new Error(`Redis did not say within ${HOLDER_WAIT_MS} ms whether a swap holds ${host}`),
    );
  const reloader = new ConfigReloader({
    live,
    // as at start: a process that runs no worker does not need the hosts' SSH keys
    readFor: { hostKeys: roles.worker },
    process: processName(roles),
    hosts,
    holderOf,
    ...(options.access === undefined ? {} : { access: options.access }),
    ...(options.monitor === undefined ? {} : { monitor: options.monitor }),
    audit: store.audit,
    notes: new ConfigNotes(store.redis),
    log: options.log,
  });
  await reloader.reload({ kind: "start" });

  const { env, path } = live.current();
  let watch: { stop(): void } | undefined;
  if (env.MODELSWAP_WATCH_CONFIG) {
    try {
      watch = watchConfigFile(path, () => void reloader.reload({ kind: "file" }));
    } catch (error) {
      log.warn(
        { code: "CONFIG_WATCH_FAILED", err: describeError(error) },
        "cannot watch the config file: a change to it is read on SIGHUP (or a note from another process) only; if the system's inotify watches are used up, raise fs.inotify.max_user_watches",
      );
    }
  }

  const subscriber = createRedis(env, "worker");
  watchConnection?.(subscriber, "config notes");
  ConfigNotes.listen(subscriber, (note) => void reloader.heard(note)).catch((error: unknown) =>
    log.warn({ err: describeError(error) }, "cannot hear the other processes' config notes"),
  );

  const settle = setInterval(() => {
    if (hosts.waiting().length > 0) void hosts.settle(holderOf);
  }, SETTLE_EVERY_MS);
  settle.unref();

  return {
    reload: (trigger) => reloader.reload(trigger),
    async stop() {
      watch?.stop();
      clearInterval(settle);
      subscriber.disconnect();
    },
  };
}
