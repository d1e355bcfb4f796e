import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hfFastPath } from "../../testbench/gpu-host/hf-fast-path.ts";
import { writeJsonAtomic } from "../../testbench/gpu-host/shims/sandbox.mjs";
import { shimScriptPath, writeShimWrapper } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { shimAnswer } from "../support/shim-answer.ts";

/**
 * The bench answers `hf --version` in the shim's shell wrapper (testbench/gpu-host/hf-fast-path.ts). It must
 * print what the Node shim prints, with and without the hfVersion fault; the fast answer must not start
 * Node (its wrapper points at a script that does not exist), and every other form must reach Node.
 */
let root: string;
let fast: string;
const answer = (command: string, args: string[]) => shimAnswer(root, command, args);
const setFaults = (faults: Record<string, unknown>) =>
  writeJsonAtomic(join(root, "state", "faults.json"), faults);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "hf-fast-path-"));
  await mkdir(join(root, "state"), { recursive: true });
  writeJsonAtomic(join(root, "state", "config.json"), { name: "gpu-1", gpus: "h200-1gpu" });
  fast = join(root, "bin", "hf");
  await writeShimWrapper(fast, join(root, "no-such-shim.mjs"), root, {}, hfFastPath(root));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("hf --version answered by the shell", () => {
  it("prints the version as the Node shim does, under each hfVersion fault", async () => {
    for (const faults of [{}, { hfVersion: "0.36.0" }, { hfVersion: "" }, { hfVersion: 2, x: [1] }]) {
      setFaults(faults);
      for (const args of [["--version"], ["-v"]]) {
        const slow = await answer(process.execPath, [shimScriptPath("hf"), ...args]);
        const quick = await answer(fast, args);
        expect(quick, JSON.stringify(faults)).toEqual(slow);
        expect(quick.code).toBe(0);
      }
    }
    setFaults({});
    expect(await answer(fast, ["--version"])).toEqual({ out: "1.33.0\n", code: 0 });
  });

  it("records each call where the bench counts calls", async () => {
    await answer(fast, ["-v"]);
    const last = JSON.parse(
      (await readFile(join(root, "state", "calls.jsonl"), "utf8")).trim().split("\n").at(-1)!,
    );
    expect(last).toMatchObject({ cmd: "hf", argv: ["-v"] });
  });

  it("leaves every other form to the Node shim", async () => {
    const cases: Array<[() => unknown, string[]]> = [
      [() => setFaults({}), ["version"]],
      [() => setFaults({}), ["--version", "x"]],
      [() => setFaults({}), ["download", "x"]],
      [() => setFaults({ hfVersion: 'a"b' }), ["--version"]],
      [() => writeFile(join(root, "state", "faults.json"), '{"hfVersion":"0.1"}'), ["--version"]],
    ];
    for (const [arrange, args] of cases) {
      await arrange();
      const result = await answer(fast, args);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, args.join(" ")).not.toBe(0);
    }
  });
});
