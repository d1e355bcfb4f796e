import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { access, readFile } from "node:fs/promises";
import { parseDocument } from "yaml";
import type { z } from "zod";
import { CodedError } from "../errors.ts";
import { keyReadProblem } from "../host/ssh-key-file.ts";
import type { ConfigProblem } from "./config-problem.ts";
import { describeIssue } from "./describe-issue.ts";
import { type Env, envSchema, envSecrets, withoutEmpty } from "./env-schema.ts";
import { type FileConfig, fileSchema } from "./file-schema.ts";
import { looksSecret, showValue } from "./show-value.ts";

export interface Config {
  env: Env;
  file: FileConfig;
  /** Where the config file was read from. */
  path: string;
}

export type { ConfigProblem } from "./config-problem.ts";

/** What the reading is for: whether the process talks to the GPU hosts (the worker role) and so needs their keys. */
export interface ReadFor {
  /** The hosts' SSH keys must be readable here (default true). A bot role alone never reaches a host. */
  hostKeys?: boolean;
}

/**
 * Reads and validates the environment and the config file, collecting every problem instead of stopping
 * at the first, so `modelswap config check` can list them all.
 */
export async function readConfig(
  processEnv: NodeJS.ProcessEnv,
  pathOverride?: string,
  readFor: ReadFor = {},
): Promise<{ config?: Config; problems: ConfigProblem[] }> {
  const problems: ConfigProblem[] = [];
  const envResult = envSchema.safeParse(processEnv);
  if (!envResult.success)
    problems.push(...fromZod("env", envResult.error, envSchema, withoutEmpty(processEnv)));
  const path =
    pathOverride ?? envResult.data?.MODELSWAP_CONFIG ?? processEnv.MODELSWAP_CONFIG ?? "modelswap.yaml";

  const read = await readConfigFile(path, readFor);
  problems.push(...read.problems);
  const { file } = read;
  if (problems.length > 0 || envResult.data === undefined || file === undefined) return { problems };
  return { config: { env: envResult.data, file, path }, problems };
}

/** What one reading of the config file found: the settings when they are valid, every problem, and which bytes were read. */
export interface ConfigFileRead {
  file?: FileConfig;
  problems: ConfigProblem[];
  /** sha256 (hex) of the bytes read; absent when the file could not be read. */
  sha256?: string;
}

/**
 * Reads and validates the config file alone, as readConfig does (a reload reads the file again; the
 * environment is read once, at start).
 */
export async function readConfigFile(path: string, readFor: ReadFor = {}): Promise<ConfigFileRead> {
  const problems: ConfigProblem[] = [];
  const { raw, sha256 } = await readRaw(path, problems);
  let file: FileConfig | undefined;
  if (raw !== undefined) {
    problems.push(...secretsInFile(raw, ""));
    const fileResult = fileSchema.safeParse(raw);
    if (fileResult.success) {
      file = fileResult.data;
      if (readFor.hostKeys !== false) problems.push(...(await unreadableKeys(file)));
    } else {
      problems.push(...fromZod("file", fileResult.error, fileSchema, raw));
    }
  }
  return {
    ...(problems.length === 0 && file !== undefined ? { file } : {}),
    problems,
    ...(sha256 === undefined ? {} : { sha256 }),
  };
}

/** Like readConfig, but throws CONFIG_INVALID listing every problem. */
export async function loadConfig(
  processEnv: NodeJS.ProcessEnv,
  pathOverride?: string,
  readFor: ReadFor = {},
): Promise<Config> {
  const { config, problems } = await readConfig(processEnv, pathOverride, readFor);
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
      (p) =>
        `  ✗ ${p.source === "env" ? "environment" : "config"} ${p.path}: ${p.what}\n` +
        (p.given === undefined ? "" : `      given: ${p.given}\n`) +
        `      fix: ${p.fix}`,
    )
    .join("\n");
}

async function readRaw(path: string, problems: ConfigProblem[]): Promise<{ raw?: unknown; sha256?: string }> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : "cannot be read";
    problems.push({
      source: "file",
      path: "(file)",
      what: `${path} ${reason}`,
      fix: "set MODELSWAP_CONFIG or pass the path; modelswap.example.yaml is a complete, commented example to start from",
    });
    return {};
  }
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const text = bytes.toString("utf8");
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const lines = text.split("\n");
    for (const error of doc.errors) {
      const at = error.linePos?.[0];
      const line = at === undefined ? undefined : lines[at.line - 1]?.trim();
      problems.push({
        source: "file",
        path: at ? `line ${at.line}, column ${at.col}` : "(yaml)",
        // prettyErrors appends the position (and the lines around it): the path gives it, once
        what: (error.message.split("\n")[0] ?? "invalid YAML").replace(/ at line \d+, column \d+:?$/, ""),
        given: line === undefined || line === "" ? undefined : showValue("", line),
        fix: YAML_FIXES[error.code] ?? YAML_FIX,
      });
    }
    return { sha256 };
  }
  const value = doc.toJS();
  if (value === null || value === undefined) {
    problems.push({
      source: "file",
      path: "(file)",
      what: `the file is empty: ${path}`,
      fix: "start from modelswap.example.yaml, a complete commented example: your channel, who may request and approve, and the hosts",
    });
    return { sha256 };
  }
  return { raw: value, sha256 };
}

const YAML_FIX =
  "correct the YAML syntax: indent with spaces, write `key: value`, lists as [a, b] or `- item` lines, e.g. users: [U0123ABCD]";
const YAML_FIXES: Partial<Record<string, string>> = {
  DUPLICATE_KEY: "write each key once at its level, e.g. merge the two blocks into one",
  TAB_AS_INDENT: "indent with spaces, not tabs, e.g. two spaces per level",
};

function fromZod(
  source: "env" | "file",
  error: z.ZodError,
  schema: z.ZodType,
  input: unknown,
): ConfigProblem[] {
  return error.issues.flatMap((issue) => describeIssue(source, issue, schema, input));
}

function secretsInFile(value: unknown, path: string): ConfigProblem[] {
  if (typeof value === "string") {
    return looksSecret("", value)
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
