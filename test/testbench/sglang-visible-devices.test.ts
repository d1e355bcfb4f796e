import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../testbench/free-port.ts";
import { createSimGpuHost, type SimGpuHost } from "../../testbench/gpu-host/index.ts";
import { deterministicUuid } from "../../testbench/gpu-host/shims/gpu-sets.mjs";
import { parseVisibleDevices } from "../../testbench/gpu-host/shims/sglang-host.mjs";
import { until } from "../../testbench/until.ts";
import { DENSE_CONFIG } from "../support/sim-engine-process.ts";
import { tempDir } from "../support/tmp.ts";

// The simulated SGLang server honours CUDA_VISIBLE_DEVICES like the CUDA runtime (SGLANG.md,
// "CUDA_VISIBLE_DEVICES"): its ranks count the visible GPUs, its VRAM is accounted on the physical ones.

describe("CUDA_VISIBLE_DEVICES parsing (CUDA runtime rules)", () => {
  const uuids = Array.from({ length: 8 }, (_, i) => deterministicUuid(`8x-h200/${i}`));
  it.each([
    [undefined, [0, 1, 2, 3, 4, 5, 6, 7]],
    ["4,5,6,7", [4, 5, 6, 7]],
    ["5,4", [5, 4]],
    [" 1 , 2", [1, 2]],
    ["9", []],
    ["2,9,3", [2]],
    ["2,x,3", [2]],
    ["", []],
    ["0,0", []],
    [`${uuids[6]},${String(uuids[3]).slice(0, 12)}`, [6, 3]],
    [`${uuids[6]},GPU-nomatch,${uuids[3]}`, [6]],
    ["MIG-0", []],
  ])("%j on 8 GPUs → %j", (spec, expected) => {
    expect(parseVisibleDevices(spec, 8, uuids)).toEqual(expected);
  });
});

