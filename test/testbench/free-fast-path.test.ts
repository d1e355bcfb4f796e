import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freeFastPath } from "../../testbench/gpu-host/free-fast-path.ts";
import { registerPinnedMemory, writeJsonAtomic } from "../../testbench/gpu-host/shims/sandbox.mjs";
import { shimScriptPath, writeShimWrapper } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { shimAnswer } from "../support/shim-answer.ts";

/**
 * The bench answers preflight's `free -b` in the shim's shell wrapper (testbench/gpu-host/free-fast-path.ts).
 * With hostMemGiB both read the same meminfo file (MODELSWAP_SIM_MEMINFO: this machine's own figures
 * change between two calls) and the same pinned memory, and must agree byte for byte; without it both run
 * the real free. The fast answer must not start Node (its wrapper points at a script that does not exist),
 * and every other form must reach Node.
 */
let root: string;
let fast: string;
let meminfo: string;
const live: ChildProcess[] = [];
const DEAD_PID = 4_000_000; // above any pid_max: no such process

/** /proc/meminfo of a 2-core machine, as the kernel writes it. */
const MEMINFO = `MemTotal:       24683772 kB
MemFree:        22589100 kB
MemAvailable:   23447032 kB
Buffers:           42116 kB
Cached:          1101644 kB
SwapCached:            0 kB
Active:           732320 kB
Inactive:         853372 kB
Active(anon):     511404 kB
Inactive(anon):        0 kB
Shmem:             70956 kB
KReclaimable:      74396 kB
Slab:             141492 kB
SReclaimable:      74396 kB
SUnreclaim:        67096 kB
SwapTotal:       2097148 kB
SwapFree:        1048572 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
`;

const answer = (command: string, args: string[]) =>
  shimAnswer(root, command, args, { MODELSWAP_SIM_MEMINFO: meminfo });
const setConfig = (extra: Record<string, unknown>) =>
  writeJsonAtomic(join(root, "state", "config.json"), { name: "gpu-1", gpus: "8x-h200", ...extra });

function liveProcess(): number {
  const child = spawn("sleep", ["600"], { stdio: "ignore" });
  live.push(child);
  return child.pid!;
}

async function clearPins(): Promise<void> {
  await rm(join(root, "state", "pinned"), { recursive: true, force: true });
}

const same = async (args: string[]) => {
  const slow = await answer(process.execPath, [shimScriptPath("free"), ...args]);
  const quick = await answer(fast, args);
  expect(quick, args.join(" ")).toEqual(slow);
  expect(quick.code).toBe(0);
  return quick.out;
};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "free-fast-path-"));
  await mkdir(join(root, "state"), { recursive: true });
  meminfo = join(root, "meminfo");
  await writeFile(meminfo, MEMINFO);
  writeJsonAtomic(join(root, "state", "faults.json"), {});
  fast = join(root, "bin", "free");
  // the fast path in front of a script that does not exist: only an answer the shell gave itself succeeds
  await writeShimWrapper(fast, join(root, "no-such-shim.mjs"), root, {}, freeFastPath(root));
});

afterAll(async () => {
  for (const child of live) child.kill();
  await rm(root, { recursive: true, force: true });
});

describe("free -b answered by the shell", () => {
  it("with hostMemGiB: the simulated total and this machine's use, as the Node shim prints them", async () => {
    setConfig({ hostMemGiB: 1024 });
    await clearPins();
    const out = await same(["-b"]);
    expect(out.split("\n")[1]).toMatch(/^Mem: {5}1099511627776 /);
  });

  it("counts the memory live processes pinned, and caps use at the total", async () => {
    setConfig({ hostMemGiB: 1024 });
    await clearPins();
    registerPinnedMemory(5 * 2 ** 30, liveProcess(), root);
    registerPinnedMemory(123_456_789, liveProcess(), root);
    registerPinnedMemory(7 * 2 ** 30, DEAD_PID, root);
    await same(["-b"]);
    setConfig({ hostMemGiB: 6 });
    const out = await same(["-b"]);
    // used is the whole total: nothing free or available
    const [, total, used, free, , , available] = out.split("\n")[1]!.trim().split(/ +/);
    expect([total, used, free, available]).toEqual(["6442450944", "6442450944", "0", "0"]);
  });

  it("reads meminfo as the Node shim does when fields are missing or odd", async () => {
    setConfig({ hostMemGiB: 2 });
    await clearPins();
    for (const text of [
      MEMINFO.replace(/^MemAvailable:.*\n/m, ""),
      "MemTotal: 1000\nMemFree:\t400kB\n  Shmem: 5 kB\nCached: x kB\nBuffers: 123456789012345 kB\n",
      "",
    ]) {
      await writeFile(meminfo, text);
      await same(["-b"]);
    }
    await writeFile(meminfo, MEMINFO);
  });

  it("without hostMemGiB (or 0) runs the real free, as the Node shim does", async () => {
    for (const config of [{}, { hostMemGiB: 0 }]) {
      setConfig(config);
      const slow = await answer(process.execPath, [shimScriptPath("free"), "-b"]);
      const quick = await answer(fast, ["-b"]);
      // this machine's figures move between the two calls: the same layout and total
      const shape = (out: string) => out.split("\n").map((line) => line.split(/ +/).slice(0, 2).join(" "));
      expect(shape(quick.out)).toEqual(shape(slow.out));
      expect(quick.code).toBe(0);
    }
  });

  it("records each call where the bench counts calls", async () => {
    setConfig({ hostMemGiB: 1024 });
    await answer(fast, ["-b"]);
    const last = JSON.parse(
      (await readFile(join(root, "state", "calls.jsonl"), "utf8")).trim().split("\n").at(-1)!,
    );
    expect(last).toMatchObject({ cmd: "free", argv: ["-b"] });
  });

  it("leaves every other form and state to the Node shim", async () => {
    const pid = liveProcess();
    const cases: Array<[string, () => unknown, string[]]> = [
      ["-m", () => setConfig({ hostMemGiB: 1024 }), ["-m"]],
      ["-h", () => setConfig({ hostMemGiB: 1024 }), ["-h"]],
      ["no option", () => setConfig({ hostMemGiB: 1024 }), []],
      ["-b -w", () => setConfig({ hostMemGiB: 1024 }), ["-b", "-w"]],
      ["a fractional hostMemGiB", () => setConfig({ hostMemGiB: 1.5 }), ["-b"]],
      ["a string hostMemGiB", () => setConfig({ hostMemGiB: "12" }), ["-b"]],
      [
        "compact config.json",
        () => writeFile(join(root, "state", "config.json"), '{"hostMemGiB":1024}'),
        ["-b"],
      ],
      [
        "a fractional pin",
        () => {
          setConfig({ hostMemGiB: 1024 });
          registerPinnedMemory(7.63 * 2 ** 30, pid, root);
        },
        ["-b"],
      ],
      [
        "a meminfo figure of 16 digits",
        async () => {
          setConfig({ hostMemGiB: 1024 });
          await writeFile(meminfo, `${MEMINFO}Hardware: 1234567890123456 kB\n`);
        },
        ["-b"],
      ],
      [
        "an unreadable meminfo",
        async () => {
          setConfig({ hostMemGiB: 1024 });
          await rm(meminfo);
        },
        ["-b"],
      ],
    ];
    for (const [what, arrange, args] of cases) {
      await clearPins();
      await arrange();
      const result = await answer(fast, args);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, what).not.toBe(0);
      expect(result.out, what).toBe("");
    }
  });
});
