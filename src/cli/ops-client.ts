import { readFileSync } from "node:fs";

/** What the API answered: its HTTP status and its JSON body. */
export interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, read field by field by the renderers
  body: any;
}

/** A problem on this side: the CLI cannot ask (no token, no API); printed with its fix, exit 1. */
export class ClientProblem extends Error {
  constructor(
    message: string,
    readonly fix: string,
  ) {
    super(message);
  }
}

/**
 * Where the API is: MODELSWAP_API_URL, else this machine's ops port (METRICS_PORT when set, else PORT,
 * else 3000), the port the bot's /healthz answers on.
 */
export function apiUrl(env: NodeJS.ProcessEnv): string {
  const given = env.MODELSWAP_API_URL?.trim();
  if (given !== undefined && given !== "") return given.replace(/\/+$/, "");
  const port = env.METRICS_PORT?.trim() || env.PORT?.trim() || "3000";
  return `http://127.0.0.1:${port}`;
}

/**
 * The operator's token: MODELSWAP_OPERATOR_TOKEN, else the file MODELSWAP_OPERATOR_TOKEN_FILE names. Never
 * from the command line, where other users of the machine could read it (ps).
 */
export function operatorToken(env: NodeJS.ProcessEnv): string {
  const direct = env.MODELSWAP_OPERATOR_TOKEN?.trim();
  if (direct !== undefined && direct !== "") return direct;
  const file = env.MODELSWAP_OPERATOR_TOKEN_FILE?.trim();
  if (file !== undefined && file !== "") {
    try {
      return readFileSync(file, "utf8").trim();
    } catch (error) {
      throw new ClientProblem(
        `MODELSWAP_OPERATOR_TOKEN_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`,
        "point it at the file that holds your operator token, readable by you",
      );
    }
  }
  throw new ClientProblem(
    "no operator token: the CLI acts as an operator of the config, known by their token",
    "set MODELSWAP_OPERATOR_TOKEN to your token (or MODELSWAP_OPERATOR_TOKEN_FILE to a file holding it); an admin gives you one under operators: in the config",
  );
}

/** Asks the bot's API; throws ClientProblem when it cannot be reached. */
export async function callApi(
  env: NodeJS.ProcessEnv,
  method: "GET" | "POST",
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const base = apiUrl(env);
  const token = operatorToken(env);
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10 * 60_000),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new ClientProblem(
      `cannot reach the modelswap API at ${base} (${cause})`,
      "check that the bot runs on this machine (`modelswap start` or `modelswap bot`; its /healthz answers on the same port), or set MODELSWAP_API_URL to where it serves",
    );
  }
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    throw new ClientProblem(
      `${base} answered ${res.status} with something that is not the modelswap API's JSON`,
      "set MODELSWAP_API_URL to the bot's ops port (METRICS_PORT when set, else PORT)",
    );
  }
}
