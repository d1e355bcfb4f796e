import { resultLine, runCampaign, type ScheduleResult } from "../testbench/fault-campaign/campaign.ts";
import { freshSeed, replayCommand } from "../testbench/fault-campaign/schedule.ts";
import type { Progress, SectionResult } from "./section.ts";
import { round } from "./stats.ts";

export interface FaultsOptions {
  /** Schedules to play (the issue asks for at least 200). */
  runs: number;
  /** Hosts per mode: 1 plays three schedules at once (cold, door, blue/green). */
  hostsPerMode: number;
  /** A schedule's bound from its request to its last message. */
  deadlineSeconds: number;
}

export interface FaultsFigures {
  seed: number;
  runs: number;
  lies: number;
  outages_by_bot: number;
  unfinished: number;
  stale: number;
  invariant_breaks: number;
  not_played: number;
  wall_s: number;
  by_mode: { cold: number; door: number; bluegreen: number };
  by_fault: {
    unit_kill: number;
    unit_crash_loop: number;
    nan: number;
    worker_stop: number;
    worker_kill: number;
    ssh_drop: number;
    slack_refuse: number;
    redis_restart: number;
  };
}

/**
 * The randomized fault campaign's long form (testbench/fault-campaign/, issue 27 §6): `runs` schedules
 * drawn by fast-check from a seed (CAMPAIGN_SEED, else a fresh one), each a swap with one fault struck at
 * one of its steps, judged by the checker against what the host really serves. Figures: schedules played,
 * lies found, outages caused by the bot, swaps that never ended, schedules per mode and per fault, wall
 * time; every finding is listed with the line that replays it.
 */
export async function benchFaults(
  options: FaultsOptions,
  progress: Progress,
): Promise<SectionResult<FaultsFigures>> {
  const seed = Number(process.env.CAMPAIGN_SEED ?? freshSeed());
  progress(`seed ${seed} (CAMPAIGN_SEED=${seed} plays the same schedules)`);
  const report = await runCampaign({
    seed,
    runs: options.runs,
    hostsPerMode: options.hostsPerMode,
    deadlineSeconds: options.deadlineSeconds,
    progress,
  });
  const played = report.results.filter((r) => r.verdict !== undefined);
  const findings = report.results.filter(isFinding);
  const figures: FaultsFigures = {
    seed,
    runs: played.length,
    lies: report.lies,
    outages_by_bot: report.outagesByBot,
    unfinished: report.unfinished,
    stale: report.stale,
    invariant_breaks: report.invariantBreaks,
    not_played: report.errors + report.notRun,
    wall_s: round(report.wallMs / 1000, 0),
    by_mode: { ...report.byMode },
    by_fault: {
      unit_kill: report.byFault["unit-kill"],
      unit_crash_loop: report.byFault["unit-crash-loop"],
      nan: report.byFault.nan,
      worker_stop: report.byFault["worker-stop"],
      worker_kill: report.byFault["worker-kill"],
      ssh_drop: report.byFault["ssh-drop"],
      slack_refuse: report.byFault["slack-refuse"],
      redis_restart: report.byFault["redis-restart"],
    },
  };
  return {
    figures,
    details: [
      `faults: seed ${seed}, ${played.length} schedules judged (${report.errors} could not be played, ${report.notRun} not run); ${findings.length} with findings`,
      `faults: a second /llm swap of the busy host: ${report.secondSwaps.refused} refused, ${report.secondSwaps.queued} queued, ${report.secondSwaps.unknown} not answered either way (queue away, or the swap had just ended)`,
      ...findings.flatMap((r) => [
        `faults: ${resultLine(r)}`,
        ...(r.verdict?.lies ?? []).map((l) => `faults:     lie (${l.kind}): said ${l.said}; ${l.served}`),
        ...(r.error === undefined ? [] : [`faults:     could not be played: ${r.error}`]),
        ...(r.alsoStruck === undefined
          ? []
          : [`faults:     meanwhile, other schedules: ${r.alsoStruck.join("; ")}`]),
        `faults:     replay: ${replayCommand(seed, r.path)}`,
      ]),
    ],
  };
}

function isFinding(r: ScheduleResult): boolean {
  const v = r.verdict;
  return (
    r.error !== undefined ||
    v === undefined ||
    v.lies.length > 0 ||
    v.outageByBot ||
    v.unfinished ||
    v.invariants.length > 0
  );
}
