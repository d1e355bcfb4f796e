import type { AckFigures } from "./ack.ts";
import type { AlertFigures } from "./alert-latency.ts";
import type { ConcurrentFigures } from "./concurrent-swaps.ts";
import type { FailoverFigures } from "./failover.ts";
import type { FastFigures } from "./fast-switch.ts";
import type { FaultsFigures } from "./faults.ts";
import type { FrontDoorFigures } from "./front-door.ts";
import type { MonitorFigures } from "./monitor-cost.ts";
import type { ResumeFigures } from "./resume.ts";
import type { RolloutFigures } from "./rollout.ts";
import type { SwapFigures, VllmSwapFigures } from "./swap-overhead.ts";

/** A line of news while a section runs. */

/** The JSON `npm run bench` writes: these keys exactly, so runs compare across versions. */
export interface BenchResults {
  ack: AckFigures;
  swap: SwapFigures;
  vllm: VllmSwapFigures;
  concurrent: ConcurrentFigures;
  alert: AlertFigures;
  monitor: MonitorFigures;
  resume: ResumeFigures;
  frontdoor: FrontDoorFigures;
  failover: FailoverFigures;
  faults: FaultsFigures;
  fast: FastFigures;
  rollout: RolloutFigures;
}

export type SectionName = keyof BenchResults;

/**
 * The keys of each section, in the order (what the smoke test checks); `a.b` is key b of the
 * object a (frontdoor's figures are grouped by swap).
 */
export const RESULT_KEYS: { [S in SectionName]: readonly string[] } = {
  ack: ["requests", "p50_ms", "p99_ms", "baseline_p50_ms", "baseline_p99_ms", "p99_ratio"],
  swap: ["wall_s", "critical_path_s", "overhead_ratio", "sequential_script_s", "vs_script_ratio"],
  vllm: ["wall_s", "critical_path_s", "overhead_ratio"],
  concurrent: [
    "swaps",
    "rate_limited",
    "stage_wait_on_slack_s",
    "last_outcome_s",
    "outcome_lag_s",
    "calls_per_swap",
  ],
  alert: ["interval_s", "threshold", "p50_extra_ms", "p99_extra_ms"],
  monitor: [
    "hosts",
    "interval_s",
    "cpu_core_fraction",
    "rss_mb",
    "worst_lateness_s",
    "checks_per_interval",
    "ssh_handshake_cpu_ms",
    "ssh_exec_cpu_ms",
    "status_s",
  ],
  resume: ["bytes_total", "bytes_refetched"],
  frontdoor: [
    "bluegreen.failed",
    "bluegreen.max_gap_ms",
    "bluegreen.p99_ms",
    "cold.failed",
    "cold.max_gap_ms",
    "cold.downtime_s",
    "cold.load_s",
    "cold.drain_s",
    "rollback.max_gap_ms",
    "baseline.failed",
    "baseline.max_gap_ms",
  ],
  failover: [
    "sentinel.outcome",
    "sentinel.duplicates",
    "sentinel.failover_s",
    "cluster.outcome",
    "cluster.duplicates",
    "cluster.failover_s",
  ],
  faults: [
    "seed",
    "runs",
    "lies",
    "outages_by_bot",
    "unfinished",
    "stale",
    "invariant_breaks",
    "not_played",
    "wall_s",
    "by_mode.cold",
    "by_mode.door",
    "by_mode.bluegreen",
    "by_fault.unit_kill",
    "by_fault.unit_crash_loop",
    "by_fault.nan",
    "by_fault.worker_stop",
    "by_fault.worker_kill",
    "by_fault.ssh_drop",
    "by_fault.slack_refuse",
    "by_fault.redis_restart",
  ],
  fast: [
    "parked.failed",
    "parked.rollback_s",
    "parked.wake_s",
    "reload.failed",
    "reload.rollback_s",
    "rollback_ratio",
    "warm.first_load_s",
    "warm.warm_load_s",
    "warm.ratio",
    "revision.cold_s",
    "revision.in_place_s",
    "revision.ratio",
    "revision.failed",
  ],
  rollout: [
    "hosts",
    "hub_models_rollout",
    "hub_models_singles",
    "wall_s",
    "critical_path_s",
    "wall_ratio",
    "touched_beyond_canary",
    "slack_calls_per_host",
    "slack_calls_per_single_swap",
  ],
};

