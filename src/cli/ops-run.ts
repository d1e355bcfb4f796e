import type { Writable } from "node:stream";
import { operatorName } from "../grammar/operator-id.ts";
import type { CliInput } from "./cli-command.ts";
import { type ApiAnswer, ClientProblem, callApi } from "./ops-client.ts";

export interface OpsRunContext {
  env: NodeJS.ProcessEnv;
  out: Pick<Writable, "write">;
  err: Pick<Writable, "write">;
}

const REQUIRED: Record<string, string> = {
  show: "<swap|rollout>",
  swap: "<model>",
  cancel: "<swap|host>",
  rollback: "<host>",
  approve: "<swap|rollout>",
  reject: "<swap|rollout>",
};

/**
 * Runs one operator command against the bot's API and prints the answer: text, or the API's JSON with
 * `--json`. Exit 0 when it was done, 1 when it was refused or failed (the error's message and fix on
 * stderr; with `--json`, the error's JSON on stdout), 2 for a command line missing its argument.
 */
export async function runOpsCommand(name: string, input: CliInput, ctx: OpsRunContext): Promise<number> {
  const { values, positionals } = input;
  const json = values.json === true;
  const arg = positionals[0];
  if (REQUIRED[name] !== undefined && arg === undefined) {
    ctx.err.write(`modelswap ${name}: name the ${REQUIRED[name]}: modelswap ${name} ${REQUIRED[name]}\n`);
    return 2;
  }
  const q = (params: Record<string, unknown>) => {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (typeof v === "string") search.set(k, v);
    const text = search.toString();
    return text === "" ? "" : `?${text}`;
  };
  const at = (text: string) => encodeURIComponent(text);
  try {
    let answer: ApiAnswer;
    switch (name) {
      case "status":
        answer = await callApi(ctx.env, "GET", `/api/status${q({ host: arg })}`);
        break;
      case "history":
        answer = await callApi(ctx.env, "GET", `/api/history${q({ host: arg, limit: values.limit })}`);
        break;
      case "audit":
        answer = await callApi(
          ctx.env,
          "GET",
          `/api/audit${q({ host: values.host, swap: values.swap, limit: values.limit })}`,
        );
        break;
      case "show":
        answer = await callApi(ctx.env, "GET", `/api/swaps/${at(arg!)}`);
        break;
      case "swap": {
        const tp = values.tp === undefined ? undefined : Number(values.tp);
        if (tp !== undefined && !Number.isInteger(tp)) {
          ctx.err.write(`modelswap swap: --tp takes a whole number, not '${String(values.tp)}'\n`);
          return 2;
        }
        answer = await callApi(ctx.env, "POST", "/api/swaps", {
          model: arg,
          ...(values.host === undefined ? {} : { host: values.host }),
          ...(values.group === undefined ? {} : { group: values.group }),
          ...(values.hosts === undefined ? {} : { hosts: values.hosts }),
          ...(tp === undefined ? {} : { tp }),
          ...(values["dry-run"] === true ? { dryRun: true } : {}),
          ...(values.engine === undefined ? {} : { engine: values.engine }),
          ...(values["engine-ref"] === undefined ? {} : { engineRef: values["engine-ref"] }),
          ...(Array.isArray(values.set) ? { set: values.set.map(String) } : {}),
        });
        break;
      }
      case "cancel":
        answer = await callApi(ctx.env, "POST", `/api/swaps/${at(arg!)}/cancel`);
        break;
      case "rollback":
        answer = await callApi(ctx.env, "POST", `/api/hosts/${at(arg!)}/rollback`);
        break;
      default:
        return await decide(name === "approve", arg!, values, ctx);
    }
    return finish(answer, json, ctx, (body) => render(name, body));
  } catch (error) {
    return problem(error, json, ctx);
  }
}

