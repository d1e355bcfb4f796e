import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { benchAck } from "./ack.ts";
import { benchAlert } from "./alert-latency.ts";
import { benchConcurrent } from "./concurrent-swaps.ts";
import { benchFailover } from "./failover.ts";
import { benchFast } from "./fast-switch.ts";
import { benchFaults } from "./faults.ts";
import { benchFrontDoor } from "./front-door.ts";
import { benchMonitor } from "./monitor-cost.ts";
import { type BenchPlan, FULL, QUICK } from "./plan.ts";
import { type BenchResults, ordered, renderTable, type SectionName } from "./report.ts";
import { benchResume } from "./resume.ts";
import { benchRollout } from "./rollout.ts";
import type { Progress, SectionResult } from "./section.ts";
import { benchSwap, benchVllmSwap } from "./swap-overhead.ts";

/** Each section: what the progress line says, and how it runs. */
const SECTIONS: {
  [S in SectionName]: {
    what: (plan: BenchPlan) => string;
    run: (plan: BenchPlan, progress: Progress) => Promise<SectionResult<BenchResults[S]>>;
  };
} = {
  ack: {
    what: (p) => `${p.ack.requests} signed /llm requests to the bot and to a bare Bolt app`,
    run: (p, progress) => benchAck(p.ack, progress),
  },
  swap: {
    what: (p) =>
      `one swap (download ${p.swap.downloadSeconds} s ∥ build ${p.swap.buildSeconds} s, load ${p.swap.loadSeconds} s) vs its critical path and a sequential script`,
    run: (p, progress) => benchSwap(p.swap, progress),
  },
  vllm: {
    what: (p) =>
      `the same swap served by vLLM (download ${p.vllm.downloadSeconds} s ∥ build ${p.vllm.buildSeconds} s, load ${p.vllm.loadSeconds} s) vs its critical path`,
    run: (p, progress) => benchVllmSwap(p.vllm, progress),
  },
  concurrent: {
    what: (p) =>
      `${p.concurrent.swaps} swaps on ${p.concurrent.swaps} hosts at once in one channel under Slack's rate limits`,
    run: (p, progress) => benchConcurrent(p.concurrent, progress),
  },
  alert: {
    what: (p) =>
      `serving process killed ${p.alert.repeats}× (check every ${p.alert.intervalSeconds} s, alert after ${p.alert.threshold})`,
    run: (p, progress) => benchAlert(p.alert, progress),
  },
  monitor: {
    what: (p) =>
      `${p.monitor.hosts} hosts checked every ${p.monitor.intervalSeconds} s for ${p.monitor.durationSeconds} s`,
    run: (p, progress) => benchMonitor(p.monitor, progress),
  },
  resume: {
    what: () => "the worker SIGKILLed mid-download and restarted",
    run: (p, progress) => benchResume(p.resume, progress),
  },
  frontdoor: {
    what: (p) =>
      `a blue/green swap and its flip back, a cold swap (load ${p.frontdoor.loadSeconds} s) behind a real HAProxy and one without, each under a request every ${p.frontdoor.everyMs} ms`,
    run: (p, progress) => benchFrontDoor(p.frontdoor, progress),
  },
  failover: {
    what: () =>
      "a swap whose Redis master is SIGKILLed mid-switch: behind Sentinel, then as a three-master Cluster",
    run: (p, progress) => benchFailover(p.failover, progress),
  },
  faults: {
    what: (p) =>
      `a randomized fault campaign: ${p.faults.runs} swaps (cold, behind a front door, blue/green), each with one fault at one of its steps, checked against what the host serves`,
    run: (p, progress) => benchFaults(p.faults, progress),
  },
  fast: {
    what: (p) =>
      `a failed cold swap rolled back to a parked old unit (SGLang memory saver) and to a stopped one (a reload of ${p.fast.coldStartSeconds} s), behind a real HAProxy, a request every ${p.fast.everyMs} ms`,
    run: (p, progress) => benchFast(p.fast, progress),
  },
  rollout: {
    what: (p) =>
      `a rollout to ${p.rollout.hosts} hosts (a canary, 25 %, the rest; ${p.rollout.maxUnavailable} at once) against one swap per host, and one whose canary answers NaN`,
    run: (p, progress) => benchRollout(p.rollout, progress),
  },
};

const USAGE = `Usage: npm run bench -- [--quick] [--out FILE] [--only SECTION,…]

  --quick        small counts, short stages, one section at a time (the CI smoke run; its figures mean nothing)
  --out FILE     where the JSON goes (default bench-results.json)
  --only LIST    run only these sections: ${Object.keys(SECTIONS).join(", ")}
  --cpu-prof DIR run the bot's child processes under node --cpu-prof, profiles in DIR`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      out: { type: "string", default: "bench-results.json" },
      only: { type: "string" },
      "cpu-prof": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const names = Object.keys(SECTIONS) as SectionName[];
  const wanted = values.only === undefined ? names : values.only.split(",").map((s) => s.trim());
  const unknown = wanted.filter((s) => !names.includes(s as SectionName));
  if (unknown.length > 0) {
    process.stderr.write(`Unknown section ${unknown.join(", ")}.\n${USAGE}\n`);
    return 2;
  }
  if (values["cpu-prof"] !== undefined) process.env.MODELSWAP_BENCH_CPU_PROF = resolve(values["cpu-prof"]);
  const plan = values.quick ? QUICK : FULL;
  const out = resolve(values.out);
  const results: Partial<BenchResults> = {};
  const details: Partial<Record<SectionName, string[]>> = {};
  const started = Date.now();
  const run = names.filter((n) => wanted.includes(n));
  process.stdout.write(
    `modelswap bench: ${values.quick ? "quick run (its figures mean nothing), one section at a time" : "full run"}, ${run.length} sections\n`,
  );
  const runSection = async (name: SectionName, i: number) => {
    const section = SECTIONS[name];
    const sectionStart = Date.now();
    process.stdout.write(`[${i + 1}/${run.length}] ${name}: ${section.what(plan)}…\n`);
    const progress: Progress = (line) => process.stdout.write(`      ${name}: ${line}\n`);
    try {
      const runIt = section.run as (p: BenchPlan, pr: Progress) => Promise<SectionResult<unknown>>;
      const result = await runIt(plan, progress);
      (results as Record<string, unknown>)[name] = result.figures;
      details[name] = result.details;
    } catch (error) {
      throw new Error(
        `the ${name} section failed: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
    process.stdout.write(`      ${name}: done in ${seconds(Date.now() - sectionStart)}\n`);
  };
  // One section at a time, the quick run too: side by side, six benches and their bots on two cores
  // (beside the rest of the suite) starved one another, and a ✅ or a health check missed its window.
  for (const [i, name] of run.entries()) await runSection(name, i);
  const figures = ordered(results);
  await writeFile(out, `${JSON.stringify(figures, null, 2)}\n`);
  const notes = run.flatMap((name) => details[name] ?? []).map((d) => `  ${d}`);
  process.stdout.write(`\n${renderTable(figures)}\n\n${notes.join("\n")}\n\n`);
  process.stdout.write(`Figures written to ${out} (${seconds(Date.now() - started)} in all).\n`);
  return 0;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
