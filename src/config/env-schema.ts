import { z } from "zod";
import { problem } from "../problem-text.ts";
import {
  DEFAULT_REDIS_URL,
  redisClusterEnv,
  redisEnvConflicts,
  redisSentinelEnv,
  redisUrl,
  urlCredentials,
} from "./redis-env.ts";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

const url = (name: string, example: string) =>
  z
    .string()
    .refine(
      (value) => URL.canParse(value),
      problem(`${name} is not a URL`, `set ${name} to a URL like ${example}`),
    );

/** An empty variable means unset: docker compose passes `${VAR:-}` as "" when VAR is not set. */
export const withoutEmpty = (raw: unknown) =>
  raw !== null && typeof raw === "object"
    ? Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== ""))
    : raw;

export const envFields = z
  .object({
    SLACK_BOT_TOKEN: z
      .string(problem("SLACK_BOT_TOKEN is not set", "set it to the app's Bot User OAuth Token (xoxb-…)"))
      .regex(
        /^xoxb-[A-Za-z0-9-]+$/,
        problem("SLACK_BOT_TOKEN is not a bot token", "use the token that starts with xoxb-"),
      ),
    SLACK_SIGNING_SECRET: z
      .string()
      .regex(
        /^[A-Za-z0-9]{16,}$/,
        problem("SLACK_SIGNING_SECRET is malformed", "copy it from the app's Basic Information page"),
      )
      .optional(),
    SLACK_APP_TOKEN: z
      .string()
      .regex(
        /^xapp-[A-Za-z0-9-]+$/,
        problem(
          "SLACK_APP_TOKEN is not an app-level token",
          "use the xapp-… token with connections:write, or unset it",
        ),
      )
      .optional(),
    SLACK_API_URL: url("SLACK_API_URL", "https://slack.com/api/").default("https://slack.com/api/"),
    // no schema default: whether REDIS_URL was set matters when REDIS_SENTINELS or REDIS_CLUSTER_NODES is (the default is filled in below)
    REDIS_URL: redisUrl.optional(),
    ...redisSentinelEnv,
    ...redisClusterEnv,
    HF_ENDPOINT: url("HF_ENDPOINT", "https://huggingface.co").default("https://huggingface.co"),
    HF_TOKEN: z
      .string()
      .regex(/^\S+$/, problem("HF_TOKEN contains whitespace", "paste the token alone (hf_…)"))
      .optional(),
    PORT: z.coerce
      .number(problem("PORT is not a number", "set PORT to a TCP port such as 3000"))
      .int()
      .min(1, problem("PORT is out of range", "use 1–65535, e.g. PORT=3000"))
      .max(65535, problem("PORT is out of range", "use 1–65535, e.g. PORT=3000"))
      .default(3000),
    METRICS_PORT: z.coerce
      .number(
        problem("METRICS_PORT is not a number", "set METRICS_PORT to a TCP port such as 9464, or unset it"),
      )
      .int()
      .min(1, problem("METRICS_PORT is out of range", "use 1–65535, e.g. METRICS_PORT=9464"))
      .max(65535, problem("METRICS_PORT is out of range", "use 1–65535, e.g. METRICS_PORT=9464"))
      .optional(),
    MODELSWAP_DASHBOARD_USER: z
      .string()
      .regex(
        /^[^:\s]{1,64}$/,
        problem(
          "MODELSWAP_DASHBOARD_USER is not a user name",
          "use a word without spaces or ':', e.g. MODELSWAP_DASHBOARD_USER=admin (the default)",
        ),
      )
      .default("admin"),
    MODELSWAP_DASHBOARD_PASSWORD: z
      .string()
      .regex(
        /^\S{12,}$/,
        problem(
          "MODELSWAP_DASHBOARD_PASSWORD is too short or has whitespace",
          "use at least 12 characters without spaces (e.g. openssl rand -base64 18), or unset it to turn the dashboard off",
        ),
      )
      .optional(),
    LOG_LEVEL: z
      .enum(LOG_LEVELS, problem("LOG_LEVEL is not a level", `use one of ${LOG_LEVELS.join(", ")}`))
      .default("info"),
    MODELSWAP_CONFIG: z.string().min(1).default("modelswap.yaml"),
    MODELSWAP_WATCH_CONFIG: z
      .enum(
        ["true", "false"],
        problem(
          "MODELSWAP_WATCH_CONFIG is not true or false",
          "use true (the default: a change to the config file is read at once) or false (read it again on SIGHUP only)",
        ),
      )
      .default("true")
      .transform((value) => value === "true"),
    // the CLI's (src/cli/ops-client.ts): where the bot's API is, and who is asking; the bot never reads them
    MODELSWAP_API_URL: url("MODELSWAP_API_URL", "http://127.0.0.1:3000").optional(),
    MODELSWAP_OPERATOR_TOKEN: z.string().optional(),
    MODELSWAP_OPERATOR_TOKEN_FILE: z.string().optional(),
  })
  // These look only at which variables are set, so they run even when a variable is malformed: every
  // problem of the environment is reported in one `config check`, not one round at a time.
  .superRefine(
    (env, ctx) => {
      for (const issue of redisEnvConflicts(env)) ctx.addIssue({ code: "custom", ...issue });
      if (env.SLACK_SIGNING_SECRET === undefined && env.SLACK_APP_TOKEN === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["SLACK_SIGNING_SECRET"],
          message: problem(
            "neither SLACK_SIGNING_SECRET (HTTP) nor SLACK_APP_TOKEN (Socket Mode) is set",
            "set SLACK_SIGNING_SECRET from the app's Basic Information page, or SLACK_APP_TOKEN to use Socket Mode",
          ),
        });
      }
    },
    { when: () => true },
  )
  .transform((env) => ({ ...env, REDIS_URL: env.REDIS_URL ?? DEFAULT_REDIS_URL }));

/** The environment: secrets and where things are. Secrets only ever come from here. */
export const envSchema = z.preprocess(withoutEmpty, envFields);

export type Env = z.infer<typeof envSchema>;

/** Values of the environment that are secrets: redacted wherever they might appear. */
export function envSecrets(env: Env): string[] {
  return [
    env.SLACK_BOT_TOKEN,
    env.SLACK_SIGNING_SECRET,
    env.SLACK_APP_TOKEN,
    env.HF_TOKEN,
    env.REDIS_PASSWORD,
    env.REDIS_SENTINEL_PASSWORD,
    // every credential REDIS_URL carries, in every form it can be written in
    ...urlCredentials(env.REDIS_URL, env.REDIS_PASSWORD !== undefined),
    env.MODELSWAP_DASHBOARD_PASSWORD,
    env.MODELSWAP_OPERATOR_TOKEN,
    // the dashboard's Authorization header carries the password as base64 of user:password
    env.MODELSWAP_DASHBOARD_PASSWORD === undefined
      ? undefined
      : Buffer.from(`${env.MODELSWAP_DASHBOARD_USER}:${env.MODELSWAP_DASHBOARD_PASSWORD}`).toString("base64"),
  ].filter((value): value is string => typeof value === "string" && value.length > 0);
}