/** approve/reject: the plan is read (and printed) first; the decision is bound to the hash read. */
async function decide(
  approved: boolean,
  swap: string,
  values: CliInput["values"],
  ctx: OpsRunContext,
): Promise<number> {
  const json = values.json === true;
  const verb = approved ? "approve" : "reject";
  let plan = typeof values.plan === "string" ? values.plan : undefined;
  let planText: string | undefined;
  if (plan === undefined) {
    const shown = await callApi(ctx.env, "GET", `/api/swaps/${encodeURIComponent(swap)}`);
    if (shown.status !== 200) return finish(shown, json, ctx, () => "");
    // a swap, or a rollout (`ro-…`): one approval for all its hosts
    const shownRecord = shown.body.swap ?? shown.body.rollout;
    plan = shownRecord?.planHash;
    if (plan === undefined) {
      const step = String(shownRecord?.step ?? "?");
      return failWith(
        {
          code: "NOT_WAITING",
          message: `${noun(swap)} ${swap} has no plan yet (it is at stage ${step})`,
          fix: "wait until its plan is made (`modelswap show` prints it), then decide",
        },
        json,
        ctx,
      );
    }
    if (typeof shown.body.planText === "string") planText = shown.body.planText;
  }
  const answer = await callApi(ctx.env, "POST", `/api/swaps/${encodeURIComponent(swap)}/${verb}`, { plan });
  return finish(answer, json, ctx, (body) => {
    const d = body.decision;
    // the plan decided on, then the decision: what the approver saw is on their screen with what they did
    return `${planText === undefined ? "" : `${planText}\n\n`}${d.approved ? "✅ Approved" : "❌ Rejected"} ${noun(swap)} ${swap} (plan ${d.planHash}) as ${who(d.by)}: recorded in the audit stream; Slack shows it on the plan once it is reachable.`;
  });
}

function finish(
  answer: ApiAnswer,
  json: boolean,
  ctx: OpsRunContext,
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON
  text: (body: any) => string,
): number {
  const ok = answer.status >= 200 && answer.status < 300;
  if (json) {
    ctx.out.write(`${JSON.stringify(answer.body, null, 2)}\n`);
    return ok ? 0 : 1;
  }
  if (ok) {
    ctx.out.write(`${text(answer.body)}\n`);
    return 0;
  }
  const error = answer.body?.error ?? {};
  ctx.err.write(
    `${String(error.message ?? `HTTP ${answer.status}`)} (${String(error.code ?? answer.status)})\nfix: ${String(error.fix ?? "see the bot's log")}\n`,
  );
  return 1;
}

function failWith(
  error: { code: string; message: string; fix: string },
  json: boolean,
  ctx: OpsRunContext,
): number {
  if (json) ctx.out.write(`${JSON.stringify({ error }, null, 2)}\n`);
  else ctx.err.write(`${error.message} (${error.code})\nfix: ${error.fix}\n`);
  return 1;
}

function problem(error: unknown, json: boolean, ctx: OpsRunContext): number {
  if (!(error instanceof ClientProblem)) throw error;
  return failWith({ code: "CLI_CANNOT_ASK", message: error.message, fix: error.fix }, json, ctx);
}

