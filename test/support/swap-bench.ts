import { afterAll, beforeAll } from "vitest";
import { type Bench, type BenchOptions, QUICK_BENCH, startBench } from "../../testbench/bench.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * The bench of a swap test file: started before its tests (quick polling, QUICK_BENCH unless the file
 * says otherwise), stopped after them; `ready` hands the bench and a SwapDriver over. `startBot` runs the
 * bot in this process (tests that kill it use bench.spawnBot() instead).
 */
export function useSwapBench(
  options: BenchOptions & { startBot?: boolean },
  ready: (bench: Bench, swaps: SwapDriver) => void,
): void {
  let bench: Bench | undefined;
  let swaps: SwapDriver | undefined;
  beforeAll(async () => {
    const { startBot, ...benchOptions } = options;
    bench = await startBench({
      ...QUICK_BENCH,
      ...benchOptions,
      swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1, ...benchOptions.swaps },
    });
    if (startBot === true) await bench.startBot();
    swaps = new SwapDriver(bench);
    ready(bench, swaps);
  }, 120_000);
  afterAll(async () => {
    await swaps?.close();
    await bench?.stop();
  });
}