/** The figures that are words, not numbers: a swap's outcome ("swapped", "rolled back", "failed", "none"). */
export const TEXT_FIGURES: ReadonlySet<string> = new Set([
  "failover.sentinel.outcome",
  "failover.cluster.outcome",
]);

/** Figures in the key order (the JSON reads the same in every run); a missing or non-finite one throws. */
export function ordered(results: Partial<BenchResults>): Partial<BenchResults> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const section of Object.keys(RESULT_KEYS) as SectionName[]) {
    const figures = results[section] as Record<string, unknown> | undefined;
    if (figures === undefined) continue;
    const into: Record<string, unknown> = {};
    for (const path of RESULT_KEYS[section]) {
      const keys = path.split(".");
      const value = keys.reduce<unknown>(
        (at, k) => (at as Record<string, unknown> | undefined)?.[k],
        figures,
      );
      const text = TEXT_FIGURES.has(`${section}.${path}`);
      if (text ? typeof value !== "string" : typeof value !== "number" || !Number.isFinite(value))
        throw new Error(`bench: ${section}.${path} is ${value}, not a ${text ? "word" : "finite number"}`);
      let at = into;
      for (const k of keys.slice(0, -1)) {
        at[k] = at[k] ?? {};
        at = at[k] as Record<string, unknown>;
      }
      at[keys.at(-1)!] = value;
    }
    out[section] = into;
  }
  return out as Partial<BenchResults>;
}

interface Row {
  section: string;
  figure: string;
  value: string;
  baseline: string;
  target: string;
  ok: boolean | undefined;
}

