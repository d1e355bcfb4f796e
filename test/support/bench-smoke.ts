import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { FAILOVER_OUTCOMES } from "../../bench/failover.ts";
import { RESULT_KEYS, type SectionName, TEXT_FIGURES } from "../../bench/report.ts";
import { tempDir } from "./tmp.ts";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The quick bench's sections in the groups test/bench/smoke-*.test.ts run, one group a file, so the
 * suite's workers share them (all eleven in one file ran 346 s on one worker, and 900 s once on a slower
 * machine, where it timed out). Every section is in exactly one group (test/unit/bench-smoke-groups.test.ts).
 */
export const SMOKE_GROUPS = {
  swaps: ["ack", "swap", "vllm", "concurrent"],
  watch: ["alert", "monitor", "resume"],
  outages: ["frontdoor", "failover"],
  faults: ["faults"],
  fast: ["fast"],
  rollout: ["rollout"],
} as const satisfies Record<string, readonly SectionName[]>;

/**
 * `npm run bench -- --quick --only <group>` keeps working: each section runs against the real bot on the
 * bench, the JSON has exactly the keys the issues list, each a finite number (an outcome a word), and the
 * table is printed. (The quick run's figures mean nothing; the full run's are in docs/benchmarks.md.)
 * `check`: what else the group's figures must show.
 */
export function smokeTest(
  group: keyof typeof SMOKE_GROUPS,
  check: (results: Record<string, Record<string, unknown>>) => void = () => undefined,
): void {
  const sections: readonly SectionName[] = SMOKE_GROUPS[group];
  it(`the quick bench writes every figure of ${sections.join(", ")} and prints the table`, async () => {
    const dir = await tempDir(`modelswap-bench-smoke-${group}-`);
    try {
      const out = join(dir.path, "results.json");
      const { stdout } = await run(
        process.execPath,
        ["--import", "tsx", "bench/run.ts", "--quick", "--only", sections.join(","), "--out", out],
        // its time is npm run bench's business, not this test's, which checks that every figure is written
        { cwd: ROOT, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 },
      ).catch((error: Error & { stdout?: string; stderr?: string }) => {
        // "Command failed" alone says nothing: what the bench printed last does
        throw new Error(
          `${error.message.split("\n")[0]}\n--- stdout (end) ---\n${tail(error.stdout)}\n--- stderr (end) ---\n${tail(error.stderr)}`,
        );
      });
      const results = JSON.parse(await readFile(out, "utf8")) as Record<string, Record<string, unknown>>;
      expect(Object.keys(results)).toEqual(sections);
      for (const [i, section] of sections.entries()) {
        const flat = flatten(results[section]!);
        expect(Object.keys(flat), section).toEqual(RESULT_KEYS[section]);
        for (const [key, value] of Object.entries(flat)) {
          const ok = TEXT_FIGURES.has(`${section}.${key}`)
            ? (FAILOVER_OUTCOMES as readonly unknown[]).includes(value)
            : typeof value === "number" && Number.isFinite(value);
          expect(ok, `${section}.${key} = ${value}`).toBe(true);
        }
        expect(stdout).toContain(`[${i + 1}/${sections.length}] ${section}: `);
        expect(stdout).toContain(`${section}: done in`);
      }
      expect(stdout).toMatch(/section +figure +value +baseline +target +met/);
      check(results);
    } finally {
      await dir.remove();
    }
  }, 610_000);
}

/** `{ cold: { failed: 0 } }` → `{ "cold.failed": 0 }`: the JSON's figures as RESULT_KEYS names them. */
function flatten(figures: Record<string, unknown>, prefix = ""): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(figures)) {
    if (value !== null && typeof value === "object")
      Object.assign(out, flatten(value as Record<string, unknown>, `${prefix}${key}.`));
    else out[`${prefix}${key}`] = value;
  }
  return out;
}

/** The last 40 lines of a child's output. */
function tail(text: string | undefined): string {
  return (text ?? "").split("\n").slice(-40).join("\n");
}
