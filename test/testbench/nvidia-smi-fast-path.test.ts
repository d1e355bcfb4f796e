import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nvidiaSmiFastPath } from "../../testbench/gpu-host/nvidia-smi-fast-path.ts";
import { GPU_SET_NAMES } from "../../testbench/gpu-host/shims/gpu-sets.mjs";
import { registerGpuUsage, writeJsonAtomic } from "../../testbench/gpu-host/shims/sandbox.mjs";
import { shimScriptPath, writeShimWrapper } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { shimAnswer } from "../support/shim-answer.ts";

/**
 * The bench answers preflight's `nvidia-smi --query-gpu=… --format=csv,…` in the shim's shell wrapper
 * (testbench/gpu-host/nvidia-smi-fast-path.ts). It must print what the Node shim prints: both are asked
 * the same questions of every GPU set, idle and under load, and must agree byte for byte and in exit code;
 * the fast answer must not start Node (its wrapper points at a script that does not exist), and every
 * other form must reach Node.
 */
let root: string;
let fast: string;
const live: ChildProcess[] = [];
const DEAD_PID = 4_000_000; // above any pid_max: no such process
const PRODUCT_QUERY =
  "--query-gpu=index,name,uuid,memory.total,memory.used,memory.free,utilization.gpu,temperature.gpu,power.draw,compute_cap,driver_version";
const FORMS = [
  [PRODUCT_QUERY, "--format=csv,noheader,nounits"],
  [PRODUCT_QUERY, "--format=csv"],
  ["--format=csv,nounits", "--query-gpu=gpu_name,count,memory.free,gpu_uuid,power.draw,index"],
  ["--query-gpu=memory.used", "--format=csv,noheader,nounits,noheader"],
];

const answer = (command: string, args: string[]) => shimAnswer(root, command, args);

/** A process that lives until the file's end. */
function liveProcess(): number {
  const child = spawn("sleep", ["600"], { stdio: "ignore" });
  live.push(child);
  return child.pid!;
}

async function useSet(set: string): Promise<void> {
  writeJsonAtomic(join(root, "state", "config.json"), { name: "gpu-1", gpus: set, ownerPid: process.pid });
  await writeShimWrapper(fast, join(root, "no-such-shim.mjs"), root, {}, nvidiaSmiFastPath(root, set));
}

async function clearUsage(): Promise<void> {
  await rm(join(root, "state", "gpu-usage"), { recursive: true, force: true });
  await mkdir(join(root, "state", "gpu-usage"), { recursive: true });
}

const same = async (args: string[]) => {
  const slow = await answer(process.execPath, [shimScriptPath("nvidia-smi"), ...args]);
  const quick = await answer(fast, args);
  expect(quick, args.join(" ")).toEqual(slow);
  expect(quick.code, args.join(" ")).toBe(0);
  return quick.out;
};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "nvidia-smi-fast-path-"));
  await mkdir(join(root, "state"), { recursive: true });
  writeJsonAtomic(join(root, "state", "faults.json"), {});
  fast = join(root, "bin", "nvidia-smi");
  await clearUsage();
});

afterAll(async () => {
  for (const child of live) child.kill();
  await rm(root, { recursive: true, force: true });
});

