import { z } from "zod";
import { problem } from "../problem-text.ts";
import { maskCredentials } from "./show-value.ts";

/** Where Redis is when neither REDIS_URL, REDIS_SENTINELS nor REDIS_CLUSTER_NODES says otherwise. */
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
export const DEFAULT_SENTINEL_PORT = 26379;

/** A host and port from REDIS_SENTINELS or REDIS_CLUSTER_NODES. */
export interface RedisAddress {
  host: string;
  port: number;
}
/** A sentinel's address. */
export type SentinelAddress = RedisAddress;

export const DEFAULT_CLUSTER_PORT = 6379;

// A DNS name or IPv4 address, or an IPv6 address in brackets; the port may be left out.
const ADDRESS_ENTRY = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9][A-Za-z0-9.-]*))(?::(\d{1,5}))?$/;
const SENTINELS_EXAMPLE = "10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379";
const CLUSTER_EXAMPLE = "10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379";

/** A comma-separated list of host:port (the port defaults to `defaultPort`), refused entry by entry. */
function addressList(variable: string, what: string, defaultPort: number, example: string) {
  return z.string().transform((value, ctx): RedisAddress[] => {
    const addresses: RedisAddress[] = [];
    for (const entry of value.split(",").map((part) => part.trim())) {
      const match = ADDRESS_ENTRY.exec(entry);
      const port = match?.[3] === undefined ? defaultPort : Number(match[3]);
      const host = match?.[1] ?? match?.[2];
      if (host === undefined || port < 1 || port > 65535) {
        ctx.addIssue({
          code: "custom",
          message: problem(
            `${variable} has "${maskCredentials(entry)}", which is not host:port`,
            `list the ${what} as host:port separated by commas, like ${example}`,
          ),
        });
        return z.NEVER;
      }
      addresses.push({ host, port });
    }
    return addresses;
  });
}

const REDIS_URL_FIX =
  "set it like redis://127.0.0.1:6379 (rediss:// for TLS, redis://user:password@host:port with a password)";
