import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemctlFastPath } from "../../testbench/gpu-host/systemctl-fast-path.ts";
import { shimScriptPath, writeShimWrapper } from "../../testbench/gpu-host/write-shim-wrapper.ts";
import { shimAnswer } from "../support/shim-answer.ts";

/**
 * The bench answers the monitor's `systemctl is-active <unit>` and the probes' `systemctl show` of MainPID,
 * ActiveState and SubState in the shim's shell wrapper
 * (testbench/gpu-host/systemctl-fast-path.ts) so a thousand hosts can be checked on two cores. It must say
 * exactly what the Node shim says: both are asked about the same unit states and must agree, word and
 * exit code; and the fast answer must not start Node at all (its wrapper points at a script that does
 * not exist).
 */
let root: string;
let fast: string;
let live: ChildProcess;
const DEAD_PID = 4_000_000; // above any pid_max: no such process

/** How the product asks `systemctl show` for what the shell answers (UNIT: the case's unit). */
const SHOW_FORMS = [
  ["show", "-p", "MainPID", "--value", "UNIT"],
  ["show", "-p", "ActiveState", "-p", "SubState", "-p", "MainPID", "UNIT"],
  ["show", "UNIT", "--property=SubState,ActiveState"],
  ["show", "--value", "-pSubState", "UNIT", "-p", "MainPID,MainPID"],
];

const answer = (command: string, args: string[]) => shimAnswer(root, command, args);

async function setState(unit: string, fields: Record<string, unknown>): Promise<void> {
  await writeFile(
    join(root, "state", "units", `${unit}.json`),
    `${JSON.stringify(
      {
        unit,
        invocationId: "x",
        supervisorPid: 0,
        activeState: "inactive",
        subState: "dead",
        mainPid: 0,
        ...fields,
      },
      null,
      2,
    )}\n`,
  );
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "fast-path-"));
  await mkdir(join(root, "state", "units"), { recursive: true });
  fast = join(root, "bin", "systemctl");
  // the fast path in front of a script that does not exist: only an answer the shell gave itself succeeds
  await writeShimWrapper(fast, join(root, "no-such-shim.mjs"), root, {}, systemctlFastPath(root));
  live = spawn("sleep", ["600"], { stdio: "ignore" });
});

afterAll(async () => {
  live?.kill();
  await rm(root, { recursive: true, force: true });
});

describe("systemctl is-active answered by the shell", () => {
  const cases: Array<[string, Record<string, unknown> | undefined]> = [
    ["never started (no state file)", undefined],
    ["active, supervisor alive", { activeState: "active", subState: "running", supervisorPid: "LIVE" }],
    [
      "active, supervisor gone, main process alive",
      { activeState: "active", supervisorPid: DEAD_PID, mainPid: "LIVE" },
    ],
    [
      "active, supervisor and main process gone",
      { activeState: "active", supervisorPid: DEAD_PID, mainPid: DEAD_PID },
    ],
    ["activating, supervisor alive", { activeState: "activating", subState: "start", supervisorPid: "LIVE" }],
    ["activating, everything gone", { activeState: "activating", supervisorPid: DEAD_PID }],
    ["failed", { activeState: "failed", subState: "failed", result: "exit-code" }],
    ["deactivating, supervisor alive", { activeState: "deactivating", supervisorPid: "LIVE" }],
  ];
  it.each(cases)("%s: the same word and exit code as the Node shim", async (_what, fields) => {
    const unit = `case-${cases.findIndex(([w]) => w === _what)}.service`;
    if (fields !== undefined) {
      const resolved = Object.fromEntries(
        Object.entries(fields).map(([k, v]) => [k, v === "LIVE" ? live.pid : v]),
      );
      await setState(unit, resolved);
    }
    const slow = await answer(process.execPath, [shimScriptPath("systemctl"), "is-active", unit]);
    const quick = await answer(fast, ["is-active", unit]);
    expect(quick).toEqual(slow);
    expect(["active\n", "inactive\n", "activating\n", "deactivating\n", "failed\n"]).toContain(quick.out);
    // the forms of `systemctl show` the final check and the probes ask, the same bytes and exit code
    for (const form of SHOW_FORMS) {
      const args = form.map((a) => (a === "UNIT" ? unit : a));
      const slowShow = await answer(process.execPath, [shimScriptPath("systemctl"), ...args]);
      const quickShow = await answer(fast, args);
      expect(quickShow, args.join(" ")).toEqual(slowShow);
      expect(quickShow.code).toBe(0);
    }
  });

  it("shows a live unit's main process, and 0 once it is gone (the check can fail)", async () => {
    await setState("shown.service", {
      activeState: "active",
      subState: "running",
      supervisorPid: live.pid,
      mainPid: live.pid,
    });
    expect(
      await answer(fast, ["show", "-p", "ActiveState", "-p", "SubState", "-p", "MainPID", "shown"]),
    ).toEqual({
      out: `MainPID=${live.pid}\nActiveState=active\nSubState=running\n`,
      code: 0,
    });
    await setState("shown.service", { activeState: "active", supervisorPid: DEAD_PID, mainPid: DEAD_PID });
    expect(await answer(fast, ["show", "shown.service", "--property=MainPID,SubState", "--value"])).toEqual({
      out: "0\ndead\n",
      code: 0,
    });
  });

  it("reads a name without .service as the service, as systemctl does", async () => {
    await setState("bare.service", { activeState: "active", supervisorPid: live.pid });
    expect(await answer(fast, ["is-active", "bare"])).toEqual({ out: "active\n", code: 0 });
  });

  it("records each call where the bench counts calls", async () => {
    const before = (await readFile(join(root, "state", "calls.jsonl"), "utf8").catch(() => "")).split(
      "\n",
    ).length;
    await answer(fast, ["is-active", "sglang-x.service"]);
    const lines = (await readFile(join(root, "state", "calls.jsonl"), "utf8")).trim().split("\n");
    expect(lines.length).toBe(before);
    const last = JSON.parse(lines.at(-1)!);
    expect(last).toMatchObject({ cmd: "systemctl", argv: ["is-active", "sglang-x.service"] });
    expect(Date.now() - Date.parse(last.at)).toBeLessThan(60_000);
  });

  it("leaves every other form to the Node shim", async () => {
    for (const args of [
      ["is-active", "--quiet", "a.service"],
      ["is-active", "a.service", "b.service"],
      ["status", "a"],
      ["is-active", "a$(id)"],
      ["show", "a.service"],
      ["show", "-p", "FragmentPath", "a.service"],
      ["show", "-p", "MainPID,LoadState", "a.service"],
      ["show", "-p", "MainPID", "a.service", "b.service"],
      ["show", "-p", "MainPID", "--all", "a.service"],
      ["show", "-p", "MainPID"],
      ["show", "-p", "MainPID", "a=b.service"],
    ]) {
      const result = await answer(fast, args);
      // the wrapper went on to Node, which cannot find the script this wrapper names
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(result.code, args.join(" ")).not.toBe(3);
    }
  });
});