describe("nvidia-smi --query-gpu answered by the shell", () => {
  it.each(GPU_SET_NAMES)("%s, idle: the same lines as the Node shim, in every format", async (set) => {
    await useSet(set);
    await clearUsage();
    for (const form of FORMS) await same(form);
  });

  it("under load: memory, utilization, temperature and power as the Node shim reports them", async () => {
    await useSet("8x-h200");
    await clearUsage();
    const a = liveProcess();
    const b = liveProcess();
    const c = liveProcess();
    // two processes share GPUs 2 and 3 (their utilization adds up, capped at 100); one fills GPU 7 past
    // its memory; a dead process's entry and a negative size count for nothing
    registerGpuUsage(
      { pid: a, gpus: [2, 3], memMiB: 70_000, util: 60, processName: "sglang::scheduler" },
      root,
    );
    registerGpuUsage({ pid: b, gpus: [3, 5, 3], memMiB: 1000, util: 55, processName: "python3" }, root);
    registerGpuUsage({ pid: c, gpus: [7], memMiB: 200_000, util: 0, processName: "x" }, root);
    registerGpuUsage({ pid: DEAD_PID, gpus: [0, 1], memMiB: 5000, util: 97, processName: "gone" }, root);
    for (const form of FORMS) await same(form);
    for (const util of [1, 13, 33, 50, 67, 97, 100]) {
      registerGpuUsage({ pid: a, gpus: [0, 4], memMiB: -5, util, processName: "python3" }, root);
      const out = await same([PRODUCT_QUERY, "--format=csv,noheader,nounits"]);
      expect(out.split("\n")[4]!.split(", ")[6]).toBe(String(util));
    }
  });

  it("every other GPU set under load", async () => {
    const pid = liveProcess();
    for (const set of GPU_SET_NAMES) {
      await useSet(set);
      await clearUsage();
      registerGpuUsage({ pid, gpus: [0], memMiB: 20_296, util: 97, processName: "python3" }, root);
      await same([PRODUCT_QUERY, "--format=csv,noheader,nounits"]);
    }
  });

  it("records each call where the bench counts calls", async () => {
    await useSet("h200-1gpu");
    await answer(fast, ["--query-gpu=index", "--format=csv"]);
    const last = JSON.parse(
      (await readFile(join(root, "state", "calls.jsonl"), "utf8")).trim().split("\n").at(-1)!,
    );
    expect(last).toMatchObject({ cmd: "nvidia-smi", argv: ["--query-gpu=index", "--format=csv"] });
    expect(Date.now() - Date.parse(last.at)).toBeLessThan(60_000);
  });

  it("leaves every other form, fault and state to the Node shim", async () => {
    const pid = liveProcess();
    const fmt = "--format=csv,noheader";
    const cases: Array<[string, () => Promise<void>, string[]]> = [
      ["-i", async () => {}, [PRODUCT_QUERY, fmt, "-i", "0"]],
      ["another field", async () => {}, ["--query-gpu=index,pstate", fmt]],
      ["an unknown field", async () => {}, ["--query-gpu=bogus.field", fmt]],
      ["an empty field", async () => {}, ["--query-gpu=index,,name", fmt]],
      ["a trailing comma", async () => {}, ["--query-gpu=index", "--format=csv,"]],
      ["a space", async () => {}, ["--query-gpu=index, name", fmt]],
      ["another format", async () => {}, ["--query-gpu=index", "--format=xml"]],
      ["no format", async () => {}, ["--query-gpu=index", "-L"]],
      ["the table", async () => {}, []],
      [
        "an nvidiaSmi fault",
        () => writeFile(join(root, "state", "faults.json"), '{\n  "nvidiaSmi": "no-devices"\n}\n'),
        [PRODUCT_QUERY, fmt],
      ],
      [
        "compact faults.json",
        () => writeFile(join(root, "state", "faults.json"), '{"nvidiaSmi":"driver-error"}'),
        [PRODUCT_QUERY, fmt],
      ],
      [
        "another GPU set in config.json",
        () =>
          writeFile(join(root, "state", "config.json"), `${JSON.stringify({ gpus: "8x-b200" }, null, 2)}\n`),
        [PRODUCT_QUERY, fmt],
      ],
      [
        "memory per GPU as a list",
        async () => registerGpuUsage({ pid, gpus: [0], memMiB: [10], util: 1 }, root),
        [PRODUCT_QUERY, fmt],
      ],
      [
        "a fractional utilization",
        async () => registerGpuUsage({ pid, gpus: [0], memMiB: 10, util: 1.5 }, root),
        [PRODUCT_QUERY, fmt],
      ],
      [
        "a usage file in another layout",
        () => writeFile(join(root, "state", "gpu-usage", `${pid}.json`), '{"gpus":[0],"memMiB":1,"util":0}'),
        [PRODUCT_QUERY, fmt],
      ],
    ];
    for (const [what, arrange, args] of cases) {
      await useSet("h200-1gpu");
      await clearUsage();
      writeJsonAtomic(join(root, "state", "faults.json"), {});
      await arrange();
      const result = await answer(fast, args);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, what).not.toBe(0);
      expect(result.out, what).toBe("");
    }
  });
});