// scheme, user info (up to the last @, so a password with / or @ in it is never read as the host or
// port), host (an IPv6 address in brackets), port: read before URL does, which refuses a port over 65535
// without saying so
const REDIS_URL_PARTS = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:.*@)?(\[[^\]]*\]|[^:/?#@]*)(?::([^/?#@]*))?/;

/** REDIS_URL: a redis:// or rediss:// URL with a host and, if it names one, a port of 1–65535. */
export const redisUrl = z.string().superRefine((value, ctx) => {
  const refuse = (what: string) => ctx.addIssue({ code: "custom", message: problem(what, REDIS_URL_FIX) });
  const parts = REDIS_URL_PARTS.exec(value);
  if (parts === null || !/^rediss?$/i.test(parts[1] ?? "")) {
    refuse("REDIS_URL must start with redis:// or rediss://");
    return;
  }
  const [, , host = "", port] = parts;
  if (host === "" || host === "[]") refuse("REDIS_URL names no host");
  else if (port !== undefined && port !== "" && !/^\d+$/.test(port))
    refuse("REDIS_URL's port is not a number");
  else if (port !== undefined && port !== "" && (Number(port) < 1 || Number(port) > 65535))
    refuse(`REDIS_URL's port ${port} is out of range: use 1–65535`);
  else if (!URL.canParse(value)) refuse("REDIS_URL is not a URL");
});

/** REDIS_CLUSTER_NODES: some nodes of a Redis Cluster (the client learns the rest from them). */
export const redisClusterEnv = {
  REDIS_CLUSTER_NODES: addressList(
    "REDIS_CLUSTER_NODES",
    "cluster's nodes (some or all)",
    DEFAULT_CLUSTER_PORT,
    CLUSTER_EXAMPLE,
  ).optional(),
};

/** The environment variables for Redis behind Sentinel, and the passwords (secrets: see envSecrets). */
export const redisSentinelEnv = {
  REDIS_SENTINELS: addressList(
    "REDIS_SENTINELS",
    "sentinels",
    DEFAULT_SENTINEL_PORT,
    SENTINELS_EXAMPLE,
  ).optional(),
  REDIS_SENTINEL_MASTER: z
    .string()
    .regex(
      /^\S+$/,
      problem(
        "REDIS_SENTINEL_MASTER contains whitespace",
        "set it to the master name the sentinels monitor (the <name> in `sentinel monitor <name> …`)",
      ),
    )
    .optional(),
  REDIS_SENTINEL_PASSWORD: z.string().optional(),
  REDIS_PASSWORD: z.string().optional(),
};

interface RedisEnvFields {
  REDIS_URL?: string | undefined;
  REDIS_SENTINELS?: SentinelAddress[] | undefined;
  REDIS_CLUSTER_NODES?: RedisAddress[] | undefined;
  REDIS_SENTINEL_MASTER?: string | undefined;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
}

/** Combinations that cannot mean what the operator wants: refused, each with its fix. */
export function redisEnvConflicts(env: RedisEnvFields): { path: string[]; message: string }[] {
  const issues: { path: string[]; message: string }[] = [];
  const sentinels = env.REDIS_SENTINELS !== undefined;
  if (sentinels && env.REDIS_SENTINEL_MASTER === undefined) {
    issues.push({
      path: ["REDIS_SENTINEL_MASTER"],
      message: problem(
        "REDIS_SENTINELS is set but REDIS_SENTINEL_MASTER is not",
        "set REDIS_SENTINEL_MASTER to the master name the sentinels monitor (the <name> in `sentinel monitor <name> …`, often mymaster)",
      ),
    });
  }
  if (!sentinels && env.REDIS_SENTINEL_MASTER !== undefined) {
    issues.push({
      path: ["REDIS_SENTINELS"],
      message: problem(
        "REDIS_SENTINEL_MASTER is set but REDIS_SENTINELS is not",
        `list the sentinels as host:port separated by commas (like ${SENTINELS_EXAMPLE}), or unset REDIS_SENTINEL_MASTER to use REDIS_URL`,
      ),
    });
  }
  if (!sentinels && env.REDIS_SENTINEL_PASSWORD !== undefined) {
    issues.push({
      path: ["REDIS_SENTINEL_PASSWORD"],
      message: problem(
        "REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not",
        "set REDIS_SENTINELS and REDIS_SENTINEL_MASTER too, or unset REDIS_SENTINEL_PASSWORD (REDIS_PASSWORD is Redis's own)",
      ),
    });
  }
  if (sentinels && env.REDIS_URL !== undefined) {
    issues.push({
      path: ["REDIS_URL"],
      message: problem(
        "REDIS_URL and REDIS_SENTINELS are both set",
        "unset REDIS_URL: with Sentinel the bot asks the sentinels where the master is (put its password in REDIS_PASSWORD)",
      ),
    });
  }
  if (env.REDIS_CLUSTER_NODES !== undefined && sentinels) {
    issues.push({
      path: ["REDIS_CLUSTER_NODES"],
      message: problem(
        "REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set",
        "a Redis Cluster fails over by itself and has no sentinels: unset REDIS_SENTINELS and REDIS_SENTINEL_MASTER, or unset REDIS_CLUSTER_NODES to use Sentinel",
      ),
    });
  }
  if (env.REDIS_CLUSTER_NODES !== undefined && env.REDIS_URL !== undefined) {
    issues.push({
      path: ["REDIS_URL"],
      message: problem(
        "REDIS_URL and REDIS_CLUSTER_NODES are both set",
        "unset REDIS_URL: with a Cluster the bot asks the nodes in REDIS_CLUSTER_NODES which one holds its slot (put the password in REDIS_PASSWORD)",
      ),
    });
  }
  return issues;
}

/**
 * The query parameters of REDIS_URL that hold a credential. ioredis 6 makes every query parameter an
 * option (utils/index.js parseURL: `redis://host/0?password=…` logs in with it; `sentinelPassword`, and
 * any other option, likewise), so any parameter whose name says password, secret, token or auth is one.
 */
const CREDENTIAL_PARAM = /pass|pwd|secret|token|auth/i;
/** User names in the query (ioredis's `username`, `sentinelUsername`): a credential when alone, like one in the user info. */
const USERNAME_PARAM = /user/i;

/** A REDIS_URL cut where ioredis's parser (WHATWG URL) cuts it, each part as it was written. */
interface UrlParts {
  /** `redis://`, `rediss://` */
  scheme: string;
  /** Before the last `@` of the authority, without it; undefined when there is no `@`. */
  userinfo: string | undefined;
  /** Host and port. */
  hostPort: string;
  /** The path, as written. */
  path: string;
  /** `name=value` pairs of the query, as written (the `?` left out); empty without a query. */
  query: string[];
  /** `#…` as written, or "". */
  fragment: string;
}

function splitUrl(url: string): UrlParts | undefined {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(url)?.[0];
  if (scheme === undefined) return undefined;
  const rest = url.slice(scheme.length);
  const hash = rest.indexOf("#");
  const beforeHash = hash === -1 ? rest : rest.slice(0, hash);
  const fragment = hash === -1 ? "" : rest.slice(hash);
  const question = beforeHash.indexOf("?");
  const beforeQuery = question === -1 ? beforeHash : beforeHash.slice(0, question);
  const query = question === -1 ? [] : beforeHash.slice(question + 1).split("&");
  const slash = beforeQuery.indexOf("/");
  const authority = slash === -1 ? beforeQuery : beforeQuery.slice(0, slash);
  const path = slash === -1 ? "" : beforeQuery.slice(slash);
  const at = authority.lastIndexOf("@");
  return {
    scheme,
    userinfo: at === -1 ? undefined : authority.slice(0, at),
    hostPort: at === -1 ? authority : authority.slice(at + 1),
    path,
    query,
    fragment,
  };
}

/** A query parameter's name and value: as written, and as URLSearchParams (ioredis) reads them. */
function param(pair: string): { rawName: string; name: string; raw: string; value: string } {
  const eq = pair.indexOf("=");
  const rawName = eq === -1 ? pair : pair.slice(0, eq);
  const raw = eq === -1 ? "" : pair.slice(eq + 1);
  const [name = "", value = ""] = [...new URLSearchParams(`${rawName}=${raw}`)][0] ?? [];
  return { rawName, name, raw, value };
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** What in a REDIS_URL is a credential, by part. */
function credentialParts(url: string, otherPassword: boolean) {
  const parts = splitUrl(url);
  if (parts === undefined) return undefined;
  const colon = parts.userinfo?.indexOf(":") ?? -1;
  const user =
    parts.userinfo === undefined ? "" : colon === -1 ? parts.userinfo : parts.userinfo.slice(0, colon);
  const password = parts.userinfo === undefined || colon === -1 ? "" : parts.userinfo.slice(colon + 1);
  const params = parts.query.map(param);
  const secretParam = (p: ReturnType<typeof param>) => CREDENTIAL_PARAM.test(p.name) && p.raw !== "";
  // a user name is a password when nothing else is one (redis-cli reads redis://secret@host so), but for
  // Redis's own `default` user, whose name redacted would censor every "default" the bot writes
  const named = (name: string) => name !== "" && decoded(name) !== "default";
  const userIsPassword =
    password === "" &&
    !otherPassword &&
    !params.some(secretParam) &&
    (named(user) || params.some((p) => USERNAME_PARAM.test(p.name) && named(p.raw)));
  const isSecretParam = (p: ReturnType<typeof param>) =>
    secretParam(p) || (userIsPassword && USERNAME_PARAM.test(p.name) && named(p.raw));
  return { parts, user, password, params, userIsPassword, isSecretParam };
}

/**
 * Every credential in a REDIS_URL, in each form it can be written in (as in the URL, and decoded as
 * ioredis decodes it): the user info's password, `?password=` and any other credential parameter, and a
 * user name when it is the only credential anywhere (`otherPassword`: REDIS_PASSWORD is set). All of them
 * secrets, redacted like the tokens.
 */
export function urlCredentials(url: string | undefined, otherPassword = false): string[] {
  if (url === undefined) return [];
  const found = credentialParts(url, otherPassword);
  if (found === undefined) return [];
  const forms: string[] = [];
  const add = (raw: string, ...readings: string[]) => {
    if (raw !== "") forms.push(raw, decoded(raw), ...readings);
  };
  add(found.password);
  if (found.userIsPassword) add(found.user);
  for (const p of found.params) if (found.isSecretParam(p)) add(p.raw, p.value);
  // and as WHATWG URL writes the user info back (percent-encoding what the operator left as it was)
  if (URL.canParse(url)) {
    const parsed = new URL(url);
    add(parsed.password);
    if (found.userIsPassword) add(parsed.username);
  }
  return [...new Set(forms.filter((form) => form.length > 0))];
}

/**
 * A REDIS_URL to show (logs, doctor): as written, but every credential urlCredentials finds replaced by
 * `***` — `redis://user:***@host`, `redis://***@host` for a user name that is the password,
 * `?password=***`.
 */
export function redactRedisUrl(url: string, otherPassword = false): string {
  const found = credentialParts(url, otherPassword);
  if (found === undefined) return "***";
  const { parts } = found;
  const userinfo =
    parts.userinfo === undefined
      ? ""
      : found.userIsPassword
        ? "***@"
        : found.password !== ""
          ? `${found.user}:***@`
          : `${parts.userinfo}@`;
  const query = found.params.map((p, i) => (found.isSecretParam(p) ? `${p.rawName}=***` : parts.query[i]));
  // ioredis ignores a fragment; an unencoded # in a password starts one, so it is not shown either
  const fragment = parts.fragment === "" ? "" : "#***";
  return `${parts.scheme}${userinfo}${parts.hostPort}${parts.path}${query.length === 0 ? "" : `?${query.join("&")}`}${fragment}`;
}
