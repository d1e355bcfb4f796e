import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { taskDir } from "../jobs/swap/stages/download-task.ts";
import type { SimGpuHost } from "../testbench/gpu-host/index.ts";

/**
 * What the simulated host itself recorded, for timings free of the bot's polling: a detached task's
 * start and end (its pid and exit files), the shims' calls, and a unit's journal.
 */
export async function taskSpan(sim: SimGpuHost, swapId: string, name: "download" | "build"): Promise<Span> {
  const dir = taskDir(sim.modelsDir, swapId, name);
  const started = (await stat(join(dir, "pid"))).mtimeMs;
  const ended = (await stat(join(dir, "exit"))).mtimeMs;
  return { start: started, end: ended, seconds: (ended - started) / 1000 };
}

export interface Span {
  start: number;
  end: number;
  seconds: number;
}

/** When the shims were called (`state/calls.jsonl`), as epoch ms, with their arguments. */
export async function shimCalls(sim: SimGpuHost, cmd: string): Promise<{ at: number; argv: string[] }[]> {
  return (await sim.calls())
    .filter((call) => call.cmd === cmd)
    .map((call) => ({ at: Date.parse(call.at), argv: call.argv }));
}

/** The first journal line of a unit whose message matches, with its time (epoch ms). */
export async function journalTime(sim: SimGpuHost, unit: string, pattern: RegExp): Promise<number> {
  const file = join(
    sim.stateDir,
    "journal",
    unit.endsWith(".service") ? `${unit}.log` : `${unit}.service.log`,
  );
  const lines = (await readFile(file, "utf8")).split("\n");
  for (const line of lines) {
    const [at = "", , , message = ""] = line.split("\t");
    if (pattern.test(message)) return Date.parse(at);
  }
  throw new Error(`bench: no journal line of ${unit} matches ${pattern}`);
}
