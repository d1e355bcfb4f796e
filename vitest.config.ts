import { defineConfig } from "vitest/config";
import LongestFirstSequencer from "./test/support/longest-first-sequencer.ts";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    // Two cores, but the suite mostly waits (simulated loads, outages, health polls): a whole run with three
    // files at a time used about 1.1 cores (17 CPU-min in 14.3 min, 2026-12-03 morning). Each file starts
    // real processes (redis, sshd, simulated servers). With vLLM's files added, four at a time ran the
    // machine at a load of 8–10 and timing tests failed (2026-12-03 evening, 23.8 min): three.
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ["test/global-setup.ts"],
    // the longest files first, from a committed table: a fresh clone has no timings of vitest's own
    sequence: { sequencer: LongestFirstSequencer },
    // the children the tests start run test/global-setup.ts's build of the current sources
    // (testbench/modelswap-bin.ts); anything that runs bin/modelswap.js itself runs the TypeScript sources
    // (tsx), never a build in dist/ that may be stale
    env: { MODELSWAP_FROM_SOURCE: "1" },
  },
});
