import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { FAILOVER_OUTCOMES } from "../../bench/failover.ts";
import { RESULT_KEYS, type SectionName, TEXT_FIGURES } from "../../bench/report.ts";
import { tempDir } from "../support/tmp.ts";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * `npm run bench -- --quick` keeps working: every section runs against the real bot on the bench, the JSON
 * has exactly the keys the issue lists, each a finite number (an outcome a word), and the table is printed. (The quick run's
 * figures mean nothing; the full run's are in docs/benchmarks.md.)
 */
it("the quick bench writes every figure of every section and prints the table", async () => {
  const dir = await tempDir("modelswap-bench-smoke-");
  try {
    const out = join(dir.path, "results.json");
    const { stdout } = await run(
      process.execPath,
      ["--import", "tsx", "bench/run.ts", "--quick", "--out", out],
      {
        cwd: ROOT,
        // 336 s at load 3 on 2 cores on 2026-12-06 (45 s once; the sections have grown: gc at each swap's end,
        // the fault campaign's three schedules), and the suite runs beside it; its time is npm run bench's
        // business, not this test's, which checks that every figure is written
        timeout: 900_000,
        maxBuffer: 16 * 1024 * 1024,
      },
    ).catch((error: Error & { stdout?: string; stderr?: string }) => {
      // "Command failed" alone says nothing: what the bench printed last does
      throw new Error(
        `${error.message.split("\n")[0]}\n--- stdout (end) ---\n${tail(error.stdout)}\n--- stderr (end) ---\n${tail(error.stderr)}`,
      );
    });
    const results = JSON.parse(await readFile(out, "utf8")) as Record<string, Record<string, unknown>>;
    const sections = Object.keys(RESULT_KEYS) as SectionName[];
    expect(Object.keys(results)).toEqual(sections);
    for (const section of sections) {
      const flat = flatten(results[section]!);
      expect(Object.keys(flat), section).toEqual(RESULT_KEYS[section]);
      for (const [key, value] of Object.entries(flat)) {
        const ok = TEXT_FIGURES.has(`${section}.${key}`)
          ? (FAILOVER_OUTCOMES as readonly unknown[]).includes(value)
          : typeof value === "number" && Number.isFinite(value);
        expect(ok, `${section}.${key} = ${value}`).toBe(true);
      }
      expect(stdout).toMatch(new RegExp(`\\[\\d+/${sections.length}\\] ${section}: `));
      expect(stdout).toContain(`${section}: done in`);
    }
    expect(stdout).toMatch(/section +figure +value +baseline +target +met/);
    expect(results.ack!.requests).toBeGreaterThan(0);
    expect(results.concurrent!.swaps).toBeGreaterThan(0);
    expect(results.failover).toMatchObject({
      sentinel: { outcome: "swapped" },
      cluster: { outcome: "swapped" },
    });
  } finally {
    await dir.remove();
  }
}, 910_000);

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
