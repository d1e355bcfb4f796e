import type { CliCommand, CliInput, CliOption } from "./cli-command.ts";

const JSON_OPTION: CliOption = {
  type: "boolean",
  description: "print the API's JSON answer instead of text",
};

const WHO =
  "It asks the bot's HTTP API (MODELSWAP_API_URL, else this machine's METRICS_PORT or PORT) as the operator\n" +
  "whose token MODELSWAP_OPERATOR_TOKEN (or the file MODELSWAP_OPERATOR_TOKEN_FILE) holds: the config's\n" +
  "operators: say who that is and what they may do (read, request, approve).";

/**
 * The operator commands: the same work as `/llm status|history|swap|cancel|rollback` and a plan's ✅,
 * done by the bot through its API (src/http/ops-api.ts) for an operator of the config, with Slack or
 * without it. What runs is imported only when it runs (src/cli/ops-run.ts).
 */
export function opsCommands(env: NodeJS.ProcessEnv): CliCommand[] {
  const run = (name: string) => async (input: CliInput) =>
    await (await import("./ops-run.ts")).runOpsCommand(name, input, {
      env,
      out: process.stdout,
      err: process.stderr,
    });
  return [
    {
      name: "status",
      args: "[host]",
      maxPositionals: 1,
      summary: "each host's state, unit and swap in flight (probed by a worker now)",
      description: `Probes one host, or every host, as \`/llm status\` does, and prints what each serves.\n${WHO}`,
      options: { json: JSON_OPTION },
      run: run("status"),
    },
    {
      name: "history",
      args: "[host]",
      maxPositionals: 1,
      summary: "the swap ledger, newest first: who asked and approved, outcome",
      description: `The ledger as \`/llm history\` shows it.\n${WHO}`,
      options: {
        limit: { type: "string", valueName: "n", description: "how many swaps (1–50, default 10)" },
        json: JSON_OPTION,
      },
      run: run("history"),
    },
    {
      name: "audit",
      summary: "the audit stream, newest first: requests, decisions, stages, outcomes, alerts",
      description: `Reads the append-only audit stream (who did what, when).\n${WHO}`,
      options: {
        host: { type: "string", valueName: "host", description: "only this host's events" },
        swap: { type: "string", valueName: "swap", description: "only this swap's events" },
        limit: { type: "string", valueName: "n", description: "how many events (1–1000, default 50)" },
        json: JSON_OPTION,
      },
      run: run("audit"),
    },
    {
      name: "show",
      args: "<swap|rollout>",
      maxPositionals: 1,
      summary: "one swap or rollout: its stage, its decision, and its plan as approvers see it",
      description: `Prints a swap, or a rollout with a row per host, and its plan (the plan hash an approval binds to).\n${WHO}`,
      options: { json: JSON_OPTION },
      run: run("show"),
    },
    {
      name: "swap",
      args: "<model>",
      maxPositionals: 1,
      summary: "request a swap (it still needs an approver's decision)",
      description:
        "Requests a swap as `/llm swap` does: the same checks, host lock, plan and approval. The model is a Hub URL\n" +
        "or org/name[@rev]. An approver decides in Slack, or another operator with `modelswap approve`.\n" +
        WHO,
      options: {
        host: {
          type: "string",
          valueName: "host",
          description: "the host to swap (needed with more than one)",
        },
        group: {
          type: "string",
          valueName: "group",
          description: "a rollout to every host of a config group, in waves, with one approval",
        },
        hosts: {
          type: "string",
          valueName: "set",
          description: "a rollout to these hosts (gpu-1,gpu-3 or gpu-[1-8]), in waves, with one approval",
        },
        tp: {
          type: "string",
          valueName: "n",
          description: "tensor parallelism (default: the plan's choice)",
        },
        "dry-run": { type: "boolean", description: "plan only: nothing is downloaded or switched" },
        engine: { type: "string", valueName: "sglang|vllm", description: "the engine to serve with" },
        "engine-ref": { type: "string", valueName: "ref", description: "the engine's git ref to build" },
        set: {
          type: "string",
          multiple: true,
          valueName: "flag=value",
          description: "an engine setting swaps.settable allows (again for more)",
        },
        json: JSON_OPTION,
      },
      run: run("swap"),
    },
    {
      name: "cancel",
      args: "<swap|host>",
      maxPositionals: 1,
      summary: "stop a swap (before its switch: files kept; after: rolled back)",
      description: `Cancels a swap as \`/llm cancel\` does.\n${WHO}`,
      options: { json: JSON_OPTION },
      run: run("cancel"),
    },
    {
      name: "rollback",
      args: "<host>",
      maxPositionals: 1,
      summary: "go back to the model a host served before its last swap (needs approval)",
      description: `Requests a rollback as \`/llm rollback\` does.\n${WHO}`,
      options: { json: JSON_OPTION },
      run: run("rollback"),
    },
    {
      name: "approve",
      args: "<swap|rollout>",
      maxPositionals: 1,
      summary: "approve a swap's or a rollout's plan (an operator who did not request it)",
      description:
        "Approves the plan the swap waits on: prints that plan, then approves it, bound to its hash (a plan that\n" +
        "changed meanwhile is not approved). Nobody approves their own swap. Recorded in the audit stream and\n" +
        `shown on the plan in Slack (posted once Slack is reachable).\n${WHO}`,
      options: {
        plan: {
          type: "string",
          valueName: "hash",
          description: "approve only if this is the current plan (as `modelswap show` printed it)",
        },
        json: JSON_OPTION,
      },
      run: run("approve"),
    },
    {
      name: "reject",
      args: "<swap|rollout>",
      maxPositionals: 1,
      summary: "reject a swap's or a rollout's plan: nothing is switched",
      description: `Rejects the plan the swap waits on.\n${WHO}`,
      options: {
        plan: { type: "string", valueName: "hash", description: "reject only if this is the current plan" },
        json: JSON_OPTION,
      },
      run: run("reject"),
    },
  ];
}
