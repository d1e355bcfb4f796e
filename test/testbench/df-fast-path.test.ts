import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dfFastPath } from "../../testbench/gpu-host/df-fast-path.ts";
import { shimScriptPath, writeShimWrapper } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { shimAnswer } from "../support/shim-answer.ts";

/**
 * The bench answers `df` in the shim's shell wrapper (testbench/gpu-host/df-fast-path.ts) where the Node
 * shim would only pass it to the real df, or print the simulated free space for the plan's and disk
 * retention's `df -B1 --output=avail <dir>`. Both are asked the same questions under each disk fault and
 * must agree byte for byte; the fast answer must not start Node (its wrapper points at a script that does
 * not exist), and every other form must reach Node.
 */
let root: string;
let fast: string;
let models: string;
const answer = (command: string, args: string[]) => shimAnswer(root, command, args);
const setFaults = (faults: Record<string, unknown>) =>
  writeFile(join(root, "state", "faults.json"), `${JSON.stringify(faults, null, 2)}\n`);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "df-fast-path-"));
  models = join(root, "models");
  await mkdir(join(root, "state"), { recursive: true });
  await mkdir(models, { recursive: true });
  fast = join(root, "bin", "df");
  // the fast path in front of a script that does not exist: only an answer the shell gave itself succeeds
  await writeShimWrapper(fast, join(root, "no-such-shim.mjs"), root, {}, dfFastPath(root));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const same = async (args: string[]) => {
  const slow = await answer(process.execPath, [shimScriptPath("df"), ...args]);
  const quick = await answer(fast, args);
  expect(quick, args.join(" ")).toEqual(slow);
  expect(quick.code, args.join(" ")).toBe(0);
  return quick.out;
};

describe("df answered by the shell", () => {
  it("with no disk fault, prints what the real df prints, for any plain arguments", async () => {
    await setFaults({ nvidiaSmi: "ok" });
    // columns that do not change while other tests write to this disk
    for (const args of [
      ["-B1", "--output=size", models],
      ["--output=source,fstype,target", root],
      ["--output=target", "/"],
    ])
      await same(args);
    // the plan's form: the real free bytes, as df prints them
    expect((await answer(fast, ["-B1", "--output=avail", models])).out).toMatch(/^ *Avail\n *\d+\n$/);
  });

  it("with diskFreeBytes, prints it as df would for the plan's form (the check can fail)", async () => {
    for (const free of [7e12, 5 * 2 ** 30, 0, 123]) {
      await setFaults({ sudoRules: ["/usr/bin/tee x", "y"], diskFreeBytes: free, hfVersion: "1.33.0" });
      const out = await same(["-B1", "--output=avail", models]);
      expect(out.trim().split("\n").at(-1)!.trim()).toBe(String(free));
    }
  });

  it("records each call where the bench counts calls", async () => {
    await setFaults({ diskFreeBytes: 42 });
    await answer(fast, ["-B1", "--output=avail", models]);
    const last = JSON.parse(
      (await readFile(join(root, "state", "calls.jsonl"), "utf8")).trim().split("\n").at(-1)!,
    );
    expect(last).toMatchObject({ cmd: "df", argv: ["-B1", "--output=avail", models] });
  });

  it("leaves every other form to the Node shim", async () => {
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ diskSizeBytes: 1e12 }, ["-B1", "--output=avail", models]],
      [{ diskFreeBytes: 1e12 }, ["-h", models]],
      [{ diskFreeBytes: 1e12 }, ["-B1", "--output=avail", "/"]],
      [{ diskFreeBytes: 1e12 }, ["-B1", "--output=avail", `${models}/../models`]],
      [{ diskFreeBytes: 1e12 }, ["-B1", "--output=avail", join(models, "missing")]],
      [{ diskFreeBytes: 1.5 }, ["-B1", "--output=avail", models]],
      [{}, ["-B1", "--output=avail", `${models} x`]],
    ];
    for (const [faults, args] of cases) {
      await setFaults(faults);
      const result = await answer(fast, args);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, `${JSON.stringify(faults)} ${args.join(" ")}`).not.toBe(0);
    }
  });
});
