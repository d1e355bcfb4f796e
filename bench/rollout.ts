import { batches } from "../src/rollout/waves.ts";
import type { SwapRecord } from "../src/swap/swap-record.ts";
import { startBench } from "../testbench/bench.ts";
import { makeModel } from "../testbench/hub/index.ts";
import { RolloutDriver } from "../testbench/rollout-driver.ts";
import { SwapDriver } from "../testbench/swap-driver.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import { benchSpeed, type Progress, type SectionResult, type Speed, servingHost } from "./section.ts";
import { round } from "./stats.ts";

export interface RolloutOptions {
  /** Hosts in the group (the issue's 20). */
  hosts: number;
  /** The group's maxUnavailable. */
  maxUnavailable: number;
  speed: Speed;
}

export interface RolloutFigures {
  hosts: number;
  /** Bytes the Hub served for the rollout, in models (1 = the model crossed the Hub once). */
  hub_models_rollout: number;
  /** The same for one swap per host, today's way, in the same run. */
  hub_models_singles: number;
  wall_s: number;
  /** Every host's files ready (the slowest download and build) + each batch's switch-to-end, wave after wave. */
  critical_path_s: number;
  wall_ratio: number;
  /** Hosts beyond the canary whose switch began when the canary's new model failed. */
  touched_beyond_canary: number;
  slack_calls_per_host: number;
  slack_calls_per_single_swap: number;
}

const SINGLE = "sim-org/rollout-single";
const ROLLED = "sim-org/rollout-model";
const FAILING = "sim-org/rollout-nan";

/**
 * A rollout of one model to N hosts of a group (a canary, 25 %, the rest; maxUnavailable at once), against
 * one swap per host of another model of the same size in the same run (requested together, each
 * approved on its own plan, today's way). Counted: the bytes the Hub served for each (in models), every
 * Slack call per host, the rollout's wall time against its critical path (every host's files ready,
 * then each batch's switch to its end, wave after wave), and, for a third model whose copy on the
 * canary answers NaN, how many hosts beyond the canary began a switch.
 */
export async function benchRollout(
  options: RolloutOptions,
  progress: Progress,
): Promise<SectionResult<RolloutFigures>> {
  const hosts = Array.from({ length: options.hosts }, (_, i) => servingHost(`gpu-${i + 1}`, options.speed));
  const bench = await startBench({
    ...benchSpeed(options.speed),
    logTo: "silent",
    swaps: options.speed.swaps,
    hosts,
    groups: {
      fleet: {
        hosts: `gpu-[1-${options.hosts}]`,
        canary: 1,
        waves: [25, 100],
        maxUnavailable: options.maxUnavailable,
        // the sims' tok/s follow the bench machine's load, not the model: the gate's figure is not measured here
        throughputMargin: 100,
      },
    },
  });
  const swaps = new SwapDriver(bench, { postWithinMs: 10_000 * options.hosts });
  const rollouts = new RolloutDriver(bench, swaps);
  try {
    for (const id of [SINGLE, ROLLED, FAILING])
      bench.hub.addModel(makeModel("llama-bf16-small", { id, gated: false }));
    const modelBytes = bench.hub.getModel(ROLLED)!.files.reduce((n, f) => n + f.size, 0);
    // the canary's copy of the third model answers NaN (SGLANG.md: `models` matches a part of its path)
    await bench
      .host("gpu-1")
      .sim.setFault("sglang", { ...options.speed.engine, models: { "rollout-nan": { mode: "nan" } } });
    const bot = await spawnBot(bench);

    // today's way: one swap per host, each planned, approved and downloaded on its own
    let calls = bench.slack.calls().length;
    const cards = await Promise.all(hosts.map((h) => swaps.request(SINGLE, h.name)));
    await Promise.all(cards.map((card) => swaps.approve(card.ts)));
    await Promise.all(cards.map((card) => swaps.finalLine(card.ts, 1_800_000)));
    await quiet(bench);
    const singleCalls = bench.slack.calls().length - calls;
    progress(`${options.hosts} single swaps done`);

    calls = bench.slack.calls().length;
    const started = Date.now();
    const { card, id } = await rollouts.request(`${ROLLED} --group fleet`, 60_000 * options.hosts);
    await rollouts.approve(card);
    await rollouts.outcome(card, /Rolled out/, 1_800_000);
    const wall = (Date.now() - started) / 1000;
    await quiet(bench);
    const rolloutCalls = bench.slack.calls().length - calls;
    const record = await rollouts.record(id);
    const children = await rollouts.children(id);
    const critical = criticalPath(record.hosts, children, options.maxUnavailable, started);
    progress(`the rollout: ${round(wall, 1)} s, its critical path ${round(critical, 1)} s`);

    const failing = await rollouts.request(`${FAILING} --group fleet`, 60_000 * options.hosts);
    await rollouts.approve(failing.card);
    await rollouts.outcome(failing.card, /Halted/, 1_800_000);
    const touched = [...(await rollouts.children(failing.id)).entries()].filter(
      ([host, child]) => host !== "gpu-1" && child.switch !== undefined,
    ).length;
    await stopBot(bot);

    const hub = (repo: string) => bench.hub.bytesServed(repo) / modelBytes;
    return {
      figures: {
        hosts: options.hosts,
        hub_models_rollout: round(hub(ROLLED), 2),
        hub_models_singles: round(hub(SINGLE), 2),
        wall_s: round(wall, 1),
        critical_path_s: round(critical, 1),
        wall_ratio: round(wall / critical, 2),
        touched_beyond_canary: touched,
        slack_calls_per_host: round(rolloutCalls / options.hosts, 1),
        slack_calls_per_single_swap: round(singleCalls / options.hosts, 1),
      },
      details: [
        `rollout: timeline from the request: ${timeline(record, children, started)}`,
        `rollout: waves ${[...new Set(record.hosts.map((h) => h.wave))].map((w) => record.hosts.filter((h) => h.wave === w).length).join(" → ")} hosts, at most ${options.maxUnavailable} switching at once`,
        `rollout: ${rolloutCalls} Slack calls for the rollout, ${singleCalls} for ${options.hosts} single swaps`,
        `rollout: weights: ${copiesLine(children)}`,
      ],
    };
  } finally {
    await swaps.close();
    await bench.stop();
  }
}

