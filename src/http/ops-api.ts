import type { IncomingMessage, ServerResponse } from "node:http";
import { type DecideDeps, decideOnPlan } from "../approval/decide.ts";
import { didYouMean } from "../config/did-you-mean.ts";
import type { Config } from "../config/load-config.ts";
import { samePerson } from "../config/operators-schema.ts";
import { asCodedError } from "../errors.ts";
import { type Logger, redactSecretsInJson } from "../log.ts";
import { plainText } from "../reporter/plain-text.ts";
import type { CommandAnswer, CommandDeps, SubCommand } from "../slack/sub-command.ts";
import { type Answer, error, unlessAnId } from "./api-answer.ts";
import {
  DECISION_BODY_EXAMPLE,
  decisionBodySchema,
  queryInt,
  readJsonBody,
  SWAP_BODY_EXAMPLE,
  swapBodySchema,
  swapWords,
} from "./api-request.ts";
import type { Operator, OpsAuth } from "./ops-auth.ts";
import { showRecord } from "./show-record.ts";

export interface OpsApiDeps {
  auth: OpsAuth;
  /** The config as it is now (a reload may change hosts and operators). */
  config: () => Config;
  /** The `/llm` sub-commands: the API runs swap, cancel and rollback through them, as Slack does. */
  commands: readonly SubCommand[];
  /** What the sub-commands use, as the Slack side has it (access is the operator's, per request). */
  deps: Omit<CommandDeps, "config" | "access">;
  clock: DecideDeps["clock"];
  log: Logger;
  /** Values no answer may show. */
  secrets: readonly string[];
}

/** The routes, for a 404 that says what there is. */
const ROUTES =
  "GET /api/status, GET /api/history, GET /api/audit, GET /api/swaps/<id>, POST /api/swaps, POST /api/swaps/<id>/cancel, POST /api/swaps/<id>/approve, POST /api/swaps/<id>/reject, POST /api/hosts/<host>/rollback";

/**
 * The HTTP JSON API of the ops server, which the `modelswap` CLI speaks too (docs/operations.md): status,
 * history and the audit stream (scope read); swap, cancel and rollback (request), through the same
 * `/llm` sub-commands, queue jobs, host locks and audit entries Slack's commands use; approve and reject
 * (approve), through the approval gate's one decision (src/approval/decide.ts), bound to the plan hash the
 * approver saw and never by the swap's own requester. Every request carries an operator's token
 * (src/http/ops-auth.ts); errors are `{ error: { code, message, fix } }`.
 */
export function createOpsApi(deps: OpsApiDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const started = Date.now();
    void route(req, deps)
      .catch((error: unknown): Answer => {
        const coded = asCodedError(error);
        deps.log.error({ err: coded.message, code: coded.code }, "API request failed");
        const status = coded.code === "INTERNAL" ? 500 : 503;
        return { status, body: { error: { code: coded.code, message: coded.message, fix: coded.fix } } };
      })
      .then(({ status, body }) => {
        const text = redactSecretsInJson(JSON.stringify(body), deps.secrets);
        if (status === 401) res.setHeader("www-authenticate", 'Bearer realm="modelswap"');
        res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
        res.end(`${text}\n`);
        deps.log.info(
          {
            method: req.method,
            path: new URL(req.url ?? "/", "http://x").pathname,
            status,
            ms: Date.now() - started,
          },
          "API request",
        );
      });
  };
}