/** `operator alice`, or a Slack member's id as it is. */
function who(id: string): string {
  const name = operatorName(id);
  return name === undefined ? id : `operator ${name}`;
}

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON
function render(name: string, body: any): string {
  switch (name) {
    case "status":
      return table(
        ["HOST", "STATE", "UNIT", "MODEL", "SWAP"],
        // biome-ignore lint/suspicious/noExplicitAny: the API's JSON
        body.hosts.map((r: any) => [
          r.status.host,
          r.stuck === undefined ? r.status.verdict : "stuck lock",
          r.status.unitName,
          (r.status.server?.models ?? []).join(",") || "—",
          r.active === undefined ? "—" : `${r.active.id} (${r.active.step})`,
        ]),
      );
    case "history":
      if (body.swaps.length === 0) return "No swaps yet.";
      return table(
        ["WHEN", "HOST", "OUTCOME", "MODEL", "ASKED BY", "DECIDED BY", "SWAP"],
        // biome-ignore lint/suspicious/noExplicitAny: the API's JSON
        body.swaps.map((r: any) => [
          String(r.at).slice(0, 16).replace("T", " "),
          r.host,
          r.outcome === "in progress" ? `in progress (${r.step})` : r.outcome,
          `${r.model}${r.sha === undefined ? "" : `@${String(r.sha).slice(0, 7)}`}`,
          who(r.requester),
          r.approver !== undefined
            ? who(r.approver)
            : r.rejecter !== undefined
              ? `✗ ${who(r.rejecter)}`
              : "—",
          r.id,
        ]),
      );
    case "audit":
      if (body.events.length === 0) return "No events.";
      return table(
        ["WHEN", "KIND", "WHO", "HOST", "SWAP", "DETAIL"],
        // biome-ignore lint/suspicious/noExplicitAny: the API's JSON
        body.events.map((e: any) => [
          String(e.at).slice(0, 19).replace("T", " "),
          e.kind,
          who(e.who),
          e.host ?? "—",
          e.swap ?? "—",
          String(e.detail).split("\n")[0]!.slice(0, 120),
        ]),
      );
    case "show": {
      if (body.rollout !== undefined) return showRollout(body);
      const s = body.swap;
      const lines = [
        `swap ${s.id} on ${s.host}: ${s.request.model.repo}@${s.request.model.revision}`,
        `requested by ${who(s.requester)} at ${s.createdAt}`,
        `stage: ${s.step}${s.outcome === undefined ? "" : `; outcome: ${s.outcome}`}`,
      ];
      if (s.planHash !== undefined) lines.push(`plan: ${s.planHash}`);
      if (s.approval !== undefined && s.decision === undefined && s.outcome === undefined)
        lines.push(`waiting for a decision until ${s.approval.expiresAt}: modelswap approve ${s.id}`);
      if (s.decision !== undefined)
        lines.push(
          `${s.decision.approved ? "approved" : "rejected"} by ${who(s.decision.by)} (${s.decision.via}) at ${s.decision.at}`,
        );
      if (typeof body.planText === "string") lines.push("", body.planText);
      return lines.join("\n");
    }
    default:
      return String(body.message ?? "done");
  }
}

/** `modelswap show <rollout-id>`: where it stands, a row per host, its plan. */
// biome-ignore lint/suspicious/noExplicitAny: the API's JSON, as printed
function showRollout(body: any): string {
  const r = body.rollout;
  const lines = [
    `rollout ${r.id}: ${r.request.model.repo}@${r.request.model.revision} → ${r.hosts.length} hosts${r.group === undefined ? "" : ` (group ${r.group})`}`,
    `requested by ${who(r.requester)} at ${r.createdAt}`,
    `step: ${r.step}${r.outcome === undefined ? "" : `; outcome: ${r.outcome}`}${r.reason === undefined ? "" : ` (${r.reason})`}`,
  ];
  if (r.planHash !== undefined) lines.push(`plan: ${r.planHash}`);
  if (r.approval !== undefined && r.decision === undefined && r.outcome === undefined)
    lines.push(`waiting for a decision until ${r.approval.expiresAt}: modelswap approve ${r.id}`);
  if (r.decision !== undefined)
    lines.push(
      `${r.decision.approved ? "approved" : "rejected"} by ${who(r.decision.by)} (${r.decision.via}) at ${r.decision.at}`,
    );
  lines.push(
    "",
    table(
      ["host", "wave", "swap", "step", "outcome", "files"],
      // biome-ignore lint/suspicious/noExplicitAny: the API's JSON
      body.hosts.map((h: any) => [
        h.host,
        h.wave === 0 ? "canary" : String(h.wave + 1),
        h.swap,
        h.step,
        h.outcome ?? "—",
        h.files === undefined
          ? "—"
          : h.files.state === "copied"
            ? `copied from ${h.files.from}`
            : h.files.state === "hub"
              ? "from the Hub"
              : `copying from ${h.files.from}`,
      ]),
    ),
  );
  if (typeof body.planText === "string") lines.push("", body.planText);
  return lines.join("\n");
}

/** What an id names, for a sentence. */
function noun(id: string): string {
  return id.startsWith("ro-") ? "rollout" : "swap";
}

function table(head: string[], rows: string[][]): string {
  const all = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...all.map((r) => String(r[i] ?? "").length)));
  return all
    .map((r) =>
      r
        .map((c, i) => String(c ?? "").padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
