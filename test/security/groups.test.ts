import type { WebClient } from "@slack/web-api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { asCodedError } from "../../src/errors.ts";
import { createLogger } from "../../src/log.ts";
import { AccessControl } from "../../src/slack/access-control.ts";
import type { Bench } from "../../testbench/bench.ts";
import { APPROVERS_GROUP, CHANNEL, MLOPS_GROUP, USERS } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * User groups fail closed (issue #12, items 6 and 4). The members of a user group were cached for five
 * minutes, and when Slack's usergroups.users.list failed the members read before were used for ever; a
 * group never read and not readable refused everyone with "not allowed", as if they were not in it.
 * And a decision used the same cache, so an approver removed from the group after the plan was posted
 * could still approve it. Now members older than access.groupStalenessMinutes (default 10) are not used:
 * the refusal says the group could not be checked; and each decision asks Slack who is in the group now.
 */
const MINUTE = 60_000;

describe("the members of a user group when Slack cannot be asked", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** usergroups.users.list answering [carol] until `fail()`, then Slack's internal_error. */
  function slack() {
    let failing = false;
    const calls: string[] = [];
    const client = {
      usergroups: {
        users: {
          list: async ({ usergroup }: { usergroup: string }) => {
            calls.push(usergroup);
            if (failing)
              throw Object.assign(new Error("An API error occurred: internal_error"), {
                data: { error: "internal_error" },
              });
            return { ok: true, users: [USERS.carol] };
          },
        },
      },
    } as unknown as WebClient;
    return { client, calls, fail: () => (failing = true) };
  }

  const principals = (groups: string[]) => ({ users: [] as string[], groups });

  it("are used for a bounded time, then nobody is let in through the group and the refusal says why", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const t0 = Date.parse("2026-03-01T12:00:00Z");
    vi.setSystemTime(t0);
    const { client, fail } = slack();
    const access = new AccessControl(
      principals([MLOPS_GROUP]),
      { users: [USERS.bob], groups: [] },
      client,
      createLogger({ level: "silent" }),
    );
    expect(await access.isRequester(USERS.carol)).toBe(true);
    fail();
    vi.setSystemTime(t0 + 6 * MINUTE); // past the 5-minute cache, within the 10-minute limit
    expect(await access.isRequester(USERS.carol)).toBe(true);
    vi.setSystemTime(t0 + 11 * MINUTE);
    const refusal = await access.isRequester(USERS.carol).then(
      (allowed) => `allowed: ${allowed}`,
      (error: unknown) => error as Error,
    );
    expect(refusal).toBeInstanceOf(Error);
    expect(asCodedError(refusal).code).toBe("SLACK_GROUP_UNAVAILABLE");
    expect((refusal as Error).message).toMatch(/user group S0MLOPS001 could not be checked.*internal_error/);
    vi.setSystemTime(t0 + 24 * 60 * MINUTE); // a day later: still refused, never the old members
    await expect(access.isRequester(USERS.carol)).rejects.toThrow(/could not be checked/);
    // a listed user needs no group
    expect(await access.isMember(USERS.bob)).toBe(true);
  });

  it("follow access.groupStalenessMinutes", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const t0 = Date.parse("2026-03-01T12:00:00Z");
    vi.setSystemTime(t0);
    const { client, fail } = slack();
    const access = new AccessControl(
      principals([MLOPS_GROUP]),
      principals([]),
      client,
      createLogger({ level: "silent" }),
      { groupStalenessMs: 2 * MINUTE },
    );
    expect(await access.isRequester(USERS.carol)).toBe(true);
    fail();
    vi.setSystemTime(t0 + 3 * MINUTE);
    await expect(access.isRequester(USERS.carol)).rejects.toThrow(
      /more than the 2 min access.groupStalenessMinutes allows/,
    );
  });
});

let bench: Bench;
let swaps: SwapDriver;
useSwapBench({ hosts: [{ name: "gpu-1" }], approverGroup: [USERS.erin], startBot: true }, (b, s) => {
  bench = b;
  swaps = s;
});

describe("a Slack outage of usergroups.users.list", () => {
  it("refuses a member of a group not read yet, saying the group could not be checked", async () => {
    bench.slack.failFor("usergroups.users.list", "internal_error", { ms: 60_000 });
    try {
      const ack = await bench.slack.command(USERS.carol, "status gpu-1", { channel: CHANNEL });
      expect(ack.status).toBe(200);
      const text = ack.ackResponse?.text ?? "";
      expect(text).toMatch(/user group S0[A-Z0-9]+ could not be checked/);
      expect(text).toContain("SLACK_GROUP_UNAVAILABLE");
      expect(text).not.toMatch(/not allowed|only requesters/i);
    } finally {
      bench.slack.endOutage();
    }
    // Slack answers again: carol is let in through her group
    const again = await bench.slack.command(USERS.carol, "status gpu-1", { channel: CHANNEL });
    expect(again.ackResponse?.text).toMatch(/Checking gpu-1/);
  });
});

describe("an approver removed from the approvers' group after the plan was posted", () => {
  it("cannot approve it: the decision asks Slack who is in the group now", async () => {
    // erin is an approver through the group, and the bot has read its members
    const status = await bench.slack.command(USERS.erin, "status gpu-1", { channel: CHANNEL });
    expect(status.ackResponse?.text).toMatch(/Checking gpu-1/);
    const card = await swaps.request(addSimModel(bench, "removed-approver"), "gpu-1");
    const id = swaps.swapId(card.ts);
    const plan = await swaps.plan(card.ts);

    bench.slack.setUserGroupMembers(APPROVERS_GROUP, []);
    // what erin was told before (her private status answer) is not the answer to her ✅
    const seen = bench.slack.ephemerals(CHANNEL, USERS.erin).length;
    const answers = () =>
      bench.slack
        .ephemerals(CHANNEL, USERS.erin)
        .slice(seen)
        .filter((e) => e.source === "api");
    await bench.slack.react(USERS.erin, CHANNEL, plan.ts, "white_check_mark");
    // whichever comes first: a decision recorded, or erin told why hers is not
    await until(async () => (await swaps.decision(id)) ?? answers()[0], {
      what: "erin's ✅ decided or answered",
    });
    expect(await swaps.decision(id)).toBeUndefined();
    const told = answers()[0];
    expect(told?.text).toMatch(/Only approvers can approve/);
    expect((await swaps.record(id))?.switch).toBeUndefined();

    // someone still an approver decides; erin, back in the group, could again
    await swaps.reject(card.ts);
    await swaps.outcome(card.ts, /Rejected/);
  }, 60_000);
});
