import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { OperatorConfig, OperatorScope } from "../config/operators-schema.ts";
import type { ErrorCode } from "../errors.ts";
import { operatorId } from "../grammar/operator-id.ts";
import type { Logger } from "../log.ts";

/** A token shorter than this is never accepted (a guessable one would be a password, not a token). */
export const MIN_TOKEN_CHARS = 24;

/** Who a request comes from, once its token matched an operator of the config. */
export interface Operator {
  name: string;
  /** `operator:<name>`: the identity records and the audit stream carry. */
  id: string;
  scopes: readonly OperatorScope[];
  /** The same person's Slack member id, when the config names one. */
  slackUser?: string;
}

/** An HTTP API error's body: what went wrong, and what to do about it. */
export interface ApiError {
  code: ErrorCode | string;
  message: string;
  fix: string;
}

export type Authorization =
  | { ok: true; operator: Operator }
  | { ok: false; status: 401 | 403; error: ApiError };

export interface OpsAuthOptions {
  /** The `operators:` of the config as it is now (a reload may change them). */
  operators: () => readonly OperatorConfig[];
  /** Where `tokenEnv` is looked up (default process.env). */
  env?: NodeJS.ProcessEnv;
  log: Logger;
}

interface Known {
  operator: Operator;
  digest: Buffer;
}

/**
 * The ops server's authentication: `Authorization: Bearer <token>`, matched against every operator's
 * token (sha256 digests compared with timingSafeEqual, all of them every time, so neither which operator
 * nor how much of a token matched shows in the time taken), then the scope the route needs. Tokens are
 * read from each operator's `tokenEnv` or `tokenFile` when the operators change (a reload), never logged,
 * never in an answer. `authorize` is all a route needs: it returns the operator, or the 401/403 to send.
 */
export class OpsAuth {
  private cachedFor: readonly OperatorConfig[] | undefined;
  private known: Known[] = [];

  constructor(private readonly options: OpsAuthOptions) {}

  authorize(req: IncomingMessage, scope: OperatorScope): Authorization {
    const presented = bearerToken(req.headers.authorization);
    if (presented === undefined) {
      return deny(401, {
        code: "API_TOKEN_MISSING",
        message: "this request carries no operator token",
        fix: "send `Authorization: Bearer <token>` with your operator token (the CLI reads MODELSWAP_OPERATOR_TOKEN); an admin gives you one under operators: in the config",
      });
    }
    const digest = sha256(presented);
    let match: Operator | undefined;
    for (const known of this.operators()) {
      // every operator is compared, whatever matched before: the time taken says nothing
      if (timingSafeEqual(known.digest, digest) && match === undefined) match = known.operator;
    }
    if (match === undefined) {
      return deny(401, {
        code: "API_TOKEN_INVALID",
        message: "the operator token is not one the config knows",
        fix: "check MODELSWAP_OPERATOR_TOKEN (or the token you send) against the one an admin set in your operator's tokenEnv or tokenFile; a token changed in the config's file or variable counts after a config reload",
      });
    }
    if (!match.scopes.includes(scope)) {
      return deny(403, {
        code: "API_SCOPE_MISSING",
        message: `operator ${match.name} may ${match.scopes.join(", ")}, not ${scope}`,
        fix: `an admin adds ${scope} to the scopes of operator ${match.name} in the config (operators[].scopes), or someone who has it does this`,
      });
    }
    return { ok: true, operator: match };
  }

  /**
   * The operators whose token cannot be used (variable unset, file unreadable, too short), with why:
   * said in the log at start and after a reload, so an admin learns it before the operator does.
   */
  unusable(): { name: string; why: string }[] {
    return this.options.operators().flatMap((o) => {
      const why = tokenOf(o, this.env()).problem;
      return why === undefined ? [] : [{ name: o.name, why }];
    });
  }

  private env(): NodeJS.ProcessEnv {
    return this.options.env ?? process.env;
  }

  private operators(): Known[] {
    const now = this.options.operators();
    if (now === this.cachedFor) return this.known;
    this.cachedFor = now;
    this.known = [];
    for (const config of now) {
      const { token, problem } = tokenOf(config, this.env());
      if (token === undefined) {
        this.options.log.warn(
          { operator: config.name, why: problem },
          "an operator's token cannot be used: that operator is refused until it can",
        );
        continue;
      }
      this.known.push({
        operator: {
          name: config.name,
          id: operatorId(config.name),
          scopes: [...config.scopes],
          ...(config.slackUser === undefined ? {} : { slackUser: config.slackUser }),
        },
        digest: sha256(token),
      });
    }
    return this.known;
  }
}

/** Every operator token that can be read now: values the log, Slack and answers must never show. */
export function operatorTokens(operators: readonly OperatorConfig[], env: NodeJS.ProcessEnv): string[] {
  return operators.flatMap((o) => {
    const { token } = tokenOf(o, env);
    return token === undefined ? [] : [token];
  });
}

/** Writes a JSON answer (no caching: answers carry the fleet's state and who may see it). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(`${JSON.stringify(body)}\n`);
}

/** Writes a refused authorization: 401 with `WWW-Authenticate: Bearer`, or 403, and `{ error }`. */
export function sendDenied(res: ServerResponse, denied: Extract<Authorization, { ok: false }>): void {
  if (denied.status === 401) res.setHeader("www-authenticate", 'Bearer realm="modelswap"');
  sendJson(res, denied.status, { error: denied.error });
}

function deny(status: 401 | 403, error: ApiError): Authorization {
  return { ok: false, status, error };
}

function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? "");
  return match?.[1];
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

function tokenOf(config: OperatorConfig, env: NodeJS.ProcessEnv): { token?: string; problem?: string } {
  let token: string | undefined;
  if (config.tokenEnv !== undefined) {
    token = env[config.tokenEnv];
    if (token === undefined || token === "") return { problem: `${config.tokenEnv} is not set` };
  } else {
    try {
      token = readFileSync(config.tokenFile ?? "", "utf8").trim();
    } catch (error) {
      return {
        problem: `its tokenFile cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`,
      };
    }
  }
  token = token.trim();
  if (token.length < MIN_TOKEN_CHARS)
    return {
      problem: `its token is shorter than ${MIN_TOKEN_CHARS} characters (make one with: openssl rand -hex 32)`,
    };
  return { token };
}
