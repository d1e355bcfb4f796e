import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL, USERS } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * No code from an unapproved source runs on a host before approval (issue #12, item 1). `--engine-ref`
 * took any ref, a pull request's included, and the build fetched it, `pip install -e`'d it and ran its
 * `import sglang` and `--help` as soon as the plan was posted, before anyone decided; it built in place
 * in the engine source the serving unit runs (and `git clean`ed it, deleting untracked files there).
 * Now refs are limited by engine.allowedRefs, each build has a directory of its own that the new unit
 * points at, and a ref outside the list is refused or, where allowed, built only after approval.
 */
let bench: Bench;
let swaps: SwapDriver;

const PR = "refs/pull/7/head";

useSwapBench(
  {
    swaps: { healthTimeoutSeconds: 30 },
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    engineRefs: [{ ref: PR, version: "0.5.7.dev7", message: "Speed up the scheduler (from a fork)" }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    for (const name of ["src-rejected", "src-pr"]) addSimModel(b, name);
  },
);

/** A digest of every file's path and bytes under `dir` (hidden ones included), to prove nothing changed. */
async function treeDigest(dir: string): Promise<string> {
  const sim = bench.host("gpu-1").sim;
  const listing = await sim.exec(
    `cd ${dir} && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum`,
  );
  expect(listing.code).toBe(0);
  return listing.stdout.trim();
}

async function serving(): Promise<{ engine: string; venv: string; unit: string }> {
  const { sim, unit } = bench.host("gpu-1");
  return {
    engine: await treeDigest(sim.engineSourceDir),
    venv: await treeDigest(sim.sitePackagesDir),
    unit: createHash("sha256")
      .update(await readFile(join(sim.unitDir, unit)))
      .digest("hex"),
  };
}

describe("the engine source of a swap", () => {
  it("a pull request named with --engine-ref is refused before anything is queued; nothing is fetched", async () => {
    const callsBefore = (await bench.host("gpu-1").sim.calls()).length;
    const ack = await bench.slack.command(
      USERS.alice,
      `swap sim-org/src-pr --engine-ref ${PR} --host gpu-1`,
      {
        channel: CHANNEL,
      },
    );
    const text = ack.ackResponse?.text ?? "";
    expect(text).toMatch(/^✋ Cannot swap: `--engine-ref refs\/pull\/7\/head` is pull request #7/);
    expect(text).toContain("engine.allowedRefs");
    expect(text).toContain("build-after-approval");
    // nothing queued, the host free, nothing run on it
    expect(await (await swaps.store()).locks.hostHolder("gpu-1")).toBeUndefined();
    expect((await bench.host("gpu-1").sim.calls()).length).toBe(callsBefore);
  }, 60_000);

  it("a ref the upstream does not have is refused in preflight with what is accepted, nothing touched", async () => {
    const card = await swaps.request("sim-org/src-rejected --engine-ref no-such-branch", "gpu-1");
    const final = await swaps.finalLine(card.ts);
    expect(final.text).toMatch(/engine ref no-such-branch is not a branch, tag or commit of file:\/\//);
    expect(final.text).toContain(
      "name any branch and any tag the upstream has (git ls-remote --heads --tags",
    );
    const record = await swaps.record(swaps.swapId(card.ts));
    expect(record?.tasks.build).toBeUndefined();
  }, 60_000);

  it("is built in a directory of its own: a rejected swap leaves the serving engine, the venv and the unit exactly as they were", async () => {
    const { sim } = bench.host("gpu-1");
    // an untracked file in the engine source (a venv .gitignore does not name): `git clean` deleted it
    await sim.exec(
      `mkdir -p ${sim.engineSourceDir}/.venv-local && echo keep > ${sim.engineSourceDir}/.venv-local/marker`,
    );
    const before = await serving();
    const engineBefore = sim.installedEngine();

    const card = await swaps.request("sim-org/src-rejected --engine-ref v0.5.2", "gpu-1");
    const swapId = swaps.swapId(card.ts);
    const plan = await swaps.plan(card.ts);
    // the plan's first lines name the engine source exactly: remote, ref, commit
    const planText = JSON.stringify(plan.blocks);
    const tagCommit = bench.upstream.commits["v0.5.2"]!;
    expect(planText).toContain(
      `*Engine* sglang tag \`v0.5.2\` at \`${tagCommit.slice(0, 7)}\` of ${bench.upstream.url}`,
    );
    const source = `model revision \`main\` · engine: tag v0.5.2 at ${tagCommit.slice(0, 7)} of ${bench.upstream.url}`;
    await until(() => JSON.stringify(swaps.card(card.ts).blocks).includes(source) || undefined, {
      what: "the card naming the engine source",
    });
    await swaps.untilRecord(swapId, (r) => r.stages.build.state === "done" || r.step === "done", {
      what: "the build",
    });
    const record = await swaps.record(swapId);
    expect(record?.reason).toBeUndefined();
    expect(record?.engine).toEqual({ commit: tagCommit, version: "0.5.2" });
    expect(record?.plan?.unitText).toContain(
      `Environment=PYTHONPATH=${record?.plan?.engine?.buildDir}/python`,
    );

    await swaps.reject(card.ts);
    await swaps.outcome(card.ts, /Rejected/);
    expect(await serving()).toEqual(before);
    expect(sim.installedEngine()).toEqual(engineBefore);
    expect((await sim.exec(`cat ${sim.engineSourceDir}/.venv-local/marker`)).stdout).toBe("keep\n");
    // the build is where the plan said, at the commit the plan named
    const built = await sim.exec(`git -C ${record?.plan?.engine?.buildDir} rev-parse HEAD`);
    expect(built.stdout.trim()).toBe(tagCommit);
  }, 120_000);
});
