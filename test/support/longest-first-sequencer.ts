import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import fileSeconds from "./file-seconds.json" with { type: "json" };

/** A file the table does not know yet (new since it was written): run among the first, as vitest does. */
const UNKNOWN_SECONDS = 60;

/**
 * Runs the longest test files first (how long each ran last, from test/support/file-seconds.json), so
 * that no long file starts last and runs alone while the other workers idle: on a fresh clone (CI) vitest
 * has no timings of its own and orders by file size, which left a tail of about three minutes in a
 * 15-minute run. `node scripts/file-seconds.mjs <vitest-json-report>` writes the table anew.
 */
export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const table = fileSeconds as Record<string, number>;
    const seconds = (spec: TestSpecification) =>
      table[relative(this.ctx.config.root, spec.moduleId)] ?? UNKNOWN_SECONDS;
    return [...files].sort((a, b) => seconds(b) - seconds(a));
  }
}
