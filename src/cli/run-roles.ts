import { loadConfig } from "../config/load-config.ts";
import { type Roles, startModelswap } from "../main.ts";

/**
 * `modelswap start`, `bot` and `worker`: runs the roles until SIGTERM or SIGINT, then stops and exits; on
 * SIGHUP reads the config file again.
 */
export async function runRoles(roles: Roles, env: NodeJS.ProcessEnv): Promise<number> {
  // the bot role alone never reaches a host: it needs no SSH key (the Slack-facing process should hold none)
  const config = await loadConfig(env, undefined, { hostKeys: roles.worker });
  const running = await startModelswap({ config, roles });
  // SIGHUP reads the config file again (the log says what changed, or why nothing did); it no longer ends the process
  const reload = () => void running.reloadConfig().catch(() => undefined);
  process.on("SIGHUP", reload);
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      running.log.info({ signal }, "signal received");
      // A second signal means "now": detached work on the hosts is unaffected either way.
      const now = () => {
        running.log.warn("second signal: exiting at once");
        process.exit(130);
      };
      process.once("SIGTERM", now);
      process.once("SIGINT", now);
      resolve();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  process.off("SIGHUP", reload);
  await running.stop();
  // A step cut off at the end of the grace period may still hold timers: the process ends here, once the
  // log is written out.
  await new Promise<void>((resolve) => running.log.flush(() => resolve()));
  process.exit(0);
}