describe("simulated SGLang with CUDA_VISIBLE_DEVICES on 8x H200 (systemd units)", () => {
  let root: { path: string; remove: () => Promise<void> };
  let host: SimGpuHost;
  let model: string;
  /** Physical GPU index by UUID, as `nvidia-smi --query-gpu=index,uuid` tells it. */
  const indexOf = new Map<string, number>();

  beforeAll(async () => {
    root = await tempDir("sglang-cvd-");
    host = await createSimGpuHost({ root: root.path, name: "gpu-cvd", gpus: "8x-h200" });
    await host.setFault("sglang", { loadSeconds: 0.2, warmupMs: 50 });
    model = join(host.modelsDir, "Qwen3-4B");
    await mkdir(model, { recursive: true });
    await writeFile(join(model, "config.json"), JSON.stringify(DENSE_CONFIG));
    const gpus = await host.nvidiaSmi("--query-gpu=index,uuid", "--format=csv,noheader");
    for (const line of gpus.stdout.trim().split("\n")) {
      const [index, uuid] = line.split(", ");
      indexOf.set(String(uuid), Number(index));
    }
  });

  afterAll(async () => {
    await host?.stop();
    await root?.remove();
  });

  /** A unit running the simulated server with the given [Service] environment lines and flags. */
  async function installServer(name: string, environment: string[], flags: string[]) {
    const port = await freePort();
    await host.installUnit(
      name,
      [
        "[Unit]",
        `Description=SGLang ${name}`,
        "[Service]",
        ...environment,
        `ExecStart=${host.venvDir}/bin/python -m sglang.launch_server --model-path ${model} --port ${port} ${flags.join(" ")}`,
        "",
      ].join("\n"),
    );
    return port;
  }

  async function waitJournal(name: string, pattern: RegExp) {
    await until(async () => pattern.test(await host.journal(name)), {
      what: `${pattern} in the journal of ${name}`,
      timeoutMs: 15_000,
    }).catch(async (error: Error) => {
      throw new Error(`${error.message}:\n${await host.journal(name)}`);
    });
  }

  /** pid → physical GPUs, from `nvidia-smi --query-compute-apps`. */
  async function computeApps(): Promise<Map<number, number[]>> {
    const apps = await host.nvidiaSmi(
      "--query-compute-apps=pid,gpu_uuid,used_memory",
      "--format=csv,noheader",
    );
    expect(apps.code).toBe(0);
    const byPid = new Map<number, number[]>();
    for (const line of apps.stdout.trim().split("\n").filter(Boolean)) {
      const [pid, uuid] = line.split(", ");
      byPid.set(Number(pid), [...(byPid.get(Number(pid)) ?? []), indexOf.get(String(uuid)) ?? -1]);
    }
    return byPid;
  }

  it("two servers on disjoint visible sets both start; nvidia-smi shows them on their physical GPUs", async () => {
    // systemd.exec(5) forms: a plain assignment, and a quoted one among several words on one line
    await installServer("sglang-a", ["Environment=CUDA_VISIBLE_DEVICES=4,5"], ["--tp-size", "2"]);
    await installServer(
      "sglang-b",
      ['Environment="CUDA_VISIBLE_DEVICES=7,6" SGLANG_TEST=1', "Environment=HF_HUB_OFFLINE=1"],
      ["--tp-size", "2"],
    );
    expect((await host.systemctl("start", "sglang-a")).code).toBe(0);
    expect((await host.systemctl("start", "sglang-b")).code).toBe(0);
    await waitJournal("sglang-a", /The server is fired up and ready to roll!/);
    await waitJournal("sglang-b", /The server is fired up and ready to roll!/);
    const a = (await host.unitState("sglang-a")).mainPid;
    const b = (await host.unitState("sglang-b")).mainPid;
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);

    const apps = await computeApps();
    expect([...apps.keys()].sort()).toEqual([a, b].sort());
    expect(apps.get(a)).toEqual([4, 5]);
    expect(apps.get(b)).toEqual([6, 7]);
    const used = await host.nvidiaSmi("--query-gpu=index,memory.used", "--format=csv,noheader,nounits");
    const usedByGpu = used.stdout
      .trim()
      .split("\n")
      .map((line) => Number(line.split(", ")[1]));
    expect(usedByGpu.slice(0, 4)).toEqual([0, 0, 0, 0]);
    for (const mem of usedByGpu.slice(4)) expect(mem).toBeGreaterThan(100_000);
  });

  it("a server whose visible set overlaps a busy GPU fails SGLang's memory balance check; the busy servers stay up", async () => {
    // logical GPU 1 of this one is physical GPU 5, which sglang-a holds; physical GPU 3 is free
    await installServer("sglang-c", ["Environment=CUDA_VISIBLE_DEVICES=3,5"], ["--tp-size", "2"]);
    expect((await host.systemctl("start", "sglang-c")).code).toBe(0);
    await waitJournal("sglang-c", /sglang-c\.service: Failed with result 'exit-code'\./);
    const journal = await host.journal("sglang-c");
    expect(journal).toMatch(
      /ValueError: The memory capacity is unbalanced\. Some GPUs may be occupied by other processes\. min_per_gpu_memory=[\d.]+, local_gpu_memory=[\d.]+/,
    );
    expect((await host.unitState("sglang-c")).activeState).toBe("failed");
    expect([...(await computeApps()).values()].sort()).toEqual([
      [4, 5],
      [6, 7],
    ]);

    // the same server on free GPUs 3 and 2 starts (the failure was the memory, not the flags)
    await installServer("sglang-d", ["Environment=CUDA_VISIBLE_DEVICES=3,2"], ["--tp-size", "2"]);
    expect((await host.systemctl("start", "sglang-d")).code).toBe(0);
    await waitJournal("sglang-d", /The server is fired up and ready to roll!/);
    const d = (await host.unitState("sglang-d")).mainPid;
    expect((await computeApps()).get(d)).toEqual([2, 3]);
  });

  it("--base-gpu-id and tp count visible GPUs; past them, or with none visible, the server fails", async () => {
    // logical GPU 1 of "1,0" is physical GPU 0
    await installServer("sglang-e", ["Environment=CUDA_VISIBLE_DEVICES=1,0"], ["--base-gpu-id", "1"]);
    expect((await host.systemctl("start", "sglang-e")).code).toBe(0);
    await waitJournal("sglang-e", /The server is fired up and ready to roll!/);
    expect((await computeApps()).get((await host.unitState("sglang-e")).mainPid)).toEqual([0]);

    const python = (env: Record<string, string>, flags: string[]) =>
      new Promise<{ code: number | null; output: string }>((resolveRun, reject) => {
        const child = spawn(
          join(host.venvDir, "bin", "python"),
          ["-m", "sglang.launch_server", "--model-path", model, ...flags],
          { env: { ...host.env(), ...env }, stdio: ["ignore", "pipe", "pipe"] },
        );
        let output = "";
        child.stdout.on("data", (d: Buffer) => {
          output += d.toString();
        });
        child.stderr.on("data", (d: Buffer) => {
          output += d.toString();
        });
        child.on("error", reject);
        child.on("close", (code) => resolveRun({ code, output }));
      });
    // "6,9": the list stops at 9 (no such GPU), so one GPU is visible and tp 2 is past it
    const past = await python({ CUDA_VISIBLE_DEVICES: "6,9" }, [
      "--port",
      String(await freePort()),
      "--tp-size",
      "2",
    ]);
    expect(past.code).toBe(1);
    expect(past.output).toContain("torch.AcceleratorError: CUDA error: invalid device ordinal");
    // three GPUs visible: --base-gpu-id 3 is past them
    const base = await python({ CUDA_VISIBLE_DEVICES: "0,1,4" }, [
      "--port",
      String(await freePort()),
      "--base-gpu-id",
      "3",
    ]);
    expect(base.code).toBe(1);
    expect(base.output).toContain("invalid device ordinal");
    const none = await python({ CUDA_VISIBLE_DEVICES: "" }, ["--port", String(await freePort())]);
    expect(none.code).toBe(1);
    expect(none.output).toContain("RuntimeError: No accelerator (CUDA, XPU, HPU, NPU) is available.");
  });
});
