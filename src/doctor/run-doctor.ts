import { configSecrets, formatProblems, readConfig } from "../config/load-config.ts";
import { createLogger, redactSecrets } from "../log.ts";
import { createRedis, waitReady } from "../redis/redis-connection.ts";
import { HostState } from "../store/host-state.ts";
import { checkHost } from "./check-host.ts";
import { checkRedis } from "./check-redis.ts";
import type { DoctorRow } from "./doctor-row.ts";
import { renderDoctor, summaryLine } from "./render-doctor.ts";
import type { ServingNow } from "./serving-rows.ts";

/**
 * The Slack rows (src/slack/check-slack.ts, the one module that talks to Slack's Web API): handed in by
 * the composition root, so that the doctor does not reach into the Slack layer.
 */
export type SlackChecker = (input: {
  botToken: string;
  appToken?: string | undefined;
  apiUrl: string;
  channel: string;
  timeoutMs: number;
}) => Promise<DoctorRow[]>;

export interface DoctorOptions {
  checkSlack: SlackChecker;
  /** Only these hosts (default every configured one); Slack and Redis are always checked. */
  hosts: readonly string[];
  json: boolean;
  timeoutSeconds: number;
  env: NodeJS.ProcessEnv;
  out: NodeJS.WriteStream;
}

/**
 * `modelswap doctor`: reads the config and the environment as `modelswap start` does, then checks
 * everything a deployment needs — Slack, Redis, each host — at once, each check bounded by the timeout,
 * and prints the table (or JSON). Starts nothing. Exit 0 when nothing failed (warnings allowed), 1 when
 * something did or the config is invalid, 2 for a host the config does not have.
 */
export async function runDoctor(options: DoctorOptions): Promise<number> {
  const { config, problems } = await readConfig(options.env);
  if (config === undefined) {
    options.out.write(
      `✖ the config cannot be loaded, so nothing was checked: ${problems.length} problem(s):\n${formatProblems(problems)}\n`,
    );
    return 1;
  }
  const names = config.file.hosts.map((h) => h.name);
  const unknown = options.hosts.filter((h) => !names.includes(h));
  if (unknown.length > 0) {
    process.stderr.write(
      `modelswap doctor: no host named ${unknown.join(", ")} in ${config.path}; hosts: ${names.join(", ")}\n`,
    );
    return 2;
  }
  const timeoutMs = options.timeoutSeconds * 1000;
  const log = createLogger({ level: "silent" });
  const hosts = config.file.hosts
    .map((host, index) => ({ host, index }))
    .filter(({ host }) => options.hosts.length === 0 || options.hosts.includes(host.name));
  const serving = await servingNow(
    config.env,
    hosts.map(({ host }) => host.name),
    timeoutMs,
  );
  const groups = await Promise.all([
    options.checkSlack({
      botToken: config.env.SLACK_BOT_TOKEN,
      appToken: config.env.SLACK_APP_TOKEN,
      apiUrl: config.env.SLACK_API_URL,
      channel: config.file.slack.channel,
      timeoutMs,
    }),
    checkRedis(config.env, timeoutMs),
    ...hosts.map(({ host, index }) => checkHost(host, index, log, timeoutMs, serving.get(host.name))),
  ]);
  const secrets = configSecrets(config);
  const rows: DoctorRow[] = groups.flat().map((row) => ({
    ...row,
    saw: redactSecrets(row.saw, secrets),
    ...(row.fix === undefined ? {} : { fix: redactSecrets(row.fix, secrets) }),
  }));
  const failed = rows.some((r) => r.status === "fail");
  if (options.json) {
    const summary = {
      ok: !failed,
      problems: rows.filter((r) => r.status === "fail").length,
      warnings: rows.filter((r) => r.status === "warn").length,
      summary: summaryLine(rows),
      checks: rows,
    };
    options.out.write(`${JSON.stringify(summary, null, 2)}\n`);
  } else {
    const colour = options.out.isTTY === true && options.env.NO_COLOR === undefined;
    options.out.write(`modelswap doctor: ${config.path}\n\n${renderDoctor(rows, { colour })}\n`);
  }
  return failed ? 1 : 0;
}

/**
 * What serves on each host as the last swap left it (the ledger), so that the host's "serving" row looks at
 * that unit and port rather than the config's currentUnit, which a swap has replaced. Best effort: with
 * Redis away (its own row says so) the config's are checked.
 */
async function servingNow(
  env: Parameters<typeof createRedis>[0],
  hosts: readonly string[],
  timeoutMs: number,
): Promise<Map<string, ServingNow>> {
  const found = new Map<string, ServingNow>();
  const redis = createRedis(env, "producer");
  redis.on("error", () => undefined);
  try {
    if (!(await waitReady(redis, Math.min(timeoutMs, 5000)))) return found;
    const state = new HostState(redis);
    for (const host of hosts) {
      const now = await state.serving(host).catch(() => undefined);
      if (now !== undefined) found.set(host, { unit: now.unit, port: now.port, engine: now.engine });
    }
  } catch {
    // the Redis row says what is wrong with Redis
  } finally {
    redis.disconnect();
  }
  return found;
}
