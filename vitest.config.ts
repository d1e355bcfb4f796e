import { defineConfig } from "vitest/config";
import LongestFirstSequencer from "./test/support/longest-first-sequencer.ts";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    // Files share their worker's module cache (isolate: false): the unit folder took 49.6 s of CPU in
    // 26.5 s isolated, 19.2 s in 13.7 s shared, since each file no longer loads vitest, src/ and the
    // testbench afresh. No test mocks modules (no vi.mock); the three that fake timers restore them.
    isolate: false,
    // Two cores, but the suite mostly waits (simulated loads, outages, health polls). Each file starts real
    // processes (redis, sshd, simulated servers). On 2026-12-03, four at a time ran the machine at a load of
    // 8–10 and timing tests failed; since the benches pace Slack at the emulator's scaled limits and run
    // quick engines (2026-12-07), three at a time used 59 % of the two cores (895 s) and four used 67 %
    // at a run queue of 5.6, every test passing (736 s). With more of the sim's commands answered by its bash
    // wrappers (2026-12-07, fourth session), clean-clone runs took 761 s at four, 614 s at five and 641 s at
    // six (user + system CPU 864 s over 640 s at five: the suite still mostly waits): five.
    maxWorkers: 5,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ["test/global-setup.ts"],
    // the longest files first, from a committed table: a fresh clone has no timings of vitest's own
    sequence: { sequencer: LongestFirstSequencer },
    // the children the tests start run test/global-setup.ts's build of the current sources
    // (testbench/modelswap-bin.ts); anything that runs bin/modelswap.js itself runs the TypeScript sources
    // (tsx), never a build in dist/ that may be stale
    // SHLVL: a test's own `bash -c` (execFile: its stdin a socket pair) would otherwise read the runner's
    // ~/.bashrc as if rshd had started it (Debian's bash, SSH_SOURCE_BASHRC; npm starts vitest at SHLVL 0).
    // Here root's runs `pyenv init`: 100 ms a shell, and once a minute's wait on each (6 gpu-host tests,
    // 7 engine-checks tests timed out) on the rehash lock a killed shell had left behind. The bot's and
    // the sims' own shells say --norc; this covers the tests' helpers.
    env: { MODELSWAP_FROM_SOURCE: "1", SHLVL: "1" },
  },
});