async function route(req: IncomingMessage, deps: OpsApiDeps): Promise<Answer> {
  const url = new URL(req.url ?? "/", "http://localhost");
  const parts = url.pathname.split("/").filter((p) => p !== "");
  const method = req.method ?? "GET";
  const [api, what, id, action, ...rest] = parts;
  if (api !== "api" || rest.length > 0) return notFound(url.pathname);
  const need = (scope: Operator["scopes"][number]): Operator | Answer => {
    const result = deps.auth.authorize(req, scope);
    return result.ok ? result.operator : { status: result.status, body: { error: result.error } };
  };
  const read = method === "GET" && action === undefined;
  if (read && what === "status" && id === undefined)
    return withOperator(need("read"), (op) => status(url, op, deps));
  if (read && what === "history" && id === undefined)
    return withOperator(need("read"), (op) => history(url, op, deps));
  if (read && what === "audit" && id === undefined) return withOperator(need("read"), () => audit(url, deps));
  if (read && what === "swaps" && id !== undefined)
    return withOperator(need("read"), () => showRecord(id, deps.deps.store));
  if (method === "POST" && what === "swaps" && id === undefined)
    return withOperator(need("request"), async (op) => {
      const body = await readJsonBody(req, swapBodySchema, SWAP_BODY_EXAMPLE);
      if (!body.ok) return { status: 400, body: { error: body.error } };
      return await command("swap", swapWords(body.value), op, deps);
    });
  if (method === "POST" && what === "swaps" && id !== undefined && action === "cancel")
    return withOperator(need("request"), (op) => command("cancel", [id], op, deps));
  if (method === "POST" && what === "hosts" && id !== undefined && action === "rollback")
    return withOperator(need("request"), (op) => command("rollback", [id], op, deps));
  if (
    method === "POST" &&
    what === "swaps" &&
    id !== undefined &&
    (action === "approve" || action === "reject")
  )
    return withOperator(need("approve"), async (op) => {
      const body = await readJsonBody(req, decisionBodySchema, DECISION_BODY_EXAMPLE);
      if (!body.ok) return { status: 400, body: { error: body.error } };
      return await decision(id, action === "approve", body.value.plan, op, deps);
    });
  return notFound(url.pathname);
}

async function withOperator(
  who: Operator | Answer,
  then: (operator: Operator) => Promise<Answer>,
): Promise<Answer> {
  return "status" in who ? who : await then(who);
}

function notFound(path: string): Answer {
  return error(
    404,
    "API_NOT_FOUND",
    `no API route ${path.slice(0, 100)} for this method`,
    `the routes are: ${ROUTES}`,
  );
}

/** A host named in a query: undefined when it is configured, else the 400 that says which are. */
function unknownHost(host: string, config: Config): Answer | undefined {
  const known = config.file.hosts.map((h) => h.name);
  if (known.includes(host)) return undefined;
  const close = didYouMean(host, known);
  return error(
    400,
    "HOST_UNKNOWN",
    `unknown host ${JSON.stringify(host.slice(0, 40))}`,
    `${close === undefined ? "" : `did you mean ${close}? `}known hosts: ${known.slice(0, 20).join(", ")}${known.length > 20 ? `, … (${known.length} in all)` : ""}`,
  );
}

/** How long a status request waits for its probes: each host's command limit, 16 at a time, and slack. */
function statusWaitMs(config: Config, hosts: number): number {
  const longest = Math.max(...config.file.hosts.map((h) => h.commandTimeoutSeconds));
  return (Math.ceil(hosts / 16) * longest + 30) * 1000;
}

async function status(url: URL, op: Operator, deps: OpsApiDeps): Promise<Answer> {
  const config = deps.config();
  const host = url.searchParams.get("host") ?? undefined;
  const bad = host === undefined ? undefined : unknownHost(host, config);
  if (bad !== undefined) return bad;
  const hosts = host === undefined ? config.file.hosts.map((h) => h.name) : [host];
  const rows = await deps.deps.queue.ask(
    {
      name: "status",
      data: {
        hosts,
        channel: config.file.slack.channel,
        user: op.id,
        requestedAt: new Date().toISOString(),
        fleet: host === undefined,
        all: true,
      },
    },
    statusWaitMs(config, hosts.length),
  );
  return { status: 200, body: { hosts: rows } };
}

async function history(url: URL, op: Operator, deps: OpsApiDeps): Promise<Answer> {
  const config = deps.config();
  const host = url.searchParams.get("host") ?? undefined;
  const bad = host === undefined ? undefined : unknownHost(host, config);
  if (bad !== undefined) return bad;
  const limit = queryInt(url.searchParams, "limit", 1, 50);
  if (!limit.ok) return { status: 400, body: { error: limit.error } };
  const rows = await deps.deps.queue.ask(
    {
      name: "history",
      data: {
        ...(host === undefined ? {} : { host }),
        limit: limit.value ?? 10,
        channel: config.file.slack.channel,
        user: op.id,
        requestedAt: new Date().toISOString(),
      },
    },
    30_000,
  );
  return { status: 200, body: { swaps: rows } };
}