/** The table people read: each figure, its baseline in the same run, its target and whether it is met. */
export function renderTable(results: Partial<BenchResults>): string {
  const rows: Row[] = [];
  const { ack, swap, vllm, concurrent, alert, monitor, resume, frontdoor, failover, faults, fast, rollout } =
    results;
  if (ack !== undefined) {
    rows.push(
      row("ack", "p50 ack", ms(ack.p50_ms), ms(ack.baseline_p50_ms), "", undefined),
      row("", "p99 ack", ms(ack.p99_ms), ms(ack.baseline_p99_ms), "≤ 50 ms", ack.p99_ms <= 50),
      row("", "p99 ratio", x(ack.p99_ratio), "bare Bolt", "≤ 1.5", ack.p99_ratio <= 1.5),
      row("", "requests", String(ack.requests), "", "", undefined),
    );
  }
  if (swap !== undefined) {
    rows.push(
      row("swap", "wall", s(swap.wall_s), s(swap.critical_path_s), "", undefined),
      row(
        "",
        "overhead ratio",
        x(swap.overhead_ratio),
        "critical path",
        "≤ 1.05",
        swap.overhead_ratio <= 1.05,
      ),
      row(
        "",
        "vs script",
        x(swap.vs_script_ratio),
        s(swap.sequential_script_s),
        "≤ 0.8",
        swap.vs_script_ratio <= 0.8,
      ),
    );
  }
  if (vllm !== undefined) {
    rows.push(
      row("vllm swap", "wall", s(vllm.wall_s), s(vllm.critical_path_s), "", undefined),
      row(
        "",
        "overhead ratio",
        x(vllm.overhead_ratio),
        "critical path",
        "≤ 1.05",
        vllm.overhead_ratio <= 1.05,
      ),
    );
  }
  if (concurrent !== undefined) {
    const c = concurrent;
    rows.push(
      row("concurrent", "swaps at once, one channel", String(c.swaps), "", "", undefined),
      row("", "rate limited (429)", String(c.rate_limited), "", "= 0", c.rate_limited === 0),
      row(
        "",
        "stage waits on Slack",
        `${c.stage_wait_on_slack_s} s`,
        "",
        "= 0 s",
        c.stage_wait_on_slack_s === 0,
      ),
      row(
        "",
        "outcome on the card after",
        `${c.outcome_lag_s} s`,
        "the swap's end",
        "≤ 30 s",
        c.outcome_lag_s <= 30,
      ),
      row("", "last outcome", `${c.last_outcome_s} s`, "the requests", "", undefined),
      row("", "calls per swap", String(c.calls_per_swap), "", "≤ 30", c.calls_per_swap <= 30),
    );
  }
  if (alert !== undefined) {
    const floor = `${alert.threshold} × ${alert.interval_s} s`;
    rows.push(
      row("alert", "p50 beyond floor", ms(alert.p50_extra_ms), floor, "", undefined),
      row("", "p99 beyond floor", ms(alert.p99_extra_ms), floor, "≤ 2000 ms", alert.p99_extra_ms <= 2000),
    );
  }
  if (monitor !== undefined) {
    const fleet = `${monitor.hosts} hosts / ${monitor.interval_s} s`;
    rows.push(
      row(
        "monitor",
        "CPU (cores)",
        String(monitor.cpu_core_fraction),
        fleet,
        "≤ 0.25",
        monitor.cpu_core_fraction <= 0.25,
      ),
      row("", "RSS", `${monitor.rss_mb} MB`, "", "≤ 300 MB", monitor.rss_mb <= 300),
      row(
        "",
        "worst lateness of a check",
        `${monitor.worst_lateness_s} s`,
        "",
        "≤ 1 s",
        monitor.worst_lateness_s <= 1,
      ),
      row(
        "",
        "checks per interval",
        String(monitor.checks_per_interval),
        `${monitor.hosts} hosts`,
        "≥ 0.98 × hosts",
        monitor.checks_per_interval >= 0.98 * monitor.hosts,
      ),
      row("", "/llm status answered", `${monitor.status_s} s`, `${monitor.hosts} hosts`, "", undefined),
    );
  }
  if (resume !== undefined) {
    rows.push(
      row(
        "resume",
        "bytes refetched",
        String(resume.bytes_refetched),
        `of ${resume.bytes_total}`,
        "= 0",
        resume.bytes_refetched === 0,
      ),
    );
  }
  if (frontdoor !== undefined) {
    const { bluegreen, cold, rollback, baseline } = frontdoor;
    const bound = 1.1 * cold.load_s + cold.drain_s;
    rows.push(
      row(
        "frontdoor",
        "blue/green: failed requests",
        String(bluegreen.failed),
        String(baseline.failed),
        "= 0",
        bluegreen.failed === 0,
      ),
      row(
        "",
        "blue/green: longest gap (p99)",
        `${ms(bluegreen.max_gap_ms)} (${ms(bluegreen.p99_ms)})`,
        ms(baseline.max_gap_ms),
        "≤ 2 s",
        bluegreen.max_gap_ms <= 2000,
      ),
      row(
        "",
        "rollback in the window: gap",
        ms(rollback.max_gap_ms),
        "",
        "≤ 2 s",
        rollback.max_gap_ms <= 2000,
      ),
      row(
        "",
        "cold: failed requests",
        String(cold.failed),
        String(baseline.failed),
        "= 0",
        cold.failed === 0,
      ),
      row("", "cold: longest gap", ms(cold.max_gap_ms), ms(baseline.max_gap_ms), "", undefined),
      row(
        "",
        "cold: hold (downtime)",
        s(cold.downtime_s),
        `load ${s(cold.load_s)} + drain ${s(cold.drain_s)}`,
        `≤ ${s(round1(bound))}`,
        cold.downtime_s <= bound,
      ),
    );
  }
  if (failover !== undefined) {
    for (const kind of ["sentinel", "cluster"] as const) {
      const f = failover[kind];
      rows.push(
        row(
          kind === "sentinel" ? "failover" : "",
          `${kind}: swap outcome`,
          f.outcome,
          `failover ${s(f.failover_s)}`,
          "swapped",
          f.outcome === "swapped",
        ),
        row("", `${kind}: duplicate side effects`, String(f.duplicates), "", "= 0", f.duplicates === 0),
      );
    }
  }
  if (faults !== undefined) {
    const f = faults;
    const modes = `cold ${f.by_mode.cold} · door ${f.by_mode.door} · blue/green ${f.by_mode.bluegreen}`;
    rows.push(
      row("faults", "schedules played", String(f.runs), modes, "≥ 200", f.runs >= 200),
      row("", "lies (thread or ledger vs host)", String(f.lies), `seed ${f.seed}`, "= 0", f.lies === 0),
      row("", "outages caused by the bot", String(f.outages_by_bot), "", "= 0", f.outages_by_bot === 0),
      row("", "swaps that never ended", String(f.unfinished), "", "= 0", f.unfinished === 0),
      row("", "wall", s(f.wall_s), `${f.not_played} not played`, "", undefined),
    );
  }
  if (fast !== undefined) {
    rows.push(
      row(
        "fast",
        "parked rollback",
        s(fast.parked.rollback_s),
        `reload ${s(fast.reload.rollback_s)}`,
        "",
        undefined,
      ),
      row(
        "",
        "parked / reload rollback",
        x(fast.rollback_ratio),
        `woken in ${s(fast.parked.wake_s)}`,
        "≤ 0.1",
        fast.rollback_ratio <= 0.1,
      ),
      row(
        "",
        "failed requests",
        String(fast.parked.failed),
        String(fast.reload.failed),
        "= 0",
        fast.parked.failed === 0 && fast.reload.failed === 0,
      ),
      row(
        "",
        "re-swap load, caches warm",
        s(fast.warm.warm_load_s),
        `first ${s(fast.warm.first_load_s)}`,
        "",
        undefined,
      ),
      row("", "warm / first load", x(fast.warm.ratio), "", "≤ 0.5", fast.warm.ratio <= 0.5),
      row(
        "",
        "new revision in place: held",
        s(fast.revision.in_place_s),
        `cold ${s(fast.revision.cold_s)}`,
        "",
        undefined,
      ),
      row("", "in place / cold", x(fast.revision.ratio), "", "≤ 0.1", fast.revision.ratio <= 0.1),
      row(
        "",
        "failed requests (in place)",
        String(fast.revision.failed),
        "",
        "= 0",
        fast.revision.failed === 0,
      ),
    );
  }
  if (rollout !== undefined) {
    const r = rollout;
    rows.push(
      row(
        "rollout",
        `Hub bytes, ${r.hosts} hosts (models)`,
        x(r.hub_models_rollout),
        `singles ${x(r.hub_models_singles)}`,
        "≤ 1.05",
        r.hub_models_rollout <= 1.05,
      ),
      row(
        "",
        "wall / critical path",
        x(r.wall_ratio),
        `${s(r.wall_s)} vs ${s(r.critical_path_s)}`,
        "≤ 1.1",
        r.wall_ratio <= 1.1,
      ),
      row(
        "",
        "hosts touched past a failed canary",
        String(r.touched_beyond_canary),
        "",
        "= 0",
        r.touched_beyond_canary === 0,
      ),
      row(
        "",
        "Slack calls per host",
        String(r.slack_calls_per_host),
        `single swap ${r.slack_calls_per_single_swap}`,
        "≤ single",
        r.slack_calls_per_host <= r.slack_calls_per_single_swap,
      ),
    );
  }
  const head: Row = {
    section: "section",
    figure: "figure",
    value: "value",
    baseline: "baseline",
    target: "target",
    ok: undefined,
  };
  const cells = (r: Row) => [r.section, r.figure, r.value, r.baseline, r.target];
  const widths = cells(head).map((_, i) => Math.max(...[head, ...rows].map((r) => cells(r)[i]!.length)));
  const line = (r: Row, mark: string) =>
    `${cells(r)
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")}  ${mark}`.trimEnd();
  const rule = "─".repeat(widths.reduce((a, b) => a + b + 2, 0) + 4);
  return [
    line(head, "met"),
    rule,
    ...rows.map((r) => line(r, r.ok === undefined ? "" : r.ok ? "✓" : "✗")),
  ].join("\n");
}

function row(
  section: string,
  figure: string,
  value: string,
  baseline: string,
  target: string,
  ok: boolean | undefined,
): Row {
  return { section, figure, value, baseline, target, ok };
}

const ms = (v: number) => `${v} ms`;
const s = (v: number) => `${v} s`;
const x = (v: number) => `${v}×`;

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}