/**
 * Where the rollout's seconds went, from its request: the plan put up, the approval, every host's files
 * ready, and each wave's start and end with its first switch and last end.
 */
function timeline(
  record: Awaited<ReturnType<RolloutDriver["record"]>>,
  children: ReadonlyMap<string, SwapRecord>,
  started: number,
): string {
  const t = (iso: string | undefined) =>
    iso === undefined ? "?" : `${round((Date.parse(iso) - started) / 1000, 1)}`;
  const ready = Math.max(
    ...[...children.values()].map((c) =>
      Math.max(Date.parse(c.stages.download.finishedAt ?? ""), Date.parse(c.stages.build.finishedAt ?? "")),
    ),
  );
  const waves = record.waves.map((w) => {
    const members = record.hosts.filter((h) => h.wave === w.wave).map((h) => children.get(h.host)!);
    const firstSwitch = Math.min(...members.map((c) => Date.parse(c.switch?.startedAt ?? "")));
    const lastEnd = Math.max(...members.map((c) => Date.parse(c.finishedAt ?? "")));
    return `wave ${w.wave + 1} ${t(w.startedAt)}–${t(w.endedAt)} (switches from ${round((firstSwitch - started) / 1000, 1)}, last end ${round((lastEnd - started) / 1000, 1)})`;
  });
  return [
    `plan ${t(record.approval?.requestedAt)}`,
    `approved ${t(record.decision?.at)}`,
    `files ready ${round((ready - started) / 1000, 1)}`,
    ...waves,
    `finished ${t(record.finishedAt)}`,
  ].join(", ");
}

/** Waits until Slack has heard nothing from the bot for 3 s: every thread caught up. */
async function quiet(bench: { slack: { calls(): unknown[] } }): Promise<void> {
  for (let calls = -1; calls !== bench.slack.calls().length; ) {
    calls = bench.slack.calls().length;
    await new Promise((resolve) => setTimeout(resolve, 3000));
  }
}

/**
 * What the rollout could not have been faster than: from its request until every host's files were ready
 * (the slowest download and build, all in parallel), then, wave after wave, each batch of at most
 * `maxUnavailable` hosts from its first switch to its last swap's end.
 */
function criticalPath(
  hosts: readonly { host: string; wave: number }[],
  children: ReadonlyMap<string, SwapRecord>,
  maxUnavailable: number,
  started: number,
): number {
  const at = (t: string | undefined) => (t === undefined ? Number.NaN : Date.parse(t));
  const ready = Math.max(
    ...hosts.map((h) => {
      const c = children.get(h.host)!;
      return Math.max(at(c.stages.download.finishedAt), at(c.stages.build.finishedAt));
    }),
  );
  let path = (ready - started) / 1000;
  for (const wave of [...new Set(hosts.map((h) => h.wave))].sort((a, b) => a - b)) {
    // in batches of maxUnavailable in the group's order (src/rollout/waves.ts); the rollout itself starts a
    // wave's next host as soon as one of its switches ends, which is never slower
    for (const batch of batches(
      hosts.filter((h) => h.wave === wave).map((h) => h.host),
      maxUnavailable,
    )) {
      const swaps = batch.map((host) => children.get(host)!);
      const first = Math.min(...swaps.map((c) => at(c.switch?.startedAt)));
      const last = Math.max(...swaps.map((c) => at(c.finishedAt)));
      path += (last - first) / 1000;
    }
  }
  if (!Number.isFinite(path)) throw new Error("bench: a rollout host's record lacks a stage time");
  return path;
}

/** Where each host's files came from: the Hub (and why), or a copy from which peer. */
function copiesLine(children: ReadonlyMap<string, SwapRecord>): string {
  const all = [...children.values()];
  const copied = all.filter((c) => c.peerCopy?.state === "copied");
  const fromHub = all.filter((c) => c.peerCopy?.state !== "copied");
  const bySource = new Map<string, number>();
  for (const c of copied) bySource.set(c.peerCopy!.from!, (bySource.get(c.peerCopy!.from!) ?? 0) + 1);
  const sources = [...bySource].map(([h, n]) => `${h} ${n}`).join(", ");
  const hub = fromHub.map((c) => `${c.host}${c.peerCopy?.why === undefined ? "" : ` (${c.peerCopy.why})`}`);
  return `${copied.length} hosts copied from peers (copies served: ${sources}); from the Hub: ${hub.join("; ")}`;
}