async function audit(url: URL, deps: OpsApiDeps): Promise<Answer> {
  const host = url.searchParams.get("host") ?? undefined;
  const bad = host === undefined ? undefined : unknownHost(host, deps.config());
  if (bad !== undefined) return bad;
  const swap = url.searchParams.get("swap") ?? undefined;
  const badSwap = swap === undefined ? undefined : unlessAnId(swap, "swap is not a swap or rollout id");
  if (badSwap !== undefined) return badSwap;
  const limit = queryInt(url.searchParams, "limit", 1, 1000);
  if (!limit.ok) return { status: 400, body: { error: limit.error } };
  const entries = await deps.deps.store.audit.read({
    ...(host === undefined ? {} : { host }),
    ...(swap === undefined ? {} : { swap }),
    limit: limit.value ?? 50,
  });
  const events = entries.map((e) => ({ ...e, kind: typeof e.kind === "string" ? e.kind : e.kind.unknown }));
  return { status: 200, body: { events } };
}

/** Runs a `/llm` sub-command for an operator, and answers with what became of it. */
async function command(name: string, args: string[], op: Operator, deps: OpsApiDeps): Promise<Answer> {
  const sub = deps.commands.find((c) => c.name === name);
  if (sub === undefined) return notFound(`/api/${name}`);
  const config = deps.config();
  const has = (scope: Operator["scopes"][number]) => async (user: string) =>
    user === op.id && op.scopes.includes(scope);
  const answer = await sub.handle(
    { user: op.id, channel: config.file.slack.channel, args },
    {
      ...deps.deps,
      config,
      access: { isRequester: has("request"), isApprover: has("approve"), isMember: has("read") },
    },
  );
  return fromCommand(answer, name);
}

function fromCommand(answer: CommandAnswer, name: string): Answer {
  const text = plainText(answer).replace(/^(?:🚫|⚠️|✋)\s*/u, "");
  const [first = "", ...more] = text.split("\n");
  const fix = more.join("\n").trim() || `\`modelswap ${name} --help\` says what is accepted`;
  switch (answer.outcome) {
    case "accepted":
      return { status: 202, body: { ok: true, swap: answer.swap, message: text } };
    case "refused":
      return error(403, "NOT_AUTHORIZED", first, fix);
    case "busy":
      return error(409, "HOST_BUSY", first, fix);
    case "failed":
      return error(503, answer.code ?? "INTERNAL", first, answer.fix ?? fix);
    default:
      return error(400, "INPUT_INVALID", first, fix);
  }
}

async function decision(
  id: string,
  approved: boolean,
  plan: string,
  op: Operator,
  deps: OpsApiDeps,
): Promise<Answer> {
  const bad = unlessAnId(id, "not a swap or rollout id");
  if (bad !== undefined) return bad;
  const result = await decideOnPlan(
    { swapId: id, planHash: plan, user: op.id, approved, via: "api" },
    {
      store: deps.deps.store,
      wake: (swap) => deps.deps.swaps.wake(swap),
      reportSoon: (swap) => deps.deps.reports.soon(swap, "urgent"),
      log: deps.log,
      clock: deps.clock,
      // the route required the approve scope; and from here nobody approves their own swap
      isApprover: async () => true,
      allowSelfApproval: () => false,
      sameAs: (a, b) => samePerson(deps.config().file.operators, a, b),
      tell: async () => undefined,
    },
  );
  if (result.ok) return { status: 200, body: { ok: true, decision: result.decision } };
  const text = plainText({ text: result.text, blocks: [] });
  const statusOf: Record<typeof result.code, number> = {
    SWAP_NOT_FOUND: 404,
    IN_ROLLOUT: 409,
    NOT_WAITING: 409,
    PLAN_CHANGED: 409,
    APPROVER_UNCHECKED: 503,
    NOT_APPROVER: 403,
    OWN_SWAP: 403,
    APPROVAL_EXPIRED: 409,
    ALREADY_DECIDED: 409,
  };
  const fixes: Record<typeof result.code, string> = {
    SWAP_NOT_FOUND: "`modelswap history` lists the swaps",
    IN_ROLLOUT:
      "decide on the rollout's plan: `modelswap approve <rollout id>` (its id is in the message), or in its thread in Slack",
    NOT_WAITING:
      "`modelswap show <swap>` says where it is; a swap waits for a decision once its plan is made",
    PLAN_CHANGED: "read the new plan with `modelswap show <swap>` and decide on it",
    APPROVER_UNCHECKED: "try again",
    NOT_APPROVER: "ask an operator with the approve scope",
    OWN_SWAP: "another operator with the approve scope (or an approver in Slack) decides on it",
    APPROVAL_EXPIRED: "request the swap again",
    ALREADY_DECIDED: "nothing to do: the first decision on a plan stands",
  };
  return error(statusOf[result.code], result.code, text, fixes[result.code]);
}
