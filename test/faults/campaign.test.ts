import { expect, it } from "vitest";
import {
  type CampaignReport,
  resultLine,
  runCampaign,
  type ScheduleResult,
} from "../../testbench/fault-campaign/campaign.ts";
import { freshSeed, replayCommand } from "../../testbench/fault-campaign/schedule.ts";

/**
 * The randomized fault campaign's short form (issue 27 §6; the long one is `npm run bench -- --only
 * faults`): a few swaps on a cold host, a host behind a front door and a blue/green host, side by side,
 * each with one fault at one of its steps — a unit killed or crash-looping, the new model answering NaN,
 * the worker running the swap SIGSTOPped or SIGKILLed, SSH cut, Slack refusing, redis-server restarted —
 * drawn by fast-check from a seed. For each, the checker compares the swap's last message, its card and
 * its `/llm history` row with what a client really gets from the host: no lie, no outage caused by the
 * bot, no front door without a ready slot.
 *
 * A fresh seed each run, as fast-check's own properties; `CAMPAIGN_SEED=… [CAMPAIGN_RUNS=…]
 * [CAMPAIGN_PATH=i,j]` plays a campaign (or some of its schedules) again.
 */
const seed = Number(process.env.CAMPAIGN_SEED ?? freshSeed());
const runs = Number(process.env.CAMPAIGN_RUNS ?? 9);
const paths = process.env.CAMPAIGN_PATH?.split(",").map((p) => Number(p.trim()));

/** What a schedule found, in one paragraph with the line that replays it; undefined when nothing. */
function finding(r: ScheduleResult): string | undefined {
  const v = r.verdict;
  const problems = [
    r.error === undefined ? "" : `could not be played: ${r.error}`,
    ...(v?.lies ?? []).map((l) => `LIE (${l.kind}): said ${l.said}; ${l.served}`),
    v?.outageByBot === true ? `OUTAGE caused by the bot: ${v.served.kind}` : "",
    v?.unfinished === true ? "the swap never ended" : "",
    ...(v?.invariants ?? []),
  ].filter(Boolean);
  if (problems.length === 0) return undefined;
  const also =
    r.alsoStruck === undefined ? "" : `\n    meanwhile, other schedules: ${r.alsoStruck.join("; ")}`;
  return `${resultLine(r)}\n    ${problems.join("\n    ")}${also}\n    replay: ${replayCommand(seed, r.path)}`;
}

it(`a fault campaign of ${paths?.length ?? runs} schedules (seed ${seed}): every swap ends saying what the host serves, and the bot causes no outage`, async () => {
  let report: CampaignReport | undefined;
  try {
    report = await runCampaign({
      seed,
      runs,
      ...(paths === undefined ? {} : { paths }),
      deadlineSeconds: 100,
      // bounded: no schedule starts after 150 s
      budgetSeconds: 150,
      progress: (line) => process.stdout.write(`campaign: ${line}\n`),
    });
  } finally {
    process.stdout.write(`campaign: seed ${seed}; replay it with CAMPAIGN_SEED=${seed}\n`);
  }
  const findings = report.results.map(finding).filter((f) => f !== undefined);
  expect(
    findings,
    `seed ${seed}: ${findings.length} of ${report.results.length} schedules found something`,
  ).toEqual([]);
  expect(report.results.length + report.notRun).toBe(paths?.length ?? runs);
  expect(report.results.length).toBeGreaterThan(0);
}, 480_000);
