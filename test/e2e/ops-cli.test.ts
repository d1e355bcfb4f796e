import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL, USERS } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { runModelswap } from "../support/modelswap-cli.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The `modelswap` CLI as operators use it on the bot's machine, with the bench's Slack down (every Web
 * API call answers 503): the real command, a child process, against the real bot's API (real Redis,
 * sshd, the simulated GPU host). Status, a swap requested by one operator and approved by another,
 * and a rollback work; the audit stream names both; refused tokens, scopes, a requester approving their
 * own swap and bad input change nothing and say what is accepted; once Slack is back, the plan in the
 * thread shows the operator's approval.
 */
const TOKENS = {
  alice: "alice-0123456789abcdef0123456789abcdef",
  bob: "bob-fedcba9876543210fedcba9876543210f",
  carol: "carol-55555555555555555555555555555555",
  dave: "dave-77777777777777777777777777777777",
};
type Operator = keyof typeof TOKENS;
const HOST = "gpu-1";

let bench: Bench;
let swaps: SwapDriver;
let model: string;
useSwapBench(
  {
    hosts: [{ name: HOST, gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    startBot: false,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

beforeAll(async () => {
  model = addSimModel(bench, "cli-model");
  const scopes: Record<Operator, string[]> = {
    alice: ["read", "request"],
    bob: ["read", "approve"],
    carol: ["read"],
    dave: ["read", "request", "approve"],
  };
  const operators: Record<string, unknown>[] = [];
  for (const [name, token] of Object.entries(TOKENS)) {
    const file = join(bench.dir, `token-${name}`);
    await writeFile(file, `${token}\n`, { mode: 0o600 });
    operators.push({
      name,
      tokenFile: file,
      scopes: scopes[name as Operator],
      ...(name === "dave" ? { slackUser: USERS.dave } : {}),
    });
  }
  // biome-ignore lint/suspicious/noExplicitAny: the bench's YAML, edited as a person would
  await bench.editConfig((config: any) => {
    config.operators = operators;
  });
  await bench.startBot();
  // Slack is down for the whole file, until the last test brings it back
  bench.slack.failFor("*", "service_unavailable", { ms: 3_600_000, status: 503 });
}, 120_000);

/** Runs the real `modelswap` command as `as` (a token from the env); its exit code and output. */
async function modelswap(args: string[], as?: Operator | { token: string }) {
  const token = as === undefined ? undefined : typeof as === "string" ? TOKENS[as] : as.token;
  return await runModelswap(
    args,
    {
      MODELSWAP_API_URL: `http://127.0.0.1:${bench.env.PORT}`,
      ...(token === undefined ? {} : { MODELSWAP_OPERATOR_TOKEN: token }),
    },
    120_000,
  );
}

/** `--json` output, parsed. */
// biome-ignore lint/suspicious/noExplicitAny: the API's JSON, checked field by field
const json = (out: { stdout: string }): any => JSON.parse(out.stdout);

async function untilWaitingForApproval(id: string) {
  return await swaps.untilRecord(id, (r) => r.approval !== undefined && r.step === "prepare", {
    what: "the plan waiting for a decision",
    timeoutMs: 90_000,
  });
}

describe("modelswap's operator commands with Slack down", () => {
  it("refuses a missing or unknown token and a missing scope, and queues nothing", async () => {
    const none = await modelswap(["status"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no operator token");
    expect(none.stderr).toContain("MODELSWAP_OPERATOR_TOKEN");

    const wrong = await modelswap(["status", "--json"], { token: `${TOKENS.alice}x` });
    expect(wrong.code).toBe(1);
    expect(json(wrong).error).toMatchObject({ code: "API_TOKEN_INVALID" });
    expect(json(wrong).error.fix).toEqual(expect.any(String));

    const readOnly = await modelswap(["swap", model, "--host", HOST, "--json"], "carol");
    expect(readOnly.code).toBe(1);
    expect(json(readOnly).error).toMatchObject({
      code: "API_SCOPE_MISSING",
      message: "operator carol may read, not request",
    });
    const approveOnly = await modelswap(["rollback", HOST], "bob");
    expect(approveOnly.code).toBe(1);
    expect(approveOnly.stderr).toContain("operator bob may read, approve, not request (API_SCOPE_MISSING)");
    // the API itself: a 401 says how to authenticate; a body that is not JSON, an unknown route are refused
    const api = `http://127.0.0.1:${bench.env.PORT}/api`;
    const bare = await fetch(`${api}/status`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await bare.json()).toMatchObject({
      error: { code: "API_TOKEN_MISSING", fix: expect.any(String) },
    });
    const auth = { authorization: `Bearer ${TOKENS.alice}`, "content-type": "application/json" };
    const notJson = await fetch(`${api}/swaps`, { method: "POST", headers: auth, body: "swap it" });
    expect(notJson.status).toBe(400);
    expect(json({ stdout: await notJson.text() }).error).toMatchObject({
      code: "INPUT_INVALID",
      message: "the request body is not JSON",
      fix: expect.stringContaining('"model"'),
    });
    const extra = await fetch(`${api}/swaps`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ model: model, host: HOST, force: true }),
    });
    expect(extra.status).toBe(400);
    const nowhere = await fetch(`${api}/reboot`, { method: "POST", headers: auth });
    expect(nowhere.status).toBe(404);
    expect(json({ stdout: await nowhere.text() }).error.fix).toContain("GET /api/status");
    expect(await (await swaps.store()).locks.hostHolder(HOST)).toBeUndefined();
    expect(await (await swaps.store()).audit.read({ host: HOST, limit: 10 })).toEqual([]);
  }, 120_000);

  it("answers bad input with what is accepted, and changes nothing", async () => {
    const badUrl = await modelswap(["swap", "https://example.com/not/a/model", "--host", HOST], "alice");
    expect(badUrl.code).toBe(1);
    expect(badUrl.stderr).toContain("Cannot swap");
    expect(badUrl.stderr).toContain("huggingface.co/<org>/<name>");
    expect(badUrl.stderr).toContain("(INPUT_INVALID)");

    const unknown = await modelswap(["swap", model, "--host", "gpu-9", "--json"], "alice");
    expect(unknown.code).toBe(1);
    expect(json(unknown).error.code).toBe("INPUT_INVALID");
    expect(json(unknown).error.message).toContain("Unknown host `gpu-9`");
    expect(json(unknown).error.message).toContain(`Known hosts: ${HOST}`);

    const status = await modelswap(["status", "gpu-9", "--json"], "carol");
    expect(json(status).error).toMatchObject({ code: "HOST_UNKNOWN" });
    expect(json(status).error.fix).toContain(`known hosts: ${HOST}`);

    const history = await modelswap(["history", "--limit", "500"], "carol");
    expect(history.code).toBe(1);
    expect(history.stderr).toContain("limit must be a whole number from 1 to 50");

    expect(await (await swaps.store()).locks.hostHolder(HOST)).toBeUndefined();
    expect(await (await swaps.store()).audit.read({ host: HOST, limit: 10 })).toEqual([]);
  }, 120_000);

  it("never lets a requester approve their own swap, even with the approve scope", async () => {
    const asked = await modelswap(["swap", model, "--host", HOST, "--json"], "dave");
    expect(asked.code, asked.stderr).toBe(0);
    const id: string = json(asked).swap;
    await untilWaitingForApproval(id);

    const own = await modelswap(["approve", id, "--json"], "dave");
    expect(own.code).toBe(1);
    expect(json(own).error).toMatchObject({ code: "OWN_SWAP" });
    expect(json(own).error.fix).toContain("another operator");
    expect(await swaps.decision(id)).toBeUndefined();

    const cancelled = await modelswap(["cancel", id], "dave");
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain(`Cancelling swap \`${id}\``);
    const record = await swaps.untilRecord(id, (r) => r.outcome !== undefined, { what: "the cancel" });
    expect(record.outcome).toBe("cancelled");
    expect(await (await swaps.store()).locks.hostHolder(HOST)).toBeUndefined();
  }, 180_000);

  it("shows status, runs a swap requested by one operator and approved by another, then a rollback; the audit names both", async () => {
    const status = await modelswap(["status", "--json"], "carol");
    expect(status.code, status.stderr).toBe(0);
    const [row] = json(status).hosts;
    expect(row.status).toMatchObject({ host: HOST, verdict: "healthy", unitName: bench.host(HOST).unit });
    const text = await modelswap(["status"], "carol");
    expect(text.stdout).toMatch(
      new RegExp(`^HOST\\s+STATE\\s+UNIT[\\s\\S]*\\n${HOST}\\s+healthy\\s+${bench.host(HOST).unit}`),
    );

    const asked = await modelswap(["swap", model, "--host", HOST, "--json"], "alice");
    expect(asked.code, asked.stderr).toBe(0);
    expect(json(asked)).toMatchObject({ ok: true, swap: expect.stringMatching(/^sw-/) });
    const id: string = json(asked).swap;
    const waiting = await untilWaitingForApproval(id);

    const shown = await modelswap(["show", id], "bob");
    expect(shown.stdout).toContain(`plan: ${waiting.planHash}`);
    expect(shown.stdout).toContain(`modelswap approve ${id}`);

    const approved = await modelswap(["approve", id], "bob");
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`✅ Approved swap ${id} (plan ${waiting.planHash}) as operator bob`);
    const done = await swaps.untilRecord(id, (r) => r.outcome !== undefined, {
      what: "the swap's outcome",
      timeoutMs: 120_000,
    });
    expect(done.outcome, done.reason).toBe("succeeded");
    expect(done.decision).toMatchObject({ approved: true, by: "operator:bob", via: "api" });
    const { sim, unit } = bench.host(HOST);
    expect(await sim.unitState(done.plan!.unitName)).toMatchObject({ activeState: "active" });

    const audit = await modelswap(["audit", "--swap", id, "--json"], "carol");
    const events: { kind: string; who: string; detail: string }[] = json(audit).events;
    expect(events.find((e) => e.kind === "request")).toMatchObject({ who: "operator:alice" });
    expect(events.find((e) => e.kind === "approval")).toMatchObject({ who: "operator:bob" });
    expect(events.find((e) => e.kind === "approval")?.detail).toContain("requested by operator:alice");

    const back = await modelswap(["rollback", HOST, "--json"], "alice");
    expect(back.code, back.stderr).toBe(0);
    const rollbackId: string = json(back).swap;
    await untilWaitingForApproval(rollbackId);
    const approvedBack = await modelswap(["approve", rollbackId], "bob");
    expect(approvedBack.code, approvedBack.stderr).toBe(0);
    const rolled = await swaps.untilRecord(rollbackId, (r) => r.outcome !== undefined, {
      what: "the rollback's outcome",
      timeoutMs: 120_000,
    });
    expect(rolled.outcome, rolled.reason).toBe("succeeded");
    expect(await sim.unitState(unit)).toMatchObject({ activeState: "active" });
    expect(await sim.unitState(done.plan!.unitName)).toMatchObject({ activeState: "inactive" });

    const history = await modelswap(["history", HOST, "--json"], "carol");
    expect(json(history).swaps.slice(0, 2)).toMatchObject([
      { id: rollbackId, requester: "operator:alice", approver: "operator:bob", outcome: "succeeded" },
      { id, requester: "operator:alice", approver: "operator:bob", outcome: "succeeded" },
    ]);
    // nothing reached Slack meanwhile: every call was refused
    expect(bench.slack.calls("chat.postMessage").every((c) => c.error === "service_unavailable")).toBe(true);

    // Slack back: the plan in the swap's thread shows the operator's approval
    bench.slack.endOutage();
    await until(
      () =>
        bench.slack
          .messages(CHANNEL)
          .concat(...bench.slack.messages(CHANNEL).map((m) => bench.slack.thread(CHANNEL, m.ts)))
          .find(
            (m) =>
              JSON.stringify(m.blocks ?? []).includes(id) &&
              JSON.stringify(m.blocks ?? []).includes("operator bob"),
          ),
      { what: "the plan posted with its approval by operator bob once Slack is back", timeoutMs: 90_000 },
    );
  }, 420_000);

  it("once Slack is back, refuses an operator's ✅ in Slack on their own swap (their slackUser is them)", async () => {
    const asked = await modelswap(["swap", model, "--host", HOST, "--json"], "dave");
    expect(asked.code, asked.stderr).toBe(0);
    const id: string = json(asked).swap;
    await untilWaitingForApproval(id);
    const card = await bench.slack.waitFor(() => swaps.cardsOf(id)[0], {
      what: "the card",
      timeoutMs: 60_000,
    });
    const plan = await swaps.plan(card.ts);
    // the gate knows the message once the reporter has indexed it (after the plan's details are posted)
    const store = await swaps.store();
    await until(() => store.approvals.planMessage(CHANNEL, plan.ts), { what: "the plan message indexed" });
    await swaps.approve(card.ts, USERS.dave);
    await bench.slack.waitFor(
      () =>
        bench.slack
          .ephemerals(CHANNEL, USERS.dave)
          .find((e) => e.text.includes("You requested this swap, so another approver has to approve it")),
      { what: "dave told he cannot approve his own swap", timeoutMs: 20_000 },
    );
    expect(await swaps.decision(id)).toBeUndefined();
    const cancelled = await modelswap(["cancel", HOST], "dave");
    expect(cancelled.code, cancelled.stderr).toBe(0);
    await swaps.untilRecord(id, (r) => r.outcome === "cancelled", { what: "the cancel" });
  }, 180_000);
});
