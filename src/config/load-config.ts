import { constants } from "node:fs";
import { access, readFile } from "node:fs/promises";
import { parseDocument } from "yaml";
import type { z } from "zod";
import { CodedError } from "../errors.ts";
import { keyReadProblem } from "../host/ssh-key-file.ts";
import { type Env, envSchema, envSecrets } from "./env-schema.ts";
import { type FileConfig, fileSchema } from "./file-schema.ts";
import { splitProblem } from "./fix.ts";

export interface Config {
  env: Env;
  file: FileConfig;
  /** Where the config file was read from. */
  path: string;
}

export interface ConfigProblem {
  /** `env` for environment variables, else the config file. */
  source: "env" | "file";
  /** Dotted path of the setting, e.g. `hosts[0].ssh.hostKeySha256`. */
  path: string;
  what: string;
  fix: string;
}

const SECRET_KEY = /(token|secret|password|passphrase|private_?key$)/i;
const SECRET_VALUE = /(xox[abpr]-|xapp-|hf_[A-Za-z0-9]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----)/;

/**
 * Reads and validates the environment and the config file, collecting every problem instead of stopping
 * at the first, so `modelswap config check` can list them all.
 */
export async function readConfig(
  processEnv: NodeJS.ProcessEnv,
  pathOverride?: string,
): Promise<{ config?: Config; problems: ConfigProblem[] }> {
  const problems: ConfigProblem[] = [];
  const envResult = envSchema.safeParse(processEnv);
  if (!envResult.success) problems.push(...fromZod("env", envResult.error));
  const path =
    pathOverride ?? envResult.data?.MODELSWAP_CONFIG ?? processEnv.MODELSWAP_CONFIG ?? "modelswap.yaml";

  const raw = await readRaw(path, problems);
  let file: FileConfig | undefined;
  if (raw !== undefined) {
    problems.push(...secretsInFile(raw, ""));
    const fileResult = fileSchema.safeParse(raw);
    if (fileResult.success) {
      file = fileResult.data;
      problems.push(...(await unreadableKeys(file)));
    } else {
      problems.push(...fromZod("file", fileResult.error));
    }
  }
  if (problems.length > 0 || envResult.data === undefined || file === undefined) return { problems };
  return { config: { env: envResult.data, file, path }, problems };
}

/** Like readConfig, but throws CONFIG_INVALID listing every problem. */
export async function loadConfig(processEnv: NodeJS.ProcessEnv, pathOverride?: string): Promise<Config> {
  const { config, problems } = await readConfig(processEnv, pathOverride);
  if (config === undefined) {
    throw new CodedError(
      "CONFIG_INVALID",
      `The configuration has ${problems.length} problem(s):\n${formatProblems(problems)}`,
      "Correct each setting as shown, then run `modelswap config check` until it reports none.",
    );
  }
  return config;
}

/**
 * Everything the bot must never print, in Slack, the log or the audit stream: the environment's secrets
 * and each host's SSH key path (it says where a credential lives; messages name the setting instead).
 */
export function configSecrets(config: Config): string[] {
  const keyPaths = config.file.hosts.flatMap((h) => (h.ssh === undefined ? [] : [h.ssh.privateKeyPath]));
  return [...envSecrets(config.env), ...keyPaths];
}

export function formatProblems(problems: readonly ConfigProblem[]): string {
  return problems
    .map(
      (p) => `  ✗ ${p.source === "env" ? "environment" : "config"} ${p.path}: ${p.what}\n      fix: ${p.fix}`,
    )
    .join("\n");
}

async function readRaw(path: string, problems: ConfigProblem[]): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : "cannot be read";
    problems.push({
      source: "file",
      path: "(file)",
      what: `${path} ${reason}`,
      fix: "set MODELSWAP_CONFIG or pass the path; README.md has a complete example",
    });
    return undefined;
  }
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    for (const error of doc.errors) {
      const at = error.linePos?.[0];
      problems.push({
        source: "file",
        path: at ? `line ${at.line}, column ${at.col}` : "(yaml)",
        what: error.message.split("\n")[0] ?? "invalid YAML",
        fix: "correct the YAML syntax (indentation with spaces, `key: value`)",
      });
    }
    return undefined;
  }
  return doc.toJS();
}

function fromZod(source: "env" | "file", error: z.ZodError): ConfigProblem[] {
  return error.issues.flatMap((issue): ConfigProblem[] => {
    const path = formatPath(issue.path);
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({
        source,
        path: path === "" ? key : `${path}.${key}`,
        what: "unknown setting",
        fix: SECRET_KEY.test(key)
          ? "secrets never live in the config file: remove it and set the environment variable instead (SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_APP_TOKEN, HF_TOKEN)"
          : "remove it, or check its spelling against the configuration reference in README.md",
      }));
    }
    const { what, fix } = splitProblem(issue.message);
    return [
      {
        source,
        path: path === "" ? "(top level)" : path,
        what,
        fix: fix ?? "see the configuration reference in README.md for what this setting accepts",
      },
    ];
  });
}

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`))
    .join("");
}

function secretsInFile(value: unknown, path: string): ConfigProblem[] {
  if (typeof value === "string") {
    return SECRET_VALUE.test(value)
      ? [
          {
            source: "file",
            path,
            what: "looks like a secret (token or private key)",
            fix: "secrets never live in the config file: move it to the environment, or for SSH keys to a file named by ssh.privateKeyPath",
          },
        ]
      : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => secretsInFile(item, `${path}[${i}]`));
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([key, item]) =>
      secretsInFile(item, path === "" ? key : `${path}.${key}`),
    );
  }
  return [];
}

async function unreadableKeys(file: FileConfig): Promise<ConfigProblem[]> {
  const problems: ConfigProblem[] = [];
  for (const [index, host] of file.hosts.entries()) {
    if (host.ssh === undefined) continue;
    try {
      await access(host.ssh.privateKeyPath, constants.R_OK);
    } catch (error) {
      // The path itself is not repeated: it says where a credential lives, and this text reaches the log.
      problems.push({
        source: "file",
        path: `hosts[${index}].ssh.privateKeyPath`,
        what: `the SSH key of ${host.name} cannot be read by the bot: ${keyReadProblem(error)}`,
        fix: "create the key (ssh-keygen -t ed25519 -f PATH -N '') or correct the path; the bot's user must be able to read it",
      });
    }
  }
  return problems;
}
