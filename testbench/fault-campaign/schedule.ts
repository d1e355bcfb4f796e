import fc from "fast-check";

/*
 * A fault campaign's schedules (issue 27 §6): one swap on one bench host of a given mode, with one fault
 * injected at one step of it. fast-check draws them from a seed, so a seed names a whole campaign and
 * (seed, path) names one schedule of it: `fc.sample(drawArbitrary, { seed, path: "7" })` draws the
 * eighth (fast-check draws the fault, its point, target, length and seed; the mode takes turns by path).
 * Nothing here touches a process; the runner (campaign.ts) plays them.
 */

/** How the swap reaches clients: the three shapes the bench has hosts for. */
export const MODES = ["cold", "door", "bluegreen"] as const;
export type Mode = (typeof MODES)[number];

export const MODE_TEXT: Record<Mode, string> = {
  cold: "cold swap without a front door",
  door: "cold swap behind the front door",
  bluegreen: "blue/green on spare GPUs behind the front door",
};

/**
 * The swap's steps a fault may fall in (the record's `step`), per mode, in the order the swap runs them.
 * `retire` is the blue/green flip-back window. A cold swap without a front door has no release worth the
 * name (it returns at once), so it is left out there.
 */
export const POINTS: Record<Mode, readonly Point[]> = {
  cold: ["switch", "health", "sanity", "benchmark"],
  door: ["switch", "health", "sanity", "release", "benchmark"],
  bluegreen: ["switch", "health", "sanity", "benchmark", "release", "retire"],
};
export type Point = "switch" | "health" | "sanity" | "release" | "benchmark" | "retire";

/** The faults, each with the targets it takes. */
export const FAULTS = {
  /** SIGKILL the unit's main process once (systemd restarts it: Restart=on-failure). */
  "unit-kill": ["new", "old"],
  /** The unit's model set to crash on start, then its process SIGKILLed: it never serves again. */
  "unit-crash-loop": ["new", "old"],
  /** The new model answers NaN (`!!!!`, null logprobs) from the point on. */
  nan: ["new"],
  /** SIGSTOP the worker that runs the swap; SIGCONT once another took it over (or after a bound). */
  "worker-stop": ["running"],
  /** SIGKILL the worker that runs the swap, then start another. */
  "worker-kill": ["running"],
  /** `cut`: every SSH connection killed (the listener stays); `down`: sshd stopped too, for a while. */
  "ssh-drop": ["cut", "down"],
  /** Slack answers every Web API call with an error for a while (`internal_error`, or HTTP 503). */
  "slack-refuse": ["internal_error", "503"],
  /** redis-server stopped (SIGTERM, AOF flushed) or SIGKILLed, then started again. */
  "redis-restart": ["stop", "kill"],
} as const satisfies Record<string, readonly string[]>;
export type Fault = keyof typeof FAULTS;
export const FAULT_NAMES = Object.keys(FAULTS) as Fault[];

export interface Schedule {
  mode: Mode;
  fault: Fault;
  point: Point;
  target: string;
  /** How long a fault that lasts (SSH down, Slack refusing, Redis away) lasts, in ms. */
  durationMs: number;
  /** The schedule's own seed: what else it draws (e.g. which worker when none runs the swap). */
  seed: number;
}

/** What fast-check draws for one schedule; `toSchedule` makes it one (its mode comes from its path). */
export interface Draw {
  fault: Fault;
  pointIndex: number;
  targetIndex: number;
  durationMs: number;
  seed: number;
}

export const drawArbitrary: fc.Arbitrary<Draw> = fc.record({
  fault: fc.constantFrom(...FAULT_NAMES),
  pointIndex: fc.nat({ max: 1000 }),
  targetIndex: fc.nat({ max: 1000 }),
  durationMs: fc.integer({ min: 1000, max: 12_000 }),
  seed: fc.integer({ min: 0, max: 0x7fffffff }),
});

/**
 * The schedule at `path`: the modes take turns (path 0 cold, 1 door, 2 blue/green, …) so that the
 * campaign's hosts, one set per mode, stay equally busy; the point is one of that mode's steps.
 */
export function toSchedule(draw: Draw, path: number): Schedule {
  const mode = MODES[path % MODES.length]!;
  const points = POINTS[mode];
  const targets = FAULTS[draw.fault];
  return {
    mode,
    fault: draw.fault,
    point: points[draw.pointIndex % points.length]!,
    target: targets[draw.targetIndex % targets.length]!,
    durationMs: draw.durationMs,
    seed: draw.seed,
  };
}

/** The campaign of `seed`: its schedules, or (with `paths`) only those, each with its path (index). */
export function campaignSchedules(
  seed: number,
  runs: number,
  paths?: readonly number[],
): { path: number; schedule: Schedule }[] {
  if (paths !== undefined && paths.length > 0)
    return paths.map((path) => ({
      path,
      schedule: toSchedule(fc.sample(drawArbitrary, { seed, path: String(path), numRuns: 1 })[0]!, path),
    }));
  return fc
    .sample(drawArbitrary, { seed, numRuns: runs })
    .map((draw, path) => ({ path, schedule: toSchedule(draw, path) }));
}

/** "door · unit-crash-loop(new) at health" */
export function describeSchedule(s: Schedule): string {
  const ms = lastingMs(s);
  const lasting = ms === undefined ? "" : ` for ${(ms / 1000).toFixed(1)} s`;
  return `${s.mode} · ${s.fault}(${s.target})${lasting} at ${s.point}`;
}

/** How long the fault lasts, for those that do: sshd down, Slack refusing, Redis away (a quarter). */
export function lastingMs(s: Schedule): number | undefined {
  if (s.fault === "ssh-drop") return s.target === "down" ? s.durationMs : undefined;
  if (s.fault === "slack-refuse") return s.durationMs;
  if (s.fault === "redis-restart") return Math.round(s.durationMs / 4);
  return undefined;
}

/** The one line that plays one schedule again (its timing may differ; its schedule does not). */
export function replayCommand(seed: number, path: number): string {
  return `CAMPAIGN_SEED=${seed} CAMPAIGN_PATH=${path} npx vitest run test/faults/campaign.test.ts`;
}

/** A fresh campaign seed, as fast-check picks one, when none is given. */
export function freshSeed(): number {
  return (Date.now() ^ (Math.random() * 0x100000000)) >>> 1;
}
