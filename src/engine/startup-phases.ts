import { z } from "zod";
import { duration } from "../format-duration.ts";

/**
 * Where a server's start went, as its own log lines time it: the engines print how long the weights took
 * to load, torch.compile and the CUDA graph capture (each engine's lines: sglang/startup-lines.ts,
 * vllm/startup-lines.ts). What they do not time — the process and its imports, the distributed setup,
 * the memory pools, the warm-up, the first answer — is the rest of the load. Every field is absent when
 * the engine did not print its line (an older build, a graph capture turned off).
 */
export const startupPhasesSchema = z.object({
  weightsSeconds: z.number().min(0).optional(),
  compileSeconds: z.number().min(0).optional(),
  graphsSeconds: z.number().min(0).optional(),
});
export type StartupPhases = z.infer<typeof startupPhasesSchema>;

/**
 * The seconds a phase took, from the lines `pattern` matches: its `seconds` group, and its `key` group
 * naming what was loaded or captured (a speculative model loads a target and a draft, and captures a graph
 * for each). Every tensor-parallel rank prints its own line, and the slowest rank holds the start back: the
 * largest per key, summed over keys. Undefined when no line matched.
 */
function phaseSeconds(journal: readonly string[], pattern: RegExp): number | undefined {
  const byKey = new Map<string, number>();
  for (const line of journal) {
    const m = pattern.exec(line);
    const seconds = Number(m?.groups?.seconds);
    if (m === null || !Number.isFinite(seconds)) continue;
    const key = m.groups?.key ?? "";
    byKey.set(key, Math.max(byKey.get(key) ?? 0, seconds));
  }
  if (byKey.size === 0) return undefined;
  return [...byKey.values()].reduce((a, b) => a + b, 0);
}

/**
 * The phases the lines time, each by its pattern (see phaseSeconds); a phase no line timed is left out.
 */
export function phasesFrom(
  journal: readonly string[],
  patterns: Partial<Record<keyof StartupPhases, RegExp>>,
): StartupPhases {
  const phases: StartupPhases = {};
  for (const [phase, pattern] of Object.entries(patterns) as [keyof StartupPhases, RegExp][]) {
    const seconds = phaseSeconds(journal, pattern);
    if (seconds !== undefined) phases[phase] = seconds;
  }
  return phases;
}

/**
 * The phases for people, after the load's whole time: "weights 61 s · torch.compile 24 s · CUDA graphs
 * 9.0 s · the rest 31 s (process start, memory pools, warm-up)"; undefined when the engine timed nothing.
 */
export function describeStartup(phases: StartupPhases, loadSeconds: number): string | undefined {
  const parts: string[] = [];
  if (phases.weightsSeconds !== undefined) parts.push(`weights ${duration(phases.weightsSeconds)}`);
  if (phases.compileSeconds !== undefined) parts.push(`torch.compile ${duration(phases.compileSeconds)}`);
  if (phases.graphsSeconds !== undefined) parts.push(`CUDA graphs ${duration(phases.graphsSeconds)}`);
  if (parts.length === 0) return undefined;
  const timed = (phases.weightsSeconds ?? 0) + (phases.compileSeconds ?? 0) + (phases.graphsSeconds ?? 0);
  const rest = loadSeconds - timed;
  if (rest >= 0.05) parts.push(`the rest ${duration(rest)} (process start, memory pools, warm-up)`);
  return parts.join(" · ");
}
