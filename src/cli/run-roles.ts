import { loadConfig } from "../config/load-config.ts";
import { type Roles, startModelswap } from "../main.ts";

/** `modelswap start`, `bot` and `worker`: runs the roles until SIGTERM or SIGINT, then stops and exits. */
export async function runRoles(roles: Roles, env: NodeJS.ProcessEnv): Promise<number> {
  const config = await loadConfig(env);
  const running = await startModelswap({ config, roles });
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
  await running.stop();
  // A step cut off at the end of the grace period may still hold timers: the process ends here, once the
  // log is written out.
  await new Promise<void>((resolve) => running.log.flush(() => resolve()));
  process.exit(0);
}
