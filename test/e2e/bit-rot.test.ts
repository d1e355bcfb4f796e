import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A shard that fails its check is fetched again (issue #13): hf skips a file its metadata calls
 * complete, so a shard whose bytes went bad on disk used to fail every retry and every later swap the
 * same way ("fix and swap again (finished files are kept)" could never work). Now the file is removed
 * with its hf metadata, named in the thread, and the next attempt fetches it again.
 */
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    addSimModel(b, "rot");
  },
);

describe("a downloaded shard whose bytes went bad", () => {
  it("is named, removed and fetched again on the next attempt; the swap goes on", async () => {
    const first = await swaps.request("sim-org/rot", "gpu-1");
    const firstId = swaps.swapId(first.ts);
    await swaps.untilRecord(firstId, (r) => r.stages.download.state === "done", {
      what: "the first download",
    });
    await swaps.reject(first.ts);
    await swaps.outcome(first.ts, /Rejected/);
    const modelDir = (await swaps.record(firstId))!.plan!.modelDir;

    // bit rot: same size, one byte changed
    const { sim } = bench.host("gpu-1");
    const shard = (await sim.exec(`cd ${modelDir} && ls *.safetensors | head -1`)).stdout.trim();
    expect(shard).toMatch(/\.safetensors$/);
    // (its mtime kept, as rot leaves it: hf trusts its metadata for a file not modified since, and skips it;
    // huggingface_hub's read_download_metadata)
    const file = `${modelDir}/${shard}`;
    await sim.exec(
      `m=$(stat -c %Y ${file}); printf 'X' | dd of=${file} bs=1 seek=4096 conv=notrunc status=none; touch -d @$m ${file}`,
    );
    const seen = bench.hub.requests().length;

    const again = await swaps.request("sim-org/rot", "gpu-1");
    const id = swaps.swapId(again.ts);
    await swaps.untilRecord(id, (r) => r.stages.download.state === "done" || r.step === "done", {
      what: "the second download",
      timeoutMs: 60_000,
    });
    const record = await swaps.record(id);
    expect(record?.stages.download.state).toBe("done");
    const named = `${shard} failed its sha256 check: removed, it is fetched again`;
    await until(() => swaps.threadText(again.ts).includes(named) || undefined, {
      what: `the thread naming the bad shard (${swaps.threadText(again.ts).slice(0, 400)})`,
    });
    // that shard, and no other weights, was fetched again (resolve reads config.json itself)
    const fetched = bench.hub
      .requests()
      .slice(seen)
      .filter((r) => r.kind === "resolve" && r.method === "GET" && r.file?.endsWith(".safetensors"))
      .map((r) => r.file);
    expect(fetched).toEqual([shard]);
    await swaps.reject(again.ts);
    await swaps.outcome(again.ts, /Rejected/);
  }, 120_000);
});
